# Extreme values (+-0, subnormals, FLT_MAX, +-inf, NaN, INT_MIN/MAX, int64 slice bounds) through every
# elementwise, reduction, softmax and index op, against onnx.reference and onnxruntime (tests/numerics/
# sweep_extremes.py; docs/reliability.md). One ctest per backend; a backend that is not available skips (77).
if(Python3_Interpreter_FOUND AND TARGET netrun-cli)
  set(_num_env "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}" "NETRUN_CACHE_DIR=${CMAKE_BINARY_DIR}/netrun-cache")
  foreach(be cpu opencl cuda)
    add_test(NAME numerics.extremes_${be} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/sweep_extremes.py
      --netrun $<TARGET_FILE:netrun-cli> --backend ${be})
    set_tests_properties(numerics.extremes_${be} PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77 ENVIRONMENT "${_num_env}")
  endforeach()
  set_tests_properties(numerics.extremes_opencl PROPERTIES LABELS opencl)
  set_tests_properties(numerics.extremes_cuda PROPERTIES LABELS cuda)
endif()
