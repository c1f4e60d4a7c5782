# The facts the docs state (version, ONNX version and opset, node-test and op counts, the support matrix) come from
# the tree and this build: docs.generated fails when a doc says something else (tools/gen-docs.py rewrites them).
if(Python3_EXECUTABLE AND TARGET netrun-cli)
  add_test(NAME docs.generated COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/gen-docs.py --check
    --netrun $<TARGET_FILE:netrun-cli>)
  set_tests_properties(docs.generated PROPERTIES TIMEOUT 120
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
