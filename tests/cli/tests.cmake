# CLI tests: one ctest per scenario of test_cli.py (tiny ONNX models built with onnx.helper).
set(NETRUN_CLI_SCENARIOS help_version bad_option missing_model malformed_model output_dir outputs_on_device input_pb check json
    json_escaping shape random_inputs backends strict_unknown verbose_placement fallback_listed unavailable_backend crash_report
    profile profile_json profile_control_flow support_matrix explain dot image device_preprocess compare duration_batch load_limits progress_quiet option_keys report_summary metadata)
if(Python3_EXECUTABLE AND TARGET netrun-cli)
  foreach(s ${NETRUN_CLI_SCENARIOS})
    add_test(NAME cli.${s} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py
      --netrun $<TARGET_FILE:netrun-cli> --only ${s} --test-plugins ${CMAKE_BINARY_DIR}/test-plugins
      --fakedev ${CMAKE_BINARY_DIR}/test-device-plugin)
    set_tests_properties(cli.${s} PROPERTIES TIMEOUT 300
      ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  endforeach()
endif()
