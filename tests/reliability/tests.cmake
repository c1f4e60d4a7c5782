# Reliability tests (docs/reliability.md): allocation-failure injection, a backend failing on purpose at each
# stage, concurrent sessions, and bad or unusual inputs through the API.
set(NETRUN_FAULTY_PLUGIN_DIR ${CMAKE_BINARY_DIR}/test-plugins-faulty)
add_library(netrun-testplugin-faulty MODULE ${CMAKE_CURRENT_LIST_DIR}/faulty_backend.c)
target_include_directories(netrun-testplugin-faulty PRIVATE ${CMAKE_SOURCE_DIR}/include)
set_target_properties(netrun-testplugin-faulty PROPERTIES PREFIX "lib" OUTPUT_NAME netrun-faulty
  C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${NETRUN_FAULTY_PLUGIN_DIR})

foreach(t fault_alloc faulty_backend concurrency bad_inputs hostile)
  add_executable(test_rel_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
  target_include_directories(test_rel_${t} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(test_rel_${t} PRIVATE NR_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  set_target_properties(test_rel_${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(test_rel_${t} PRIVATE netrun_testable m)
  add_dependencies(test_rel_${t} netrun-cpu)
endforeach()
add_dependencies(test_rel_faulty_backend netrun-testplugin-faulty)
target_include_directories(test_rel_hostile PRIVATE ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/include
  ${CMAKE_SOURCE_DIR}/layers)
target_link_libraries(test_rel_hostile PRIVATE Threads::Threads)

set(_rel_env "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
add_test(NAME reliability.fault_alloc COMMAND test_rel_fault_alloc)
add_test(NAME reliability.concurrency COMMAND test_rel_concurrency)
add_test(NAME reliability.bad_inputs COMMAND test_rel_bad_inputs)
add_test(NAME reliability.hostile COMMAND test_rel_hostile)
set_tests_properties(reliability.fault_alloc reliability.concurrency reliability.bad_inputs reliability.hostile PROPERTIES
  TIMEOUT 900 ENVIRONMENT "${_rel_env}")
foreach(stage none probe init prepare run)
  add_test(NAME reliability.faulty_backend_${stage} COMMAND test_rel_faulty_backend ${stage})
  set_tests_properties(reliability.faulty_backend_${stage} PROPERTIES TIMEOUT 120
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_FAULTY_PLUGIN_DIR}:${NETRUN_BACKEND_OUTPUT_DIR}")
endforeach()
