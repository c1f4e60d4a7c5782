# Graph passes (runtime/optimize.c): fused models against onnxruntime with the passes on and off, through the
# ctypes binding of tools/bench. Under the sanitizers, Python loads libnetrun with the ASan runtime preloaded.
if(Python3_Interpreter_FOUND AND TARGET netrun)
  add_test(NAME passes.fusions
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_passes.py --lib $<TARGET_FILE:netrun>)
  set(_passes_env "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  if(NETRUN_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _asan_lib
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _passes_env "LD_PRELOAD=${_asan_lib}" "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set_tests_properties(passes.fusions PROPERTIES TIMEOUT 300 ENVIRONMENT "${_passes_env}")
  add_test(NAME passes.act_extremes
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_act_extremes.py --lib $<TARGET_FILE:netrun>)
  set_tests_properties(passes.act_extremes PROPERTIES TIMEOUT 300 ENVIRONMENT "${_passes_env}")
  # the CUDA float16 NHWC region pass: CPU reference kernels of its internal ops always; the regions on a GPU
  add_test(NAME passes.fp16_regions
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_fp16_regions.py --lib $<TARGET_FILE:netrun>)
  set_tests_properties(passes.fp16_regions PROPERTIES TIMEOUT 300 ENVIRONMENT "${_passes_env}")
endif()
