# Memory plan (runtime/prepare.c): in-place outputs and Concat/Reshape views against memory.inplace=0 and
# onnxruntime, through the ctypes binding of tools/bench. Under the sanitizers, Python loads libnetrun with the
# ASan runtime preloaded (as passes.fusions).
if(Python3_Interpreter_FOUND AND TARGET netrun)
  add_test(NAME memory.inplace
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_inplace.py --lib $<TARGET_FILE:netrun>)
  set(_memory_env "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  if(NETRUN_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _asan_lib
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _memory_env "LD_PRELOAD=${_asan_lib}" "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set_tests_properties(memory.inplace PROPERTIES TIMEOUT 300 ENVIRONMENT "${_memory_env}")
endif()
