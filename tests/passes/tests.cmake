# Graph passes (runtime/optimize.c): fused models against onnxruntime with the passes on and off, through the
# ctypes binding of tools/bench.
netrun_binding_test(passes.fusions ${CMAKE_CURRENT_LIST_DIR}/test_passes.py)
netrun_binding_test(passes.act_extremes ${CMAKE_CURRENT_LIST_DIR}/test_act_extremes.py)
# the CUDA float16 NHWC region pass: CPU reference kernels of its internal ops always; the regions on a GPU
netrun_binding_test(passes.fp16_regions ${CMAKE_CURRENT_LIST_DIR}/test_fp16_regions.py)
# the transformer fusions: exporter-shaped BERT / GPT-2 / ViT and attention / norm / Gelu variants that must not fuse
netrun_binding_test(passes.transformer ${CMAKE_CURRENT_LIST_DIR}/test_transformer.py)
# the plain float16 region planner (runtime/opt_half.c) on the fake device backend, which declares the region
netrun_binding_test(passes.fp16_plain ${CMAKE_CURRENT_LIST_DIR}/test_fp16_plain.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
# the residual Add of transformer blocks as MatMulBias's 4th input, on the CPU and on the fake device backend
netrun_binding_test(passes.residual ${CMAKE_CURRENT_LIST_DIR}/test_residual.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
