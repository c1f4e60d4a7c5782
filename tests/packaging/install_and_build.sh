#!/usr/bin/env bash
# packaging.install: install the built tree into a temporary prefix (no rebuild), check the layout, run the
# installed netrun with no environment, then build examples/embed and examples/hello-plugin against the
# prefix only (find_package, then pkg-config) and run them. Exit 77 = skipped (a needed tool is missing).
set -euo pipefail
BUILD= SOURCE= CMAKE=cmake CC_BIN=cc GENERATOR= VERSION= SKIP= LIBDIR=lib
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2" ;; --source) SOURCE="$2" ;; --cmake) CMAKE="$2" ;; --cc) CC_BIN="$2" ;;
    --generator) GENERATOR="$2" ;; --version) VERSION="$2" ;; --skip) SKIP="$2" ;; --libdir) LIBDIR="$2" ;;
    *) echo "install_and_build: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -n "$SKIP" ]; then echo "SKIP: $SKIP"; exit 77; fi
for t in "$CMAKE" "$CC_BIN"; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found"; exit 77; }
done
MODEL="$SOURCE/examples/tiny_cnn.onnx"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/netrun-install.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
P="$WORK/prefix"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
# Never let the caller's settings decide what the installed tools find.
unset NETRUN_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH

echo "== cmake --install $BUILD --prefix $P"
"$CMAKE" --install "$BUILD" --prefix "$P" >"$WORK/install.log" || { cat "$WORK/install.log"; fail "cmake --install"; exit 1; }

# the soname: the major, or 0.MINOR before 1.0 (see CMakeLists.txt)
SOVER=${VERSION%%.*}
[ "$SOVER" = 0 ] && SOVER=0.$(echo "$VERSION" | cut -d. -f2)
# ---- layout ----
L="$LIBDIR"
for f in bin/netrun $L/libnetrun.so $L/libnetrun.so.$SOVER \
         $L/libnetrun.so.$VERSION $L/netrun/backends/libnetrun-cpu.so include/netrun.h include/netrun_backend.h \
         include/netrun_ops.h $L/cmake/netrun/netrunConfig.cmake $L/cmake/netrun/netrunConfigVersion.cmake \
         $L/cmake/netrun/netrunTargets.cmake $L/pkgconfig/netrun.pc; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
# Every plugin built into the tree's backends folder is installed but the template (for plugin authors to copy),
# and nothing else (the loader's broken test plugins live in other folders and must stay out); no test tool.
for f in bin/netrun-conformance $L/netrun/backends/libnetrun-template.so; do
  [ ! -e "$P/$f" ] || fail "installed, but for developers and tests only: $f"
done
built="$(cd "$BUILD/lib/netrun/backends" && ls libnetrun-*.so | grep -v '^libnetrun-template\.so$' | sort)"
installed="$(cd "$P/$LIBDIR/netrun/backends" && ls libnetrun-*.so | sort)"
[ "$built" = "$installed" ] && ok "backends installed: $(echo $installed)" \
  || fail "backends: built [$(echo $built)] but installed [$(echo $installed)]"
if command -v readelf >/dev/null; then
  soname="$(readelf -d "$P/$LIBDIR/libnetrun.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$soname" = "libnetrun.so.$SOVER" ] && ok "soname $soname" || fail "soname is '$soname'"
  for t in netrun; do
    rp="$(readelf -d "$P/bin/$t" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')"
    [ "$rp" = "\$ORIGIN/../$LIBDIR" ] && ok "$t RUNPATH $rp" || fail "$t RUNPATH is '$rp', expected \$ORIGIN/../$LIBDIR"
  done
else
  echo "note: readelf not found: soname and RUNPATH not checked"
fi
if command -v nm >/dev/null; then
  other="$(nm -D --defined-only "$P/$LIBDIR/libnetrun.so" | awk 'NF >= 3 {print $3}' | grep -v '^netrun_' || true)"
  [ -z "$other" ] && ok "libnetrun exports only netrun_* symbols" || fail "non-API exports: $(echo $other)"
