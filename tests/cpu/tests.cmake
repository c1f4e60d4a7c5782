# The CPU plugin's internals tested on their own (compiled from the plugin's sources, not through dlopen).
add_executable(test_cpu_threadpool ${CMAKE_CURRENT_LIST_DIR}/test_threadpool.c ${CMAKE_SOURCE_DIR}/backends/cpu/threadpool.c)
target_include_directories(test_cpu_threadpool PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/backends/cpu)
target_link_libraries(test_cpu_threadpool PRIVATE Threads::Threads)
set_target_properties(test_cpu_threadpool PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME unit.cpu_threadpool COMMAND test_cpu_threadpool)
set_tests_properties(unit.cpu_threadpool PROPERTIES TIMEOUT 120)
# cpu.winograd against onnxruntime, on and off; the CPU's own nChw16c / AVX-512 kernels against onnxruntime,
# their fast paths on and off (Python binding)
netrun_binding_test(cpu.winograd ${CMAKE_CURRENT_LIST_DIR}/test_winograd.py)
netrun_binding_test(cpu.blocked_kernels ${CMAKE_CURRENT_LIST_DIR}/test_blocked_kernels.py)
# QDQ models (onnxruntime's quantize_static) against onnxruntime: the QDQ pass's QLinearConv / QLinearMatMul,
# the oneDNN int8 kernels, the NHWC int8 chain, per tensor / per channel, uint8 / int8 activations
netrun_binding_test(cpu.int8_qdq ${CMAKE_CURRENT_LIST_DIR}/test_int8_qdq.py)
# which 3x3 convs take oneDNN's Winograd (conv_dnnl.c's rule on channel counts), outputs against onnxruntime
netrun_binding_test(cpu.conv_algo ${CMAKE_CURRENT_LIST_DIR}/test_conv_algo.py)
# the vectorizable tanhf / erff of cpu_internal.h against libm's double tanh / erf, in ulps
add_executable(test_cpu_fast_math ${CMAKE_CURRENT_LIST_DIR}/test_fast_math.c)
target_include_directories(test_cpu_fast_math PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/backends/cpu)
target_link_libraries(test_cpu_fast_math PRIVATE m)
set_target_properties(test_cpu_fast_math PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_test(NAME unit.cpu_fast_math COMMAND test_cpu_fast_math)
set_tests_properties(unit.cpu_fast_math PROPERTIES TIMEOUT 300)
# MatMul / Gemm on constant B packed once for oneDNN's matmul (matmul_dnnl.c) against onnxruntime: 1-3 threads
# (column slices), cpu.pack_matmul on and off, alpha / beta / C / fused Relu, changing row counts
netrun_binding_test(cpu.packed_matmul ${CMAKE_CURRENT_LIST_DIR}/test_packed_matmul.py)
# paths for small models and small planes against onnxruntime: Pad and nearest Resize (index tables, row
# counters), oneDNN stems on a plain 3-channel X cut by images or by bands of rows, plain depthwise rows 7-15 wide
netrun_binding_test(cpu.small_planes ${CMAKE_CURRENT_LIST_DIR}/test_small_planes.py)
# convs on channel counts that are no multiple of 16 (3, 5, 24, 40, 72, 120) against onnxruntime: plain depthwise
# 3x3 / 5x5 at strides 1 and 2 with the row-stationary kernel and cpu.dw_rows=0, MnasNet-style blocks, batch 1 and 8
netrun_binding_test(cpu.odd_channels ${CMAKE_CURRENT_LIST_DIR}/test_odd_channels.py)
# how convs are cut over threads, against onnxruntime: oneDNN 1x1 projections whose image of X outweighs small
# weights and depthwise convs of few uneven 16-channel blocks by image at batch 8; plain 1x1 tail tiles
netrun_binding_test(cpu.conv_split ${CMAKE_CURRENT_LIST_DIR}/test_conv_split.py)
