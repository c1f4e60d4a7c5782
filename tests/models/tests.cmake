# End-to-end model tests: build_models.py writes the models, inputs and onnxruntime references once
# (fixture setup), then every model is run through the netrun CLI and compared (one ctest per model).
if(Python3_Interpreter_FOUND AND TARGET netrun-cli)
  set(NETRUN_TEST_MODELS_DIR ${CMAKE_BINARY_DIR}/test-models)
  add_test(NAME models.build
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/build_models.py ${NETRUN_TEST_MODELS_DIR})
  set_tests_properties(models.build PROPERTIES FIXTURES_SETUP netrun_test_models TIMEOUT 600)
  # Keep in sync with MODELS in build_models.py.
  foreach(m resnet_class mobilenet_class bert_class lstm_tagger unet_small superres gpt_causal yolo_tiny
      superres_init_inputs example_tiny_cnn det_ssd_if det_yolo_nms det_face det_two_stage)
    add_test(NAME models.${m}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_model_tests.py
        --netrun $<TARGET_FILE:netrun-cli> --models ${NETRUN_TEST_MODELS_DIR} --filter ${m} --backend cpu)
    set_tests_properties(models.${m} PROPERTIES FIXTURES_REQUIRED netrun_test_models TIMEOUT 600
      ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  endforeach()
  # One session fed images whose kept box counts differ: outputs right, and no prepare after the first round
  # (control-flow bodies left with run-time dims instead of prepared per run).
  if(TARGET netrun)
    add_test(NAME models.det_prepares
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_prepares.py --lib $<TARGET_FILE:netrun>
        --models ${NETRUN_TEST_MODELS_DIR} --filter det_ --backend cpu)
    set_tests_properties(models.det_prepares PROPERTIES FIXTURES_REQUIRED netrun_test_models TIMEOUT 600
      ENVIRONMENT "${NETRUN_PY_TEST_ENV}")
  endif()
endif()
