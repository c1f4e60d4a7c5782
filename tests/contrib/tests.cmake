# The contrib plugin (backends/contrib) and plugin-defined ops (ABI 1.9): per-op comparisons with onnxruntime, an
# onnxruntime-optimized BERT, and the loader's rules for op definitions (test plugins of tests/plugins/tests.cmake).
if(Python3_Interpreter_FOUND AND TARGET netrun-cli)
  add_test(NAME contrib.ops COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_contrib_ops.py
    --netrun $<TARGET_FILE:netrun-cli>)
  add_test(NAME contrib.bert_optimized COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_contrib_bert.py
    --netrun $<TARGET_FILE:netrun-cli>)
  set_tests_properties(contrib.ops contrib.bert_optimized PROPERTIES TIMEOUT 600
    ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")
  add_test(NAME contrib.op_rules COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_plugin_op_rules.py
    --netrun $<TARGET_FILE:netrun-cli> --plugins ${CMAKE_BINARY_DIR}/test-op-plugins
    --backends ${NETRUN_BACKEND_OUTPUT_DIR})
  set_tests_properties(contrib.op_rules PROPERTIES TIMEOUT 300)
endif()
