# Memory plan (runtime/prepare.c): in-place outputs and Concat/Reshape views against memory.inplace=0 and
# onnxruntime, through the ctypes binding of tools/bench.
netrun_binding_test(memory.inplace ${CMAKE_CURRENT_LIST_DIR}/test_inplace.py)
