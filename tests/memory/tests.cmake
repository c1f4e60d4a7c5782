# Memory plan (runtime/prepare.c): in-place outputs and Concat/Reshape views against memory.inplace=0 and
# onnxruntime, through the ctypes binding of tools/bench.
netrun_binding_test(memory.inplace ${CMAKE_CURRENT_LIST_DIR}/test_inplace.py)
# Streamed weights (prepare.c, plan_weights) on the fake device backend of tests/plugins: same outputs as
# resident weights, in device graphs too, less device memory, and the out-of-memory degrade that ends in them.
netrun_binding_test(memory.stream_weights ${CMAKE_CURRENT_LIST_DIR}/test_stream_weights.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
# Loading a model with inline weights holds them once (the file is mapped and dropped as tensors are copied out).
netrun_binding_test(memory.load_rss ${CMAKE_CURRENT_LIST_DIR}/test_load_rss.py)
