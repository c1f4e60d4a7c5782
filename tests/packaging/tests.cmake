# Packaging tests (docs/writing-a-backend.md, examples/): the ABI and API-doc checks, an install to a temporary
# prefix with the examples built against it (find_package and pkg-config), and the Debian package. None of them
# rebuilds netrun: they install or package the tree already built. A test that lacks a tool exits 77 (skip).
set(_pk ${CMAKE_CURRENT_LIST_DIR})

add_test(NAME packaging.abi COMMAND bash ${CMAKE_SOURCE_DIR}/tools/check-abi.sh --lib $<TARGET_FILE:netrun>)
add_test(NAME packaging.abi_selftest COMMAND bash ${_pk}/check_abi_selftest.sh $<TARGET_FILE:netrun>)
# Every plugin built here exports netrun_backend_entry only, libnetrun netrun_* only, and none carries a static
# C++ runtime (tools/check-exports.sh); the selftest shows the check fails on the toolchain default that broke cuDNN.
set(_pk_plugins cpu template)
foreach(p cuda opencl)
  if(TARGET netrun-${p})
    list(APPEND _pk_plugins ${p})
  endif()
endforeach()
set(_pk_plugin_files)
foreach(p ${_pk_plugins})
  list(APPEND _pk_plugin_files $<TARGET_FILE:netrun-${p}>)
endforeach()
add_test(NAME packaging.exports COMMAND bash ${CMAKE_SOURCE_DIR}/tools/check-exports.sh --lib $<TARGET_FILE:netrun>
  ${_pk_plugin_files})
add_test(NAME packaging.exports_selftest COMMAND bash ${_pk}/check_exports_selftest.sh)
if(Python3_Interpreter_FOUND)
  add_test(NAME packaging.api_doc COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/gen-api-doc.py --check)
else()
  add_test(NAME packaging.api_doc COMMAND ${CMAKE_COMMAND} -E echo "SKIP: no Python 3 interpreter found")
endif()

# Sanitizer builds are for the test suite, not for shipping: programs built against an instrumented libnetrun
# would need the sanitizer runtimes too. The scripts say so and skip.
if(NETRUN_SANITIZE)
  set(_pk_skip "sanitizer build (NETRUN_SANITIZE=ON): packaging is tested in the regular build")
else()
  set(_pk_skip "")
endif()
add_test(NAME packaging.install COMMAND bash ${_pk}/install_and_build.sh
  --build ${CMAKE_BINARY_DIR} --source ${CMAKE_SOURCE_DIR} --cmake ${CMAKE_COMMAND} --cc ${CMAKE_C_COMPILER}
  --generator "${CMAKE_GENERATOR}" --version ${PROJECT_VERSION} --libdir ${CMAKE_INSTALL_LIBDIR} --skip "${_pk_skip}")
add_test(NAME packaging.deb COMMAND bash ${_pk}/deb.sh
  --build ${CMAKE_BINARY_DIR} --source ${CMAKE_SOURCE_DIR} --cpack ${CMAKE_CPACK_COMMAND}
  --version ${PROJECT_VERSION} --libdir ${CMAKE_INSTALL_LIBDIR} --skip "${_pk_skip}")

set_tests_properties(packaging.abi packaging.abi_selftest packaging.exports packaging.exports_selftest packaging.api_doc
  packaging.install packaging.deb
  PROPERTIES SKIP_RETURN_CODE 77 LABELS packaging TIMEOUT 300)
# Both read the whole build tree; cpack may also run the (up-to-date) build: keep them apart.
set_tests_properties(packaging.install packaging.deb PROPERTIES RESOURCE_LOCK netrun_build_tree)
