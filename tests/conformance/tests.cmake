# ONNX node-test conformance (docs/conformance.md). conformance.cpu is the CI ratchet: it fails when a test
# listed in expected_cpu.txt stops passing, and lists newly passing tests to add to it.
if(Python3_EXECUTABLE AND TARGET netrun-conformance)
  add_test(NAME conformance.cpu
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_conformance.py
      --tool $<TARGET_FILE:netrun-conformance> --backend cpu --cache ${CMAKE_BINARY_DIR}/onnx-node-tests
      --jobs 2 --timeout 30 --table failing --json ${CMAKE_BINARY_DIR}/conformance_cpu.json
      --expected ${CMAKE_CURRENT_LIST_DIR}/expected_cpu.txt)
  set_tests_properties(conformance.cpu PROPERTIES TIMEOUT 900 LABELS conformance
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
