#!/usr/bin/env bash
# Pack what the GPU machine lacks for building netrun into .deps/deps.tar.gz (gitignored; carry ".deps" to
# the machine): protobuf-c (headers, library, the protoc-c compiler with its libprotobuf/libprotoc) and
# OpenBLAS (CBLAS headers, library, libgfortran/libquadmath), jansson, oneDNN (the CPU backend's convolutions and
# packed GEMMs: without it the CPU backend there falls back to im2col + OpenBLAS and its CPU figures are not a
# user's) and CLBlast (the OpenCL backend's GEMMs: without it the OpenCL backend is not built there). Layout inside the archive, under usr/:
#   include/protobuf-c/  include/openblas/cblas.h...  lib/ (libraries found by CMake and the loader)
#   bin/protoc-c (a wrapper that finds its private libraries in libexec/)  libexec/protoc-c (the real one) + its libs
# Also .deps/node-tests.tar.gz: the ONNX node tests of the local onnx wheel.
# libstdc++ / libgcc_s / glibc are never packed: the target's own (newer) ones must be used.
# usage: tools/gpu/pack-deps.sh [REPO_ROOT]
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
U=$STAGE/usr
mkdir -p "$U/include/openblas" "$U/lib" "$U/bin" "$U/libexec"

libdir=/usr/lib/x86_64-linux-gnu
[ -f /usr/include/protobuf-c/protobuf-c.h ] || { echo "pack-deps: protobuf-c headers missing (apt-get install libprotobuf-c-dev)"; exit 1; }
cp -r /usr/include/protobuf-c "$U/include/"
cp -a $libdir/libprotobuf-c.so* "$U/lib/"

# protoc-c and the non-system libraries it needs
PROTOC=$(command -v protoc-c)
# the real binary keeps its name: protoc-c decides how it behaves by its program name
cp "$PROTOC" "$U/libexec/protoc-c"
ldd "$PROTOC" | awk '/=> \//{print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*|libz.so*) ;;
    *) cp -L "$lib" "$U/libexec/" ;;
  esac
done
cat > "$U/bin/protoc-c" <<'W'
#!/bin/sh
# protoc-c with its private libraries (not put on the global library path)
here=$(cd "$(dirname "$0")/../libexec" && pwd)
LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/protoc-c" "$@"
W
chmod +x "$U/bin/protoc-c"

# OpenBLAS (pthread flavour) with its Fortran runtime
ob=/usr/include/x86_64-linux-gnu/openblas-pthread
cp $ob/cblas.h $ob/openblas_config.h "$U/include/openblas/"
[ -f $ob/f77blas.h ] && cp $ob/f77blas.h "$U/include/openblas/"
cp -L $libdir/libopenblas.so.0 "$U/lib/libopenblas.so.0"
ln -s libopenblas.so.0 "$U/lib/libopenblas.so"
ldd $libdir/libopenblas.so.0 | awk '/=> \//{print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libgfortran.so*|libquadmath.so*) cp -L "$lib" "$U/lib/" ;;
  esac
done

# jansson (the Triton backend's JSON parser), when installed: -DNETRUN_TRITON=ON builds on the GPU machine too
if [ -f /usr/include/jansson.h ]; then
  cp /usr/include/jansson.h /usr/include/jansson_config.h "$U/include/"
  cp -a $libdir/libjansson.so* "$U/lib/"
  # its pkg-config file, relocatable (CMake finds jansson through pkg-config)
  mkdir -p "$U/lib/pkgconfig"
  sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' -e 's|^libdir=.*|libdir=${prefix}/lib|' \
    -e 's|^includedir=.*|includedir=${prefix}/include|' $libdir/pkgconfig/jansson.pc >"$U/lib/pkgconfig/jansson.pc"
fi

# oneDNN (libdnnl-dev): headers and the library; it links the target's own libgomp
if [ -f /usr/include/oneapi/dnnl/dnnl.h ]; then
  mkdir -p "$U/include/oneapi"
  cp -r /usr/include/oneapi/dnnl "$U/include/oneapi/"
  cp /usr/include/dnnl*.h "$U/include/" 2>/dev/null || true
  cp -a $libdir/libdnnl.so* "$U/lib/"
else
  echo "pack-deps: oneDNN not installed (apt-get install libdnnl-dev): the GPU machine's CPU backend will lack it"
fi
# CLBlast (libclblast-dev): the C header and the library (it links the target's libOpenCL)
if [ -f /usr/include/clblast_c.h ]; then
  cp /usr/include/clblast*.h "$U/include/"
  cp -a $libdir/libclblast.so* "$U/lib/"
else
  echo "pack-deps: CLBlast not installed (apt-get install libclblast-dev): no OpenCL backend on the GPU machine"
fi

mkdir -p "$ROOT/.deps"
tar -C "$STAGE" -czf "$ROOT/.deps/deps.tar.gz" usr
# The ONNX node tests of this machine's onnx wheel (the GPU image's onnx may ship none, and the CPU
# expectations were made with these): node-tests.tar.gz holds node/<test>/...
# (from onnx 1.23 the wheel ships none: run_conformance.py writes them from onnx's test cases)
NODE=$(python3 "$ROOT/tests/conformance/run_conformance.py" --tool none --cache "$ROOT/build/onnx-node-tests" \
  --print-dir 2>/dev/null | tail -1 || true)
if [ -n "$NODE" ] && [ -d "$NODE" ]; then
  tar -C "$(dirname "$NODE")" -czf "$ROOT/.deps/node-tests.tar.gz" --transform "s,^$(basename "$NODE"),node," \
    "$(basename "$NODE")"
  echo "pack-deps: node tests of onnx $(python3 -c 'import onnx; print(onnx.__version__)' 2>/dev/null) from $NODE"
  ls -la "$ROOT/.deps/node-tests.tar.gz"
fi
ls -la "$ROOT/.deps/deps.tar.gz"
echo "pack-deps: wrote $ROOT/.deps/deps.tar.gz; carry \".deps\" to the GPU machine"
