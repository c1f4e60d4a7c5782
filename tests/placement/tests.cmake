# Transfer-aware placement (runtime/place.c) on the fake device backend of tests/plugins: moving cheap nodes
# stranded between host nodes saves copies (against placement.transfer_aware=0), outputs match numpy.
netrun_binding_test(placement.transfer_aware ${CMAKE_CURRENT_LIST_DIR}/test_transfer_aware.py
  --plugin $<TARGET_FILE:netrun-testplugin-fakedev>)
