#!/usr/bin/env bash
# packaging.exports_selftest: tools/check-exports.sh must catch what it is for. It builds three small C++ plugins
# with this machine's g++ and checks the verdicts: libstdc++ linked statically with everything exported (the
# toolchain default that once crashed cuDNN) fails twice; the same hidden behind cmake/netrun-plugin.map still
# fails (a private C++ runtime); libstdc++ shared behind the map passes. Exit 77 = skipped (no g++, no static
# libstdc++).
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
CXX=${CXX:-g++}
for t in "$CXX" nm readelf; do command -v "$t" >/dev/null || { echo "SKIP: $t not found"; exit 77; }; done
W="$(mktemp -d "${TMPDIR:-/tmp}/netrun-exports.XXXXXX")"
trap 'rm -rf "$W"' EXIT
cat >"$W/p.cc" <<'CC'
#include <sstream>
#include <string>
extern "C" __attribute__((visibility("default"))) const void *netrun_backend_entry(unsigned host_abi) {
    static std::string s;
    std::ostringstream o;
    o << host_abi;
    s = o.str();
    return s.c_str();
}
CC
MAP="$SRC/cmake/netrun-plugin.map"
if ! "$CXX" -shared -fPIC -static-libstdc++ -o "$W/libnetrun-staticall.so" "$W/p.cc" 2>"$W/cc.txt"; then
  echo "SKIP: $CXX cannot link libstdc++ statically here: $(head -1 "$W/cc.txt")"; exit 77
fi
"$CXX" -shared -fPIC -static-libstdc++ -fvisibility=hidden -Wl,--version-script="$MAP" -o "$W/libnetrun-staticmap.so" "$W/p.cc"
"$CXX" -shared -fPIC -fvisibility=hidden -Wl,--version-script="$MAP" -o "$W/libnetrun-good.so" "$W/p.cc"
failures=0
expect() { # expect RC WORDS FILE: exit code and words the output must hold
  local want="$1" words="$2" f="$3" rc=0
  bash "$SRC/tools/check-exports.sh" "$W/$f" >"$W/out.txt" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL: $f: exit $rc, expected $want"; sed 's/^/    /' "$W/out.txt"; failures=$((failures + 1)); return; fi
  for w in $words; do
    grep -q -- "$w" "$W/out.txt" || { echo "FAIL: $f: no '$w' in"; sed 's/^/    /' "$W/out.txt"; failures=$((failures + 1)); return; }
  done
  echo "ok: $f (exit $rc): $(head -c 160 "$W/out.txt" | tr '\n' ' ')"
}
expect 1 "exports carries" libnetrun-staticall.so
expect 1 "copy" libnetrun-staticmap.so
expect 0 "netrun_backend_entry" libnetrun-good.so
[ "$failures" = 0 ] || exit 1
echo "exports selftest: all verdicts as expected"
