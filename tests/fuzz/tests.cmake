# libFuzzer harnesses (tests/fuzz/fuzz_*.c), only when clang with libFuzzer is installed.
# The runtime, the importer and the CPU plugin are compiled a second time, by clang with ASan+UBSan and
# fuzzer coverage, in their own build tree (build/fuzz-build) through ExternalProject: the main build's
# compiler and flags stay as they are. That second build is not part of `all` (it doubles build time):
# the ctest fixture fuzz.build makes it before fuzz.* run, or `cmake --build build --target netrun-fuzzers`.
# Turn everything off with -DNETRUN_BUILD_FUZZERS=OFF.
option(NETRUN_BUILD_FUZZERS "Build the libFuzzer harnesses when clang with libFuzzer is available" ON)
set(NETRUN_FUZZ_SECONDS 60 CACHE STRING "How long each fuzzer runs as a ctest")

set(_nr_fuzz_ok OFF)
if(NETRUN_BUILD_FUZZERS AND NOT NETRUN_SANITIZE)
  find_program(NETRUN_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
  if(NETRUN_CLANG)
    # Probe: can this clang link a fuzzer with ASan and UBSan (libclang-rt-*-dev present)?
    set(_probe_dir ${CMAKE_BINARY_DIR}/fuzz-probe)
    file(MAKE_DIRECTORY ${_probe_dir})
    file(WRITE ${_probe_dir}/probe.c
      "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
    execute_process(COMMAND ${NETRUN_CLANG} -fsanitize=fuzzer,address,undefined ${_probe_dir}/probe.c
      -o ${_probe_dir}/probe RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(_probe_rc EQUAL 0)
      set(_nr_fuzz_ok ON)
    endif()
  endif()
  if(NOT _nr_fuzz_ok)
    message(STATUS "netrun: fuzzers skipped (no clang with libFuzzer; Debian: apt-get install clang)")
  endif()
endif()

if(_nr_fuzz_ok)
  include(ExternalProject)
  set(NR_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz-build)
  set(NR_FUZZ_CFLAGS "-fsanitize=fuzzer-no-link -Wno-unknown-warning-option -gline-tables-only")
  # Only the libraries the harnesses need (the contrib plugin too: a model with a com.microsoft op loads it, so
  # fuzz_importer reaches its op definitions and kernels), with 2 jobs (a nested build does not share the outer job count).
  ExternalProject_Add(netrun-fuzz-libs
    SOURCE_DIR ${CMAKE_SOURCE_DIR}
    BINARY_DIR ${NR_FUZZ_DIR}
    CMAKE_ARGS -DCMAKE_C_COMPILER=${NETRUN_CLANG} -DCMAKE_BUILD_TYPE=RelWithDebInfo
      -DNETRUN_SANITIZE=ON -DNETRUN_BUILD_TESTS=OFF -DNETRUN_BUILD_FUZZERS=OFF -DNETRUN_FUZZ_LIBS=ON
      "-DCMAKE_C_FLAGS=${NR_FUZZ_CFLAGS}" -DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1
    BUILD_COMMAND ${CMAKE_COMMAND} -E env CMAKE_BUILD_PARALLEL_LEVEL=2
      ${CMAKE_COMMAND} --build ${NR_FUZZ_DIR} --target netrun_testable netrun-cpu netrun-contrib
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON
    EXCLUDE_FROM_ALL ON
    USES_TERMINAL_BUILD ON
    BUILD_BYPRODUCTS ${NR_FUZZ_DIR}/lib/static/libnetrun_testable.a ${NR_FUZZ_DIR}/lib/static/libnetrun_onnx_proto.a)

  set(_fuzzers)
  foreach(h importer tensor)
    set(_out ${NR_FUZZ_DIR}/bin/fuzz_${h})
    add_custom_command(OUTPUT ${_out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${NR_FUZZ_DIR}/bin
      COMMAND ${NETRUN_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -I${CMAKE_SOURCE_DIR}/include -I${NR_FUZZ_DIR}/generated -I${PROTOBUF_C_INCLUDE_DIR}
        ${CMAKE_CURRENT_LIST_DIR}/fuzz_${h}.c
        ${NR_FUZZ_DIR}/lib/static/libnetrun_testable.a ${NR_FUZZ_DIR}/lib/static/libnetrun_onnx_proto.a
        ${PROTOBUF_C_LIBRARY} -lpthread -ldl -lm -o ${_out}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz_${h}.c ${CMAKE_CURRENT_LIST_DIR}/sanitizer_defaults.h
        ${CMAKE_CURRENT_LIST_DIR}/onnx_mutator.h netrun-fuzz-libs
        ${NR_FUZZ_DIR}/lib/static/libnetrun_testable.a
      COMMENT "clang libFuzzer harness fuzz_${h}" VERBATIM)
    list(APPEND _fuzzers ${_out})
  endforeach()
  add_custom_target(netrun-fuzzers DEPENDS ${_fuzzers})

  # Seeds: the ONNX node-test models and their .pb tensors (of the pinned onnx: tests/conformance/run_conformance.py),
  # plus the hostile corpus.
  if(Python3_EXECUTABLE)
    add_test(NAME fuzz.build COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target netrun-fuzzers)
    set_tests_properties(fuzz.build PROPERTIES TIMEOUT 3600 FIXTURES_SETUP netrun_fuzzers)
    foreach(h importer tensor)
      add_test(NAME fuzz.${h} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_fuzzer.py
        --fuzzer ${NR_FUZZ_DIR}/bin/fuzz_${h} --kind ${h} --seconds ${NETRUN_FUZZ_SECONDS}
        --work ${CMAKE_BINARY_DIR}/fuzz-work/${h} --hostile ${CMAKE_SOURCE_DIR}/tests/corpus/models
        --node-cache ${CMAKE_BINARY_DIR}/onnx-node-tests
        --dict ${CMAKE_CURRENT_LIST_DIR}/onnx.dict)
      set_tests_properties(fuzz.${h} PROPERTIES TIMEOUT 600 RUN_SERIAL ON FIXTURES_REQUIRED netrun_fuzzers)
    endforeach()
  endif()
endif()
