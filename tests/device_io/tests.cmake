# Device memory inputs/outputs, the caller's stream and asynchronous runs (runtime/device_io.c) on the fake device
# backend of tests/plugins, which stands in for CUDA memory: in-place reads and writes, copies counted as host <->
# device bytes, pointer changes under captured graphs, misuse errors, the 0.7 stats layout kept.
netrun_binding_test(device_io.runtime ${CMAKE_CURRENT_LIST_DIR}/test_device_io.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)

# The device-memory example (examples/gpu-frames): built everywhere (it opens libcudart with dlopen), run as a test
# that prints "SKIP: ..." and passes where there is no GPU.
add_executable(gpu_frames ${CMAKE_SOURCE_DIR}/examples/gpu-frames/gpu_frames.c)
target_link_libraries(gpu_frames PRIVATE netrun ${CMAKE_DL_LIBS} m)
set_target_properties(gpu_frames PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_test(NAME examples.gpu_frames COMMAND gpu_frames ${CMAKE_SOURCE_DIR}/examples/tiny_cnn.onnx 16)
set_tests_properties(examples.gpu_frames PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "SKIP:"
  ENVIRONMENT "NETRUN_BACKEND_PATH=${NETRUN_BACKEND_OUTPUT_DIR}")

# The same on a real CUDA device (cudaMalloc memory through ctypes, a ResNet-like model): exit 77 (skipped) without a
# GPU; the GPU stage "devio" of tools/gpu/run-gpu-tests.sh runs it.
netrun_binding_test(device_io.cuda ${CMAKE_CURRENT_LIST_DIR}/test_device_io_cuda.py)
set_tests_properties(device_io.cuda PROPERTIES SKIP_RETURN_CODE 77)

# The same with OpenCL (cl_mem and the caller's command queue): on the CPU through PoCL in CI; exit 77 (skipped)
# where no OpenCL device is available.
netrun_binding_test(device_io.opencl ${CMAKE_CURRENT_LIST_DIR}/test_device_io_opencl.py)
set_tests_properties(device_io.opencl PROPERTIES SKIP_RETURN_CODE 77)

# Device graphs in a session whose shapes are known only at run time (runtime/execute.c, run_segment_dynamic) on
# the fake device, whose graphs replay the recorded shapes and addresses: replayed only when a run repeats them.
netrun_binding_test(device_io.dynamic_graphs ${CMAKE_CURRENT_LIST_DIR}/test_dynamic_graphs.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)

# Device graphs around a step that refuses the capture (runtime/execute.c, split_segment): the fake device's Gather
# reads its indices on the host; the segment is split there and the steps on either side replayed as graphs.
netrun_binding_test(device_io.graph_split ${CMAKE_CURRENT_LIST_DIR}/test_graph_split.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
