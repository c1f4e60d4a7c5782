# The runtime's dependency layers (docs/design.md, "Dependency layers"): includes and nr_* calls go downward only,
# nothing below the api layer calls the public session API, every runtime/ file has a layer.
find_program(NETRUN_BASH bash)
if(NETRUN_BASH AND Python3_Interpreter_FOUND)
  add_test(NAME layers.check COMMAND ${NETRUN_BASH} ${CMAKE_SOURCE_DIR}/tools/check-layers.sh --root ${CMAKE_SOURCE_DIR})
  set_tests_properties(layers.check PROPERTIES TIMEOUT 60)
endif()
# ... and it reports violations (an upward include, an upward call, the public API below the api layer) on a copy.
if(NETRUN_BASH AND Python3_Interpreter_FOUND)
  add_test(NAME layers.check_detects COMMAND ${NETRUN_BASH} ${CMAKE_CURRENT_LIST_DIR}/check_detects.sh ${CMAKE_SOURCE_DIR})
  set_tests_properties(layers.check_detects PROPERTIES TIMEOUT 60)
endif()
