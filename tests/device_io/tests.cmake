# Device memory inputs/outputs, the caller's stream and asynchronous runs (runtime/device_io.c) on the fake device
# backend of tests/plugins, which stands in for CUDA memory: in-place reads and writes, copies counted as host <->
# device bytes, pointer changes under captured graphs, misuse errors, the 0.7 stats layout kept.
netrun_binding_test(device_io.runtime ${CMAKE_CURRENT_LIST_DIR}/test_device_io.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