fi

# ---- the installed tools, with no environment ----
env -i PATH=/usr/bin:/bin "$P/bin/netrun" --backends >"$WORK/backends.txt" 2>&1 || fail "installed netrun --backends"
grep -q "library: $P/$LIBDIR/netrun/backends/libnetrun-cpu.so" "$WORK/backends.txt" \
  && ok "installed netrun finds its installed cpu backend with no environment" \
  || { cat "$WORK/backends.txt"; fail "installed netrun did not list $P/$LIBDIR/netrun/backends/libnetrun-cpu.so"; }
if grep -q "library: $BUILD/" "$WORK/backends.txt"; then fail "installed netrun loaded plugins from the build tree"; fi
env -i PATH=/usr/bin:/bin "$P/bin/netrun" "$MODEL" --backend cpu -q && ok "installed netrun runs tiny_cnn.onnx" \
  || fail "installed netrun on tiny_cnn.onnx"

# ---- examples built with find_package(netrun) ----
gen=()
[ -n "$GENERATOR" ] && gen=(-G "$GENERATOR")
build_example() { # name -> $WORK/NAME
  "$CMAKE" -S "$SOURCE/examples/$1" -B "$WORK/$1" "${gen[@]}" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror -Wno-unused-parameter" \
    >"$WORK/$1.cfg.log" 2>&1 && "$CMAKE" --build "$WORK/$1" >"$WORK/$1.build.log" 2>&1 \
    || { cat "$WORK/$1.cfg.log" "$WORK/$1.build.log" 2>/dev/null; return 1; }
}
if build_example embed; then
  ok "examples/embed built with find_package(netrun)"
  if "$WORK/embed/embed" "$MODEL" cpu >"$WORK/embed-cpu.txt" 2>&1; then
    grep -q "^expected error: invalid argument: " "$WORK/embed-cpu.txt" || fail "embed: no error message for a bad input name"
    grep -q "^output probabilities .* sum=1.0000 " "$WORK/embed-cpu.txt" && ok "embed runs tiny_cnn (softmax sums to 1)" \
      || { cat "$WORK/embed-cpu.txt"; fail "embed output"; }
  else
    cat "$WORK/embed-cpu.txt"; fail "embed on tiny_cnn.onnx"
  fi
else
  fail "examples/embed did not build against $P"
fi

