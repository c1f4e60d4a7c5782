# CUDA backend tests. cuda.compare: without a CUDA device (CI) it checks that `netrun --backends` lists cuda as
# unavailable with a reason; with one it runs every op test case on cuda (strict) and on cpu and compares.
# The full GPU run (conformance, models) is tools/gpu/run-gpu-tests.sh.
if(TARGET netrun-cuda AND TARGET netrun-cli AND Python3_Interpreter_FOUND)
  add_test(NAME cuda.compare
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compare_backends.py
      --netrun $<TARGET_FILE:netrun-cli>)
  set_tests_properties(cuda.compare PROPERTIES TIMEOUT 1800 LABELS cuda
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
