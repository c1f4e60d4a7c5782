# ImagePreprocess and the preprocess.* options (tests/preprocess/test_preprocess.py): the CPU kernel against a numpy
# reference of the documented formula and against OpenCV (cv2.resize, cv2.dnn.blobFromImage) where installed.
if(TARGET netrun_python AND Python3_Interpreter_FOUND)
  add_test(NAME preprocess.op COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider -rs
    ${CMAKE_CURRENT_LIST_DIR}/test_preprocess.py)
  set_tests_properties(preprocess.op PROPERTIES TIMEOUT 300 LABELS python SKIP_RETURN_CODE 77
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;${NETRUN_PY_TEST_ENV}")
endif()
# The pipeline benchmark's host parts (tools/bench/pipeline_bench.py --device cpu on a tiny model): that it runs to
# the end here, so that the GPU run does not stop on a Python error; no timing is checked.
if(TARGET netrun_python AND Python3_Interpreter_FOUND)
  add_test(NAME preprocess.pipeline_bench_dry COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/bench/pipeline_bench.py
    --build ${CMAKE_BINARY_DIR} --device cpu --models tiny --frame 90x130 --batches 1,2 --iters 2 --warmup 1)
  set_tests_properties(preprocess.pipeline_bench_dry PROPERTIES TIMEOUT 120 LABELS python
    ENVIRONMENT "${NETRUN_PY_TEST_ENV}")
endif()
