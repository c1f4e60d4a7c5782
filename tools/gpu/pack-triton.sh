#!/usr/bin/env bash
# Build netrun here for the GPU machine with the Triton backend (Release, sm_90, CUDA plugin; oneDNN and OpenCL left
# out so nothing needs what the machine lacks) and gather what tools/gpu/run-triton-gpu.sh needs into one folder to
# carry (about 50 MiB, under the device tool's 64 MiB with the working tree):
#   netrun.tar.xz   bin/netrun, lib/ (libnetrun, lib/netrun/backends/libnetrun-{cpu,cuda}.so,
#                   lib/triton/netrun/libtriton_netrun.so), lib/extra/ (the non-system libraries they link:
#                   protobuf-c, OpenBLAS, jansson...; found through LD_LIBRARY_PATH)
#   tritonserver.tar.xz   the nvidia-pytriton wheel's server, trimmed: its embedded libpython and the Python backend
#                         stubs of other Python versions left out (the wheel itself is 55 MB)
#   wheels/         tritonclient[http] and the packages it needs that the machine's Python 3.12 lacks
# usage: tools/gpu/pack-triton.sh [PKG_DIR (default build-triton-gpu-pkg)]   then, on the GPU machine:
#   PKG=$PWD/build-triton-gpu-pkg tools/gpu/run-triton-gpu.sh
# Environment: BUILD_DIR (default build-gpu-triton), CUDA_ARCH (default 90), PY (the Python whose site-packages hold
# the nvidia-pytriton wheel, default .venv/bin/python), PYVER (the GPU machine's Python, default 3.12).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${1:-$ROOT/build-triton-gpu-pkg}
B=${BUILD_DIR:-$ROOT/build-gpu-triton}
PY=${PY:-$ROOT/.venv/bin/python}
PYVER=${PYVER:-3.12}
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
  -DNETRUN_CPU_DNNL=OFF -DNETRUN_OPENCL=OFF -DNETRUN_TRITON=ON -DNETRUN_BUILD_TESTS=OFF >/dev/null
ninja -C "$B" -j "${JOBS:-2}" netrun netrun-cli netrun-cpu netrun-cuda triton_netrun >/dev/null
[ -f "$B/lib/netrun/backends/libnetrun-cuda.so" ] || { echo "pack-triton: the cuda plugin was not built (see cmake)"; exit 1; }
rm -rf "$PKG" && mkdir -p "$PKG/bin" "$PKG/lib/netrun/backends" "$PKG/lib/triton/netrun" "$PKG/lib/extra" "$PKG/wheels"
# (bin/ and lib/ are packed into netrun.tar.xz at the end)
cp "$B/bin/netrun" "$PKG/bin/"
cp -a "$B"/lib/libnetrun.so* "$PKG/lib/"
cp "$B"/lib/netrun/backends/libnetrun-{cpu,cuda}.so "$PKG/lib/netrun/backends/"
cp "$B/lib/triton/netrun/libtriton_netrun.so" "$PKG/lib/triton/netrun/"
# non-system libraries: not glibc, libstdc++/libgcc (the machine's own, newer), CUDA/cuDNN (the machine's)
for f in "$PKG"/bin/netrun "$PKG"/lib/libnetrun.so.* "$PKG"/lib/netrun/backends/*.so "$PKG"/lib/triton/netrun/*.so; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*|libz.so*) ;;
    libnetrun*|libcud*|libcublas*|libnvrtc*|libnvJitLink*) ;;
    *) cp -L "$lib" "$PKG/lib/extra/" ;;
  esac
done
# the server, trimmed
SITE=$("$PY" -c "import importlib.util as u, os; print(os.path.dirname(u.find_spec('pytriton').submodule_search_locations[0]))")
tar -C "$SITE" -cJf "$PKG/tritonserver.tar.xz" --exclude='libpython3-*' \
  $(cd "$SITE" && ls -d pytriton/tritonserver/bin pytriton/tritonserver/backends pytriton/tritonserver/caches \
     "pytriton/tritonserver/python_backend_stubs/$PYVER" pytriton/__init__.py nvidia_pytriton.libs 2>/dev/null)
# tritonclient[http] for the machine's Python (it has numpy, onnx, onnxruntime, ml_dtypes, urllib3)
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_5_x86_64 --platform any -d "$PKG/wheels" \
  tritonclient==2.73.0 geventhttpclient==2.3.3 gevent==24.11.1 greenlet==3.2.4 zope.event==5.0 \
  zope.interface==7.2 python-rapidjson==1.20 brotli==1.1.0 certifi==2024.12.14
tar -C "$PKG" -cJf "$PKG/netrun.tar.xz" bin lib && rm -rf "$PKG/bin" "$PKG/lib"
du -sh "$PKG" "$PKG"/* | sort -h
