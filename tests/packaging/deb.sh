#!/usr/bin/env bash
# packaging.deb: `cpack -G DEB` on the built tree (into a temporary folder, not the build tree), check the
# package's name, Depends and contents, extract it with `dpkg -x` (never installed system-wide) and run its
# netrun on examples/tiny_cnn.onnx against the build tree's outputs. Exit 77 = skipped (a tool is missing).
set -euo pipefail
BUILD= SOURCE= CPACK=cpack VERSION= SKIP= LIBDIR=lib
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2" ;; --source) SOURCE="$2" ;; --cpack) CPACK="$2" ;; --version) VERSION="$2" ;;
    --skip) SKIP="$2" ;; --libdir) LIBDIR="$2" ;;
    *) echo "deb: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -n "$SKIP" ]; then echo "SKIP: $SKIP"; exit 77; fi
for t in "$CPACK" dpkg-deb; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found (the Debian package needs cpack and dpkg-deb)"; exit 77; }
done
[ -f "$BUILD/CPackConfig.cmake" ] || { echo "FAIL: $BUILD/CPackConfig.cmake missing (include(CPack) not run?)"; exit 1; }
MODEL="$SOURCE/examples/tiny_cnn.onnx"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/netrun-deb.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
unset NETRUN_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

echo "== cpack -G DEB (output in $WORK)"
( cd "$BUILD" && "$CPACK" -G DEB --config "$BUILD/CPackConfig.cmake" -B "$WORK/out" ) >"$WORK/cpack.log" 2>&1 \
  || { cat "$WORK/cpack.log"; echo "FAIL: cpack"; exit 1; }
arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
DEB="$WORK/out/netrun_${VERSION}_${arch}.deb"
[ -f "$DEB" ] || { ls -l "$WORK/out"; cat "$WORK/cpack.log"; echo "FAIL: $DEB not written"; exit 1; }
ok "$(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"

[ "$(dpkg-deb -f "$DEB" Package)" = netrun ] || fail "Package is $(dpkg-deb -f "$DEB" Package)"
[ "$(dpkg-deb -f "$DEB" Version)" = "$VERSION" ] || fail "Version is $(dpkg-deb -f "$DEB" Version)"
deps="$(dpkg-deb -f "$DEB" Depends)"
echo "Depends: $deps"
for d in libc6 libprotobuf-c1 libopenblas; do
  case "$deps" in *"$d"*) ;; *) fail "Depends lacks $d" ;; esac
done
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' >"$WORK/contents.txt"
# the soname: the major, or 0.MINOR before 1.0 (see CMakeLists.txt)
SOVER=${VERSION%%.*}
[ "$SOVER" = 0 ] && SOVER=0.$(echo "$VERSION" | cut -d. -f2)
for f in /usr/bin/netrun /usr/$LIBDIR/libnetrun.so.$SOVER \
         /usr/$LIBDIR/netrun/backends/libnetrun-cpu.so /usr/include/netrun.h /usr/include/netrun_backend.h \
         /usr/include/netrun_ops.h /usr/$LIBDIR/cmake/netrun/netrunConfig.cmake /usr/$LIBDIR/pkgconfig/netrun.pc; do
  grep -qx "$f" "$WORK/contents.txt" || fail "not in the package: $f"
done
for f in /usr/bin/netrun-conformance /usr/$LIBDIR/netrun/backends/libnetrun-template.so; do
  grep -qx "$f" "$WORK/contents.txt" && fail "in the package, but for developers and tests only: $f"
done
case "$LIBDIR" in lib/*-*) ok "multiarch libdir /usr/$LIBDIR" ;; *) echo "note: libdir /usr/$LIBDIR (not a multiarch folder)" ;; esac
if dpkg-deb --ctrl-tarfile "$DEB" | tar -t 2>/dev/null | grep -q shlibs; then ok "package has a shlibs file"; fi

# Extract (not install) and run the packaged netrun on the example model.
ROOT="$WORK/root"
if command -v dpkg >/dev/null; then dpkg -x "$DEB" "$ROOT"; else dpkg-deb -x "$DEB" "$ROOT"; fi
env -i PATH=/usr/bin:/bin "$ROOT/usr/bin/netrun" --backends >"$WORK/backends.txt" 2>&1 || true
grep -q "library: $ROOT/usr/$LIBDIR/netrun/backends/libnetrun-cpu.so" "$WORK/backends.txt" \
  && ok "the packaged netrun finds the packaged cpu backend" || { cat "$WORK/backends.txt"; fail "packaged backends not found"; }
# Reference outputs from the build tree, then the packaged netrun must agree with them.
"$BUILD/bin/netrun" "$MODEL" --backend cpu -q --output-dir "$WORK/ref" || fail "build-tree netrun on tiny_cnn"
if env -i PATH=/usr/bin:/bin "$ROOT/usr/bin/netrun" "$MODEL" --backend cpu -q --check "$WORK/ref" >"$WORK/run.txt" 2>&1; then
  ok "the packaged netrun runs tiny_cnn.onnx and matches the build tree's outputs"
else
  cat "$WORK/run.txt"; fail "packaged netrun on tiny_cnn.onnx"
fi
if command -v pkg-config >/dev/null; then
  inc="$(PKG_CONFIG_PATH="$ROOT/usr/$LIBDIR/pkgconfig" pkg-config --cflags netrun | tr -d ' ')"
  [ "${inc#-I}" -ef "$ROOT/usr/include" ] && ok "netrun.pc is relocatable ($inc)" || fail "netrun.pc cflags: $inc"
fi

if [ "$failures" != 0 ]; then echo "packaging.deb: $failures check(s) failed"; exit 1; fi
echo "packaging.deb: all checks passed"
