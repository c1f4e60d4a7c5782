#!/usr/bin/env bash
# check-abi.sh — keep netrun's binary interfaces from changing without a version bump.
#
#   tools/check-abi.sh [--lib PATH/libnetrun.so] [--update]
#
# Checks, against what tools/abi/ records:
#   1. libnetrun exports only netrun_* symbols (everything else is hidden), and every NETRUN_API function
#      declared in include/netrun.h is exported.
#   2. The exported symbol list (tools/abi/exports.txt) changes only together with NETRUN_VERSION_* in
#      include/netrun.h: added symbols need a new version, removed ones a new MAJOR (= a new soname).
#   3. The plugin ABI headers (include/netrun_backend.h, include/netrun_ops.h; hashed without comments,
#      whitespace and #include lines, so rewording a comment is free) change only together with
#      NETRUN_ABI_MAJOR/MINOR in include/netrun_backend.h.
# --update rewrites tools/abi/ from the current headers and library, after the version bump.
# Exit codes: 0 ok, 1 check failed, 2 usage error, 77 a needed tool is missing (ctest reports a skip).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ABI_DIR="$ROOT/tools/abi"
LIB=""
UPDATE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) LIB="${2:?--lib needs a path}"; shift 2 ;;
    --update) UPDATE=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-abi: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$LIB" ]; then
  for cand in "$ROOT/build/lib/libnetrun.so" "$ROOT"/build-*/lib/libnetrun.so; do
    if [ -e "$cand" ]; then LIB="$cand"; break; fi
  done
fi
for tool in nm python3; do
  command -v "$tool" >/dev/null || { echo "check-abi: SKIP: '$tool' not found"; exit 77; }
done
[ -n "$LIB" ] && [ -e "$LIB" ] || { echo "check-abi: no libnetrun.so found (build first, or pass --lib PATH)" >&2; exit 2; }

# The versions as the headers state them now.
define_of() { sed -n "s/^#define $1 \\([0-9][0-9]*\\).*/\\1/p" "$2"; }
H="$ROOT/include"
LIB_VERSION="$(define_of NETRUN_VERSION_MAJOR "$H/netrun.h").$(define_of NETRUN_VERSION_MINOR "$H/netrun.h").$(define_of NETRUN_VERSION_PATCH "$H/netrun.h")"
ABI_VERSION="$(define_of NETRUN_ABI_MAJOR "$H/netrun_backend.h").$(define_of NETRUN_ABI_MINOR "$H/netrun_backend.h")"
case "$LIB_VERSION.$ABI_VERSION" in
  *..*|.*|*.) echo "check-abi: cannot read NETRUN_VERSION_* / NETRUN_ABI_* from include/" >&2; exit 1 ;;
esac

# The soname follows project(VERSION) in CMakeLists.txt: it must agree with netrun.h.
CMAKE_VERSION_DECL="$(sed -n 's/^project(netrun VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
if [ -n "$CMAKE_VERSION_DECL" ] && [ "$CMAKE_VERSION_DECL" != "$LIB_VERSION" ]; then
  echo "check-abi: FAIL: CMakeLists.txt says project(netrun VERSION $CMAKE_VERSION_DECL) but include/netrun.h says $LIB_VERSION"
  exit 1
fi

# Sorted exported (defined, dynamic) symbols of the library, without version suffixes.
exports="$(nm -D --defined-only "$LIB" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | LC_ALL=C sort -u)"
# In one Python run (it is most of the time taken): the function names declared NETRUN_API in netrun.h, and
# the hashes of the plugin headers with comments and whitespace removed (string literals kept as they are).
py_out="$(python3 - "$H" <<'PY'
import hashlib, os, re, sys
h = sys.argv[1]
def read(name):
    with open(os.path.join(h, name), encoding='utf-8') as f:
        return f.read()
pat = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
def strip(text):
    return pat.sub(lambda m: ' ' if m.group(0).startswith('/') else m.group(0), text)
for name in ('netrun_backend.h', 'netrun_ops.h'):
    lines = [' '.join(l.split()) for l in strip(read(name)).splitlines()]
    lines = [l for l in lines if not re.match(r'# ?include\b', l)]  # which headers it pulls in is not layout
    norm = '\n'.join(l for l in lines if l) + '\n'
    print('hash', name, hashlib.sha256(norm.encode()).hexdigest())
for m in re.finditer(r'\bNETRUN_API\b[^;{]*?\b(netrun_\w+)\s*\(', strip(read('netrun.h'))):
    print('api', m.group(1))
PY
)"
declared="$(printf '%s\n' "$py_out" | sed -n 's/^api //p')"
HASH_BACKEND="$(printf '%s\n' "$py_out" | sed -n 's/^hash netrun_backend.h //p')"
HASH_OPS="$(printf '%s\n' "$py_out" | sed -n 's/^hash netrun_ops.h //p')"
[ -n "$HASH_BACKEND" ] && [ -n "$HASH_OPS" ] || { echo "check-abi: cannot hash the plugin headers" >&2; exit 1; }

fail=0
bad="$(printf '%s\n' "$exports" | grep -v '^netrun_' || true)"
if [ -n "$bad" ]; then
  echo "check-abi: FAIL: $LIB exports symbols outside the public API (netrun_*):"
  printf '  %s\n' $bad
  echo "  Build with hidden visibility and mark public functions NETRUN_API only."
  fail=1
fi
missing="$(LC_ALL=C comm -23 <(printf '%s\n' "$declared" | LC_ALL=C sort -u) <(printf '%s\n' "$exports"))"
if [ -n "$missing" ]; then
  echo "check-abi: FAIL: declared NETRUN_API in include/netrun.h but not exported by $LIB:"
  printf '  %s\n' $missing
  fail=1
