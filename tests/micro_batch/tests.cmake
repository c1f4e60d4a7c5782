# Micro-batching (runtime/micro_batch.c): a batch run as several runs of a plan for fewer images gives the same
# outputs as one run (and as onnxruntime), io keeps the whole batch, and models that mix images are refused.
netrun_binding_test(runtime.micro_batch ${CMAKE_CURRENT_LIST_DIR}/test_micro_batch.py)
