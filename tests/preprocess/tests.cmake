# ImagePreprocess and the preprocess.* options (tests/preprocess/test_preprocess.py): the CPU kernel against a numpy
# reference of the documented formula and against OpenCV (cv2.resize, cv2.dnn.blobFromImage) where installed.
if(TARGET netrun_python AND Python3_Interpreter_FOUND)
  add_test(NAME preprocess.op COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -rs
    ${CMAKE_CURRENT_LIST_DIR}/test_preprocess.py)
  set_tests_properties(preprocess.op PROPERTIES TIMEOUT 300 LABELS python SKIP_RETURN_CODE 77
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
endif()
