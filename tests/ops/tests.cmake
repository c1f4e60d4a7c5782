# Op tests: every cases_<family>.py becomes one ctest comparing the CPU backend with onnxruntime.
file(GLOB OP_CASE_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cases_*.py)
foreach(f ${OP_CASE_FILES})
  get_filename_component(n ${f} NAME_WE)
  string(SUBSTRING ${n} 6 -1 fam)
  add_test(NAME ops.${fam} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_op_tests.py
    --netrun $<TARGET_FILE:netrun-cli> --family ${fam})
  set_tests_properties(ops.${fam} PROPERTIES TIMEOUT 900
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endforeach()
