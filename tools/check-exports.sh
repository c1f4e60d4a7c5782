#!/usr/bin/env bash
# check-exports.sh — what netrun's shared objects expose to the process that loads them.
#
#   tools/check-exports.sh --lib PATH/libnetrun.so [--plugins DIR] [PLUGIN.so ...]
#
# Checks:
#   1. every backend plugin (libnetrun-*.so in DIR, or the files named) exports netrun_backend_entry and no
#      other symbol: a plugin shares one process with the libraries it loads (cuDNN, cuBLAS, oneDNN, an OpenCL
#      driver) and with other plugins, so anything it exports can take the place of their copy;
#   2. libnetrun exports netrun_* symbols only (tools/check-abi.sh checks the exact list);
#   3. none of them carries a private copy of the C++ runtime (libstdc++ / libsupc++ linked statically): with
#      it, the runtime's process-wide (GNU unique) symbols bind libraries loaded later, cuDNN among them, to the
#      plugin's copy. That is how a CUDA plugin linked by a toolchain whose g++ links libstdc++ statically
#      crashed in cuDNN's heuristics (docs/cuda.md). Looked for in the full symbol table, exported or not.
# Exit codes: 0 ok, 1 a check failed, 2 usage error, 77 nm or readelf missing (ctest reports a skip).
set -euo pipefail
LIB="" DIR=""
FILES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) LIB="${2:?--lib needs a path}"; shift 2 ;;
    --plugins) DIR="${2:?--plugins needs a folder}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-exports: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    *) FILES+=("$1"); shift ;;
  esac
done
for tool in nm readelf; do command -v "$tool" >/dev/null || { echo "check-exports: SKIP: '$tool' not found"; exit 77; }; done
if [ -n "$DIR" ]; then
  [ -d "$DIR" ] || { echo "check-exports: $DIR is not a folder" >&2; exit 2; }
  for f in "$DIR"/libnetrun-*.so; do [ -e "$f" ] && FILES+=("$f"); done
fi
[ -n "$LIB" ] || [ ${#FILES[@]} -gt 0 ] || { echo "check-exports: nothing to check (see --help)" >&2; exit 2; }

fail=0
bad() { echo "check-exports: FAIL: $*"; fail=1; this=1; }
exported() { nm -D --defined-only "$1" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | LC_ALL=C sort -u; }
# Symbols that only the C++ runtime library itself defines: a definition in one of our objects means a copy of
# it was linked in (weak template instantiations of std:: containers would not be, so they are not listed).
runtime_copy() {
  readelf -sW "$1" 2>/dev/null | awk '$7 != "UND" && NF >= 8 {print $8}' | sed 's/@.*//' |
    grep -E '^(__gxx_personality_v0|__cxa_throw|__cxa_allocate_exception|__cxa_guard_acquire|__cxa_pure_virtual|_ZSt9terminatev|_ZNSt8ios_base4InitC[12]Ev|_ZNSt6locale[0-9A-Za-z_]*|_ZTVN10__cxxabiv1[0-9A-Za-z_]*)$' |
    LC_ALL=C sort -u | head -5 || true
}
describe() { # at most 8 names, then a count
  awk 'NR <= 8 {printf "%s%s", (NR > 1 ? ", " : ""), $0} END {if (NR > 8) printf ", ... (%d in all)", NR}'
}
for f in "${FILES[@]}"; do
  this=0
  [ -f "$f" ] || { bad "$f: not a file"; continue; }
  ex=$(exported "$f")
  extra=$(printf '%s\n' "$ex" | grep -vx 'netrun_backend_entry' | grep -v '^$' || true)
  printf '%s\n' "$ex" | grep -qx 'netrun_backend_entry' || bad "$(basename "$f") does not export netrun_backend_entry"
  [ -z "$extra" ] || bad "$(basename "$f") exports more than netrun_backend_entry: $(printf '%s\n' "$extra" | describe)" \
    "(link it with cmake/netrun-plugin.map: netrun::plugin_headers does)"
  rt=$(runtime_copy "$f")
  [ -z "$rt" ] || bad "$(basename "$f") carries a copy of the C++ runtime (defines $(printf '%s\n' "$rt" | describe));" \
    "link libstdc++ as a shared library, or not at all"
  [ "$this" = 1 ] || echo "ok: $(basename "$f"): exports netrun_backend_entry only; no C++ runtime inside"
done
if [ -n "$LIB" ]; then
  [ -f "$LIB" ] || { echo "check-exports: $LIB is not a file" >&2; exit 2; }
  this=0
  extra=$(exported "$LIB" | grep -v '^netrun_' | grep -v '^$' || true)
  [ -z "$extra" ] || bad "$(basename "$LIB") exports symbols outside netrun_*: $(printf '%s\n' "$extra" | describe)"
  rt=$(runtime_copy "$LIB")
  [ -z "$rt" ] || bad "$(basename "$LIB") carries a copy of the C++ runtime (defines $(printf '%s\n' "$rt" | describe))"
  [ "$this" = 1 ] || echo "ok: $(basename "$LIB"): exports netrun_* only; no C++ runtime inside"
fi
exit $fail