fi

if [ "$UPDATE" = 1 ]; then
  old_lib="$(sed -n 's/^library //p' "$ABI_DIR/versions.txt" 2>/dev/null || true)"
  old_abi="$(sed -n 's/^plugin_abi //p' "$ABI_DIR/versions.txt" 2>/dev/null || true)"
  mkdir -p "$ABI_DIR"
  printf '%s\n' "$exports" > "$ABI_DIR/exports.txt"
  printf '%s  include/netrun_backend.h\n' "$HASH_BACKEND" > "$ABI_DIR/netrun_backend.h.sha256"
  printf '%s  include/netrun_ops.h\n' "$HASH_OPS" > "$ABI_DIR/netrun_ops.h.sha256"
  { echo "# The versions the other files of tools/abi/ belong to (written by tools/check-abi.sh --update)."
    echo "library $LIB_VERSION"
    echo "plugin_abi $ABI_VERSION"; } > "$ABI_DIR/versions.txt"
  echo "check-abi: tools/abi/ updated: library $LIB_VERSION (was ${old_lib:-none}), plugin ABI $ABI_VERSION (was ${old_abi:-none}), $(printf '%s\n' "$exports" | wc -l) exported symbols"
  [ "$fail" = 0 ] || echo "check-abi: the visibility problems above remain"
  exit "$fail"
fi

[ -f "$ABI_DIR/versions.txt" ] || { echo "check-abi: FAIL: tools/abi/versions.txt is missing; run tools/check-abi.sh --update"; exit 1; }
REC_LIB="$(sed -n 's/^library //p' "$ABI_DIR/versions.txt")"
REC_ABI="$(sed -n 's/^plugin_abi //p' "$ABI_DIR/versions.txt")"
major() { echo "${1%%.*}"; }

# 2. exported symbols.
added="$(LC_ALL=C comm -13 "$ABI_DIR/exports.txt" <(printf '%s\n' "$exports"))"
removed="$(LC_ALL=C comm -23 "$ABI_DIR/exports.txt" <(printf '%s\n' "$exports"))"
if [ -n "$added$removed" ]; then
  [ -z "$added" ] || { echo "check-abi: symbols added to libnetrun:"; printf '  + %s\n' $added; }
  [ -z "$removed" ] || { echo "check-abi: symbols removed from libnetrun:"; printf '  - %s\n' $removed; }
  if [ "$LIB_VERSION" = "$REC_LIB" ]; then
    echo "check-abi: FAIL: the exported symbols changed but NETRUN_VERSION is still $LIB_VERSION (include/netrun.h)."
    echo "  Bump NETRUN_VERSION_MINOR (added symbols) or NETRUN_VERSION_MAJOR (removed or changed ones) together"
    echo "  with project(VERSION) in CMakeLists.txt, then run: tools/check-abi.sh --update"
    fail=1
  elif [ -n "$removed" ] && [ "$(major "$LIB_VERSION")" = "$(major "$REC_LIB")" ]; then
    echo "check-abi: FAIL: symbols were removed, which breaks programs linked to libnetrun.so.$(major "$REC_LIB"),"
    echo "  but NETRUN_VERSION_MAJOR is still $(major "$LIB_VERSION"). Bump it (and project(VERSION): the soname"
    echo "  follows it), then run: tools/check-abi.sh --update"
    fail=1
  else
    echo "check-abi: FAIL: the version moved $REC_LIB -> $LIB_VERSION but tools/abi/ was not updated:"
    echo "  run tools/check-abi.sh --update and commit tools/abi/ with the change"
    fail=1
  fi
elif [ "$LIB_VERSION" != "$REC_LIB" ]; then
  echo "check-abi: note: library version $REC_LIB -> $LIB_VERSION with the same symbols; run tools/check-abi.sh --update"
fi

# 3. plugin ABI headers.
changed=""
for h in netrun_backend.h netrun_ops.h; do
  rec="$(awk '{print $1}' "$ABI_DIR/$h.sha256" 2>/dev/null || true)"
  if [ "$h" = netrun_backend.h ]; then cur="$HASH_BACKEND"; else cur="$HASH_OPS"; fi
  [ "$rec" = "$cur" ] || changed="$changed include/$h"
done
if [ -n "$changed" ]; then
  echo "check-abi: the plugin ABI headers changed (beyond comments and whitespace):$changed"
  if [ "$ABI_VERSION" = "$REC_ABI" ]; then
    echo "check-abi: FAIL: but NETRUN_ABI is still $ABI_VERSION (include/netrun_backend.h)."
    echo "  Appended slots or fields: bump NETRUN_ABI_MINOR. Anything removed, reordered or retyped: bump"
    echo "  NETRUN_ABI_MAJOR (every plugin must be rebuilt). Then run: tools/check-abi.sh --update"
    fail=1
  else
    echo "check-abi: FAIL: NETRUN_ABI moved $REC_ABI -> $ABI_VERSION but tools/abi/ was not updated:"
    echo "  run tools/check-abi.sh --update and commit tools/abi/ with the change"
    fail=1
  fi
elif [ "$ABI_VERSION" != "$REC_ABI" ]; then
  echo "check-abi: note: plugin ABI $REC_ABI -> $ABI_VERSION with identical headers; run tools/check-abi.sh --update"
fi

if [ "$fail" = 0 ]; then
  echo "check-abi: OK: libnetrun $LIB_VERSION exports $(printf '%s\n' "$exports" | wc -l) netrun_* symbols as recorded; plugin ABI $ABI_VERSION headers as recorded"
fi
exit "$fail"