if build_example hello-plugin; then
  ok "examples/hello-plugin built with find_package(netrun)"
  HELLO="$WORK/hello-plugin"
  [ -e "$HELLO/libnetrun-hello.so" ] || fail "no libnetrun-hello.so"
  if command -v nm >/dev/null; then
    exp="$(nm -D --defined-only "$HELLO/libnetrun-hello.so" | awk 'NF >= 3 {print $3}' | tr '\n' ' ')"
    [ "$exp" = "netrun_backend_entry " ] && ok "hello exports only netrun_backend_entry" || fail "hello exports: $exp"
  fi
  NETRUN_BACKEND_PATH="$HELLO" "$P/bin/netrun" --backends >"$WORK/hello-backends.txt" 2>&1 || true
  grep -Eq "^hello +yes " "$WORK/hello-backends.txt" && ok "netrun --backends lists hello via NETRUN_BACKEND_PATH" \
    || { cat "$WORK/hello-backends.txt"; fail "hello not listed as available"; }
  NETRUN_BACKEND_PATH="$HELLO" "$P/bin/netrun" "$MODEL" --backend hello,cpu -v >"$WORK/hello-run.txt" 2>&1 \
    || { cat "$WORK/hello-run.txt"; fail "netrun --backend hello,cpu"; }
  n_hello="$(grep -Ec '^ +/relu[0-9]+/Relu +Relu +hello ' "$WORK/hello-run.txt" || true)"
  [ "$n_hello" = 3 ] && ok "the 3 Relu nodes of tiny_cnn run on hello" \
    || { cat "$WORK/hello-run.txt"; fail "expected 3 Relu nodes on hello, found $n_hello"; }
  # an op netrun does not know, defined by hello (ABI 1.9): the model loads and its node runs on hello
  NETRUN_BACKEND_PATH="$HELLO" "$P/bin/netrun" "$SOURCE/examples/hello-plugin/scaled_relu.onnx" --backend cpu -v \
    >"$WORK/hello-op.txt" 2>&1 || { cat "$WORK/hello-op.txt"; fail "scaled_relu.onnx with hello"; }
  grep -Eq '^ +scaled_relu +ScaledRelu +hello ' "$WORK/hello-op.txt" && ok "hello's own op ScaledRelu loads and runs on hello" \
    || { cat "$WORK/hello-op.txt"; fail "ScaledRelu did not run on hello"; }
  # The plugin computes what the CPU computes: same printed output as the cpu-only run.
  if [ -x "$WORK/embed/embed" ]; then
    NETRUN_BACKEND_PATH="$HELLO" "$WORK/embed/embed" "$MODEL" hello,cpu >"$WORK/embed-hello.txt" 2>&1 || fail "embed with hello,cpu"
    grep -q " Relu .* on hello$" "$WORK/embed-hello.txt" || fail "embed: no node on hello"
    [ "$(grep '^output' "$WORK/embed-hello.txt")" = "$(grep '^output' "$WORK/embed-cpu.txt")" ] \
      && ok "outputs with hello,cpu equal those with cpu" || fail "outputs differ between hello,cpu and cpu"
  fi
  # `cmake --install` of the plugin defaults to netrun's backend folder: found with no environment then.
  "$CMAKE" --install "$HELLO" >/dev/null && [ -e "$P/$LIBDIR/netrun/backends/libnetrun-hello.so" ] \
    && env -i PATH=/usr/bin:/bin "$P/bin/netrun" --backends 2>&1 | grep -Eq "^hello +yes " \
    && ok "hello installed into netrun_BACKEND_DIR is found with no environment" || fail "installing hello"
  rm -f "$P/$LIBDIR/netrun/backends/libnetrun-hello.so"
else
  fail "examples/hello-plugin did not build against $P"
fi

# ---- the same with pkg-config ----
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig"
  v="$(pkg-config --modversion netrun)"
  [ "$v" = "$VERSION" ] && ok "pkg-config --modversion netrun = $v" || fail "pkg-config version '$v'"
  libdir="$(pkg-config --variable=libdir netrun)"
  # shellcheck disable=SC2046
  "$CC_BIN" -std=c11 -Wall -Wextra -Werror "$SOURCE/examples/embed/embed.c" -o "$WORK/embed-pc" \
      $(pkg-config --cflags --libs netrun) -Wl,-rpath,"$libdir" \
    && "$WORK/embed-pc" "$MODEL" cpu | grep -q "^output probabilities .* sum=1.0000 " \
    && ok "embed built with pkg-config runs" || fail "embed with pkg-config"
  mkdir -p "$WORK/pc-plugin"
  # shellcheck disable=SC2046
  "$CC_BIN" -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -shared -fPIC -fvisibility=hidden \
      $(pkg-config --cflags netrun) "$SOURCE/examples/hello-plugin/hello_backend.c" -Wl,--no-undefined \
      -o "$WORK/pc-plugin/libnetrun-hello.so" \
    && NETRUN_BACKEND_PATH="$WORK/pc-plugin" "$P/bin/netrun" --backends 2>&1 | grep -Eq "^hello +yes " \
    && ok "hello built with pkg-config is listed" || fail "hello with pkg-config"
  [ "$(pkg-config --variable=backenddir netrun)" -ef "$P/$LIBDIR/netrun/backends" ] \
    && ok "pkg-config backenddir" || fail "pkg-config backenddir is $(pkg-config --variable=backenddir netrun)"
else
  echo "note: pkg-config not found: the pkg-config builds were not tried"
fi

if [ "$failures" != 0 ]; then echo "packaging.install: $failures check(s) failed"; exit 1; fi
echo "packaging.install: all checks passed"
