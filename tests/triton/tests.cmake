# The netrun backend inside tritonserver (tests/triton/test_triton.py): only with -DNETRUN_TRITON=ON. The server
# comes from the nvidia-pytriton wheel that tools/setup-debian.sh --tests installs into .venv; without it, or where
# it cannot start, the test is skipped (exit 77). Under the sanitizers the uninstrumented server preloads the
# ASan runtime for the instrumented backend.
if(NETRUN_TRITON AND Python3_EXECUTABLE AND TARGET triton_netrun)
  set(_tr_args)
  if(NETRUN_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _tr_asan
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _tr_args --env LD_PRELOAD=${_tr_asan}
      --env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:intercept_tls_get_addr=0)
  endif()
  add_test(NAME triton.server COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_triton.py
    --backend-dir $<TARGET_FILE_DIR:triton_netrun> ${_tr_args})
  set_tests_properties(triton.server PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS triton
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
# The backend's C code against a fake Triton (tests/triton/test_triton_backend.c): every path without a server,
# with leak checking under the sanitizers. The model is examples/tiny_cnn.onnx in a repository layout.
if(NETRUN_TRITON AND TARGET triton_netrun)
  add_executable(test_triton_backend ${CMAKE_CURRENT_LIST_DIR}/test_triton_backend.c
    ${CMAKE_SOURCE_DIR}/triton/backend.c ${CMAKE_SOURCE_DIR}/triton/execute.c ${CMAKE_SOURCE_DIR}/triton/cuda_copy.c)
  target_include_directories(test_triton_backend PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/triton)
  target_link_libraries(test_triton_backend PRIVATE netrun PkgConfig::JANSSON Threads::Threads ${CMAKE_DL_LIBS} m)
  set_target_properties(test_triton_backend PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  configure_file(${CMAKE_SOURCE_DIR}/examples/tiny_cnn.onnx ${CMAKE_BINARY_DIR}/triton-test-repo/tiny/1/model.onnx
    COPYONLY)
  add_test(NAME triton.backend_fake_server COMMAND test_triton_backend ${CMAKE_BINARY_DIR}/triton-test-repo)
  set_tests_properties(triton.backend_fake_server PROPERTIES TIMEOUT 120 LABELS triton
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
# tools/bench/triton_client_bench.py in a few requests (every client's output checked; the C client compiled with
# the machine's compiler): keeps the benchmark and tools/bench/kserve_client.py working. Timings mean nothing here.
if(NETRUN_TRITON AND Python3_EXECUTABLE AND TARGET triton_netrun)
  add_test(NAME triton.client_bench_dry COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/bench/triton_client_bench.py
    --build ${CMAKE_BINARY_DIR} --backend-dir $<TARGET_FILE_DIR:triton_netrun> --sizes 16,4096 --requests 5 --rounds 1)
  set_tests_properties(triton.client_bench_dry PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS triton
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
