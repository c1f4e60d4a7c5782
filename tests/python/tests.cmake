# The Python package (docs/python.md): pytest against the build tree's package (build/python: the extension
# netrun._native beside the package's files), one ctest per file; and python.pip_wheel, which builds the wheel
# from the source tree with pip (CUDA and OpenCL plugins off to keep it short), installs it into a new virtual
# environment and runs it there.
if(TARGET netrun_python AND Python3_Interpreter_FOUND)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pytest" RESULT_VARIABLE _nr_no_pytest OUTPUT_QUIET ERROR_QUIET)
  set(_nr_py_env "PYTHONPATH=${CMAKE_BINARY_DIR}/python" "NETRUN_TEST_MODELS=${CMAKE_BINARY_DIR}/test-models"
    ${NETRUN_PY_TEST_ENV})
  foreach(t api errors threads memory cli models cuda device_io)
    if(_nr_no_pytest)
      add_test(NAME python.${t} COMMAND sh -c "echo 'SKIP: pytest not installed (tests/requirements.txt)'; exit 77")
    else()
      add_test(NAME python.${t} COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -rs
        ${CMAKE_CURRENT_LIST_DIR}/test_${t}.py)
    endif()
    set_tests_properties(python.${t} PROPERTIES TIMEOUT 300 ENVIRONMENT "${_nr_py_env}" LABELS python
      SKIP_RETURN_CODE 77)
  endforeach()
  if(TARGET netrun-testplugin-fakedev)  # the fake device that serves "CUDA memory" on machines without one
    set_tests_properties(python.device_io PROPERTIES ENVIRONMENT
      "${_nr_py_env};NETRUN_TEST_FAKEDEV=$<TARGET_FILE:netrun-testplugin-fakedev>")
  endif()
  if(TEST models.build)
    set_tests_properties(python.models PROPERTIES FIXTURES_REQUIRED netrun_test_models)
  endif()

  # A sanitizer build is for the test suite, not for shipping (as packaging.install says).
  set(_nr_wheel_skip "")
  if(NETRUN_SANITIZE)
    set(_nr_wheel_skip "sanitizer build (NETRUN_SANITIZE=ON): the wheel is tested in the regular build")
  endif()
  add_test(NAME python.pip_wheel COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pip_wheel.sh --python ${Python3_EXECUTABLE}
    --source ${CMAKE_SOURCE_DIR} --version ${PROJECT_VERSION} --skip "${_nr_wheel_skip}")
  set_tests_properties(python.pip_wheel PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77 LABELS "python;packaging")
endif()
