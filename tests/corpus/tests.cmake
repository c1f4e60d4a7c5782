# Hostile-model corpus (tests/corpus/models, written by make_corpus.py): netrun must refuse each file
# with exit 1 or 2 and a message, never crash or hang; a subset again under valgrind memcheck.
if(Python3_EXECUTABLE AND TARGET netrun-cli)
  add_test(NAME corpus.hostile_models COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_corpus.py
    --netrun $<TARGET_FILE:netrun-cli> --timeout 20)
  set_tests_properties(corpus.hostile_models PROPERTIES TIMEOUT 900
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  find_program(NETRUN_VALGRIND valgrind)
  if(NETRUN_VALGRIND AND NOT NETRUN_SANITIZE) # memcheck cannot run ASan binaries
    add_test(NAME corpus.valgrind COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_corpus.py
      --netrun $<TARGET_FILE:netrun-cli> --timeout 20 --valgrind --subset 10)
    set_tests_properties(corpus.valgrind PROPERTIES TIMEOUT 1500 SKIP_RETURN_CODE 77
      ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  endif()
endif()
