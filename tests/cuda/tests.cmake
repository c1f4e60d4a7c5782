# CUDA backend tests. cuda.compare: without a CUDA device (CI) it checks that `netrun --backends` lists cuda as
# unavailable with a reason; with one it runs every op test case on cuda (strict) and on cpu and compares.
# The full GPU run (conformance, models) is tools/gpu/run-gpu-tests.sh.
if(TARGET netrun-cuda AND TARGET netrun-cli AND Python3_Interpreter_FOUND)
  add_test(NAME cuda.compare
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/ops/compare_backends.py
      --netrun $<TARGET_FILE:netrun-cli> --backend cuda)
  set_tests_properties(cuda.compare PROPERTIES TIMEOUT 1800 LABELS cuda
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()

# CUDA runtime features (graphs, device memory budget, injected allocation failures) and 8 threads with a CUDA
# session each (tests/reliability/test_concurrency.c --backend cuda). Both exit 77 (skipped) without a device.
if(TARGET netrun-cuda)
  add_executable(test_cuda_runtime ${CMAKE_CURRENT_LIST_DIR}/test_cuda_runtime.c)
  target_include_directories(test_cuda_runtime PRIVATE ${CMAKE_SOURCE_DIR}/include)
  set_target_properties(test_cuda_runtime PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(test_cuda_runtime PRIVATE netrun_testable m)
  add_dependencies(test_cuda_runtime netrun-cuda netrun-cpu)
  set(_cuda_models ${CMAKE_BINARY_DIR}/tests/cuda-models)
  if(Python3_Interpreter_FOUND)
    add_test(NAME cuda.models COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/make_models.py ${_cuda_models})
    set_tests_properties(cuda.models PROPERTIES FIXTURES_SETUP cuda_models LABELS cuda)
    add_test(NAME cuda.runtime COMMAND test_cuda_runtime ${CMAKE_SOURCE_DIR}/examples/tiny_cnn.onnx
      ${_cuda_models}/dyn_gather.onnx)
    set_tests_properties(cuda.runtime PROPERTIES FIXTURES_REQUIRED cuda_models SKIP_RETURN_CODE 77 TIMEOUT 600
      LABELS cuda ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  endif()
  add_test(NAME cuda.concurrency COMMAND $<TARGET_FILE:test_rel_concurrency> --backend cuda)
  set_tests_properties(cuda.concurrency PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS cuda
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
