#!/usr/bin/env bash
# python.pip_wheel: `pip wheel` the source tree (scikit-build-core drives the project's CMake; the CUDA and OpenCL
# plugins off to keep it short), check what the wheel holds, install it into a new virtual environment, and run
# netrun from there with no help from the environment: `import netrun`, a model, the `netrun` console command.
# Exit 77 = skipped (a needed tool is missing).
set -euo pipefail
PY= SOURCE= VERSION= SKIP=
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY="$2" ;; --source) SOURCE="$2" ;; --version) VERSION="$2" ;; --skip) SKIP="$2" ;;
    *) echo "pip_wheel: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -n "$SKIP" ]; then echo "SKIP: $SKIP"; exit 77; fi
"$PY" -c "import scikit_build_core, pip" 2>/dev/null \
  || { echo "SKIP: scikit-build-core or pip missing in $PY (tests/requirements.txt)"; exit 77; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/netrun-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
unset NETRUN_BACKEND_PATH LD_LIBRARY_PATH PYTHONPATH CMAKE_ARGS
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

echo "== pip wheel $SOURCE (NETRUN_CUDA=OFF NETRUN_OPENCL=OFF)"
# --no-build-isolation: the build uses the pinned scikit-build-core of this environment, not a download
if ! "$PY" -m pip wheel "$SOURCE" --no-build-isolation --no-deps --disable-pip-version-check -w "$WORK/dist" \
    -C cmake.define.NETRUN_CUDA=OFF -C cmake.define.NETRUN_OPENCL=OFF -C build-dir="$WORK/build" \
    >"$WORK/wheel.log" 2>&1; then
  tail -40 "$WORK/wheel.log"; echo "FAIL: pip wheel"; exit 1
fi
WHL="$(ls "$WORK"/dist/netrun-*.whl)"
case "$(basename "$WHL")" in
  netrun-"$VERSION"-*) ok "wheel $(basename "$WHL")" ;;
  *) fail "wheel $(basename "$WHL") does not carry version $VERSION" ;;
esac
listing="$("$PY" -m zipfile -l "$WHL" | awk 'NR > 1 {print $1}')"
for f in netrun/__init__.py netrun/py.typed netrun/_native.pyi netrun/lib/libnetrun.so \
         netrun/lib/netrun/backends/libnetrun-cpu.so netrun/bin/netrun; do
  grep -qx "$f" <<<"$listing" && ok "holds $f" || fail "wheel lacks $f"
done
grep -q '^netrun/_native\..*\.so$' <<<"$listing" && ok "holds the extension" || fail "wheel lacks netrun/_native"
grep -q 'libnetrun-cuda' <<<"$listing" && fail "the CUDA plugin was built though NETRUN_CUDA=OFF" || true

echo "== install into a new virtual environment"
"$PY" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
# numpy (the package's one dependency) from the test environment, without a download
site="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$PY" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))' >"$site/test-deps.pth"
"$VPY" -m pip install -q --no-index --no-deps --disable-pip-version-check "$WHL" || { fail "pip install"; exit 1; }
ok "pip install $(basename "$WHL")"

cd "$WORK"
if "$VPY" - "$SOURCE/examples/tiny_cnn.onnx" "$VERSION" "$WORK/venv" <<'PYEOF'
import sys
import numpy as np
import netrun
model, version, venv = sys.argv[1:]
assert netrun.__file__.startswith(venv), netrun.__file__
assert netrun.__version__ == version, (netrun.__version__, version)
cpu = [b for b in netrun.backends() if b.name == "cpu"]
assert cpu and cpu[0].available and cpu[0].path.startswith(venv), cpu
with netrun.Session(model, backends="cpu", threads=1) as s:
    feeds = {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(i.dtype) for i in s.model_inputs}
    out = s.run(feeds)
    assert all(np.isfinite(a).all() for a in out), out
print("installed netrun", netrun.__version__, "ran", model, "->", [a.shape for a in out])
PYEOF
then ok "import netrun and run a model from the installed wheel"; else fail "the installed package"; fi
if "$WORK/venv/bin/netrun" --backends >"$WORK/cli.txt" 2>&1 && grep -q cpu "$WORK/cli.txt"; then
  ok "console command: netrun --backends"
else
  cat "$WORK/cli.txt"; fail "console command netrun --backends"
fi
"$WORK/venv/bin/netrun" "$SOURCE/examples/tiny_cnn.onnx" --backend cpu --iterations 2 --quiet \
  && ok "console command: netrun examples/tiny_cnn.onnx" || fail "console command on a model"

[ "$failures" = 0 ] && echo "pip_wheel: every check passed" || { echo "pip_wheel: $failures checks failed"; exit 1; }
