# Broken backend plugins for the loader's tests, built into their own folder (never the real backends
# folder, so the CLI does not list them) and handed to tests/unit/test_plugin_loader.c.
set(NETRUN_TEST_PLUGIN_DIR ${CMAKE_BINARY_DIR}/test-plugins)
set(NETRUN_TEST_SHADOW_DIR ${CMAKE_BINARY_DIR}/test-plugins-shadow)

set(_test_plugin_targets)
foreach(p abi_mismatch no_entry refuse short_api no_device)
  string(REPLACE "_" "" _pname ${p})
  add_library(netrun-testplugin-${_pname} MODULE ${CMAKE_CURRENT_LIST_DIR}/${p}.c)
  target_include_directories(netrun-testplugin-${_pname} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  set_target_properties(netrun-testplugin-${_pname} PROPERTIES PREFIX "lib" OUTPUT_NAME netrun-${_pname}
    C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${NETRUN_TEST_PLUGIN_DIR})
  list(APPEND _test_plugin_targets netrun-testplugin-${_pname})
endforeach()

# Not a shared library at all: dlopen must fail and the loader must say why, not crash.
file(MAKE_DIRECTORY ${NETRUN_TEST_PLUGIN_DIR})
file(WRITE ${NETRUN_TEST_PLUGIN_DIR}/libnetrun-garbage.so
  "This is not an ELF file. netrun's loader must list it as unavailable with dlopen's message and go on.\n")

# A second copy of the template backend, found after the real one: listed as shadowed.
add_custom_command(OUTPUT ${NETRUN_TEST_SHADOW_DIR}/libnetrun-template.so
  COMMAND ${CMAKE_COMMAND} -E make_directory ${NETRUN_TEST_SHADOW_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:netrun-template> ${NETRUN_TEST_SHADOW_DIR}/libnetrun-template.so
  DEPENDS netrun-template
  COMMENT "copy the template backend for the shadowing test")
add_custom_target(netrun-test-plugins ALL DEPENDS ${NETRUN_TEST_SHADOW_DIR}/libnetrun-template.so
  ${_test_plugin_targets})

if(TARGET test_plugin_loader)
  target_compile_definitions(test_plugin_loader PRIVATE
    NR_TEST_PLUGIN_DIR="${NETRUN_TEST_PLUGIN_DIR}"
    NR_TEST_SHADOW_DIR="${NETRUN_TEST_SHADOW_DIR}"
    NR_TEST_BACKEND_DIR="${NETRUN_BACKEND_OUTPUT_DIR}")
  add_dependencies(test_plugin_loader netrun-test-plugins netrun-cpu netrun-template)
endif()

# A working device backend for machines without a GPU (fake_device.c): tests of the runtime's device paths load
# it by path (tests/memory/test_stream_weights.py), so it lives apart from the loader tests' broken plugins.
add_library(netrun-testplugin-fakedev MODULE ${CMAKE_CURRENT_LIST_DIR}/fake_device.c)
target_include_directories(netrun-testplugin-fakedev PRIVATE ${CMAKE_SOURCE_DIR}/include)
set_target_properties(netrun-testplugin-fakedev PROPERTIES PREFIX "lib" OUTPUT_NAME netrun-fakedev
  C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-device-plugin)

# Plugins that define an op (ABI 1.9), for tests/contrib/test_plugin_op_rules.py: opdefa and opdefb define the same
# op (each in its own folder, and both together), opshadow redefines netrun's Relu, oldabi is a plugin of ABI 1.8,
# opbad's definition has no infer.
foreach(p opdefa opdefb opshadow oldabi opbad)
  add_library(netrun-testplugin-${p} MODULE ${CMAKE_CURRENT_LIST_DIR}/op_plugin.c)
  target_include_directories(netrun-testplugin-${p} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_compile_definitions(netrun-testplugin-${p} PRIVATE PLUGIN_NAME="${p}" $<$<STREQUAL:${p},opshadow>:OP_SHADOW>
    $<$<STREQUAL:${p},oldabi>:OLD_ABI> $<$<STREQUAL:${p},opbad>:OP_BAD>)
  set_target_properties(netrun-testplugin-${p} PROPERTIES PREFIX "lib" OUTPUT_NAME netrun-${p}
    C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test-op-plugins/${p})
endforeach()
