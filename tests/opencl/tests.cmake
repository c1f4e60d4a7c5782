# OpenCL backend tests (docs/opencl.md). Without an OpenCL device they skip (exit 77) or only check that the
# backend reports why it is unavailable. Program binaries are cached in the build tree (NETRUN_CACHE_DIR), so
# a second ctest run skips the OpenCL compiler.
if(TARGET netrun-opencl AND TARGET netrun-cli AND Python3_Interpreter_FOUND)
  set(_ocl_env "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}" "NETRUN_CACHE_DIR=${CMAKE_BINARY_DIR}/netrun-cache")
  set(_ocl_guard ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_if_available.py --netrun $<TARGET_FILE:netrun-cli> --)

  # no driver visible (an empty ICD folder): opencl is listed unavailable with a reason, default runs still work
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tests/empty-icd)
  add_test(NAME opencl.unavailable
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_unavailable.py --netrun $<TARGET_FILE:netrun-cli>
      --model ${CMAKE_SOURCE_DIR}/examples/tiny_cnn.onnx)
  set_tests_properties(opencl.unavailable PROPERTIES TIMEOUT 120 LABELS opencl
    ENVIRONMENT "${_ocl_env};OCL_ICD_VENDORS=${CMAKE_BINARY_DIR}/tests/empty-icd;OCL_ICD_FILENAMES=")

  # op test cases (tests/ops/cases_*.py) on opencl --strict vs cpu; strict refusals are skipped. All 1,900 cases
  # take ~25 min on 2 cores: CI runs the gemm/conv/pool/softmax/norm families in full and every 10th case of the
  # families with OpenCL kernels (compare_backends.py without --sample/--family runs everything).
  add_test(NAME opencl.compare
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/ops/compare_backends.py --netrun $<TARGET_FILE:netrun-cli>
      --backend opencl --jobs 2 --min-passed 100
      --family gemm,conv,pool,softmax,norm,elementwise,data_movement,reduce,shape_ops,resize,index_ops
      --sample 10 --full gemm,conv,pool,softmax,norm)
  set_tests_properties(opencl.compare PROPERTIES TIMEOUT 1200 LABELS opencl ENVIRONMENT "${_ocl_env}")

  # ONNX node tests, ratchet on NATIVE passes (all nodes on opencl): fails when a test of expected_opencl.txt
  # stops passing natively or fewer than 800 do (tests/opencl/native_ratchet.py)
  if(TARGET netrun-conformance)
    add_test(NAME conformance.opencl
      COMMAND ${_ocl_guard} ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/native_ratchet.py
        --tool $<TARGET_FILE:netrun-conformance> --backend opencl --min 800
        --expected ${CMAKE_SOURCE_DIR}/tests/conformance/expected_opencl.txt
        --json ${CMAKE_BINARY_DIR}/conformance_opencl.json
        -- --cache ${CMAKE_BINARY_DIR}/onnx-node-tests --jobs 2 --timeout 60 --table none)
    set_tests_properties(conformance.opencl PROPERTIES TIMEOUT 1200 LABELS "conformance;opencl"
      SKIP_RETURN_CODE 77 ENVIRONMENT "${_ocl_env}")
  endif()

  # program binary cache (second start loads every program from it) and Conv paths under the workspace policy
  add_test(NAME opencl.cache_paths
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_cache_paths.py --netrun $<TARGET_FILE:netrun-cli>
      --model ${CMAKE_SOURCE_DIR}/examples/tiny_cnn.onnx)
  set_tests_properties(opencl.cache_paths PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS opencl
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")

  # 8 threads, a session each on one shared model, 1,000 runs each: bit-identical to one thread, RSS flat
  # (tests/reliability/test_concurrency.c; exit 77 without a device)
  # (the target comes from tests/reliability/tests.cmake, read after this file: a generator expression)
  add_test(NAME opencl.concurrency COMMAND $<TARGET_FILE:test_rel_concurrency> --backend opencl)
  set_tests_properties(opencl.concurrency PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS opencl
    ENVIRONMENT "${_ocl_env}")

  # end-to-end models on opencl with cpu fallback (the models fixture of tests/models)
  if(DEFINED NETRUN_TEST_MODELS_DIR)
    foreach(m resnet_class mobilenet_class bert_class example_tiny_cnn)
      add_test(NAME opencl.models.${m}
        COMMAND ${_ocl_guard} ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/models/run_model_tests.py
          --netrun $<TARGET_FILE:netrun-cli> --models ${NETRUN_TEST_MODELS_DIR} --filter ${m} --backend opencl,cpu)
      set_tests_properties(opencl.models.${m} PROPERTIES FIXTURES_REQUIRED netrun_test_models TIMEOUT 600
        SKIP_RETURN_CODE 77 LABELS opencl ENVIRONMENT "${_ocl_env}")
    endforeach()
  endif()
endif()

# the graph passes' fused models (tests/passes) with the nodes on opencl: outputs against onnxruntime, passes on
# and off (fused activations such as Swish run in the OpenCL conv/gemm epilogue)
if(TARGET netrun-opencl AND TARGET netrun AND Python3_Interpreter_FOUND)
  add_test(NAME passes.fusions_opencl
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_if_available.py --netrun $<TARGET_FILE:netrun-cli> --
      ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/passes/test_passes.py --lib $<TARGET_FILE:netrun>
      --backend opencl,cpu)
  # Python loads libnetrun: the binding tests' environment (tests/CMakeLists.txt) plus the OpenCL program cache
  set(_fo_env ${NETRUN_PY_TEST_ENV} "NETRUN_CACHE_DIR=${CMAKE_BINARY_DIR}/netrun-cache")
  set_tests_properties(passes.fusions_opencl PROPERTIES TIMEOUT 300 LABELS opencl SKIP_RETURN_CODE 77
    ENVIRONMENT "${_fo_env}")
endif()
