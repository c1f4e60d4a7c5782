#!/usr/bin/env bash
# packaging.abi_selftest: tools/check-abi.sh must catch what it is for. On a scratch copy of the headers and of
# tools/abi/ (the real files are never touched), recorded afresh, it checks that: a comment edit passes; an
# appended plugin ABI slot fails until NETRUN_ABI_MINOR is bumped and --update is run; a new exported symbol
# fails while NETRUN_VERSION is unchanged; a removed one fails with only a minor bump. Exit 77 = skipped.
set -euo pipefail
LIB="${1:?usage: check_abi_selftest.sh PATH/libnetrun.so}"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
for t in nm python3; do command -v "$t" >/dev/null || { echo "SKIP: $t not found"; exit 77; }; done
W="$(mktemp -d "${TMPDIR:-/tmp}/netrun-abi.XXXXXX")"
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/tools" "$W/include"
cp "$SRC/tools/check-abi.sh" "$W/tools/"
cp -r "$SRC/tools/abi" "$W/tools/abi"
cp "$SRC"/include/netrun.h "$SRC"/include/netrun_backend.h "$SRC"/include/netrun_ops.h "$W/include/"
cp "$SRC/CMakeLists.txt" "$W/"
CHECK=(bash "$W/tools/check-abi.sh" --lib "$LIB")
failures=0
expect() { # expect 0|1 "what" : run the check on the scratch tree, compare its exit code
  local want="$1" what="$2" rc=0
  "${CHECK[@]}" >"$W/out.txt" 2>&1 || rc=$?
  if [ "$rc" = "$want" ]; then echo "ok: $what (exit $rc)"; else
    echo "FAIL: $what: exit $rc, expected $want"; sed 's/^/    /' "$W/out.txt"; failures=$((failures + 1)); fi
}
set_define() { sed -i "s/^#define $1 [0-9]*/#define $1 $2/" "$3"; }

# Start from a record of the current headers, so that this test does not depend on tools/abi/ being current
# (packaging.abi checks that).
"${CHECK[@]}" --update >/dev/null || true
expect 0 "a freshly recorded state passes"
[ "$failures" = 0 ] || exit 1

# Comments and whitespace are not ABI.
sed -i 's|^/\* Services of the host, so that plugins never link the runtime. \*/|/* Services of the host (reworded).   */|' \
  "$W/include/netrun_backend.h"
printf '\n/* a trailing comment */\n' >>"$W/include/netrun_ops.h"
expect 0 "a comment-only edit of the plugin headers"

# An appended slot without a version bump.
sed -i 's|^} netrun_backend_api;|    void (*new_slot)(void);\n} netrun_backend_api;|' "$W/include/netrun_backend.h"
expect 1 "an appended backend slot with NETRUN_ABI unchanged"
grep -q "tools/check-abi.sh --update" "$W/out.txt" || { echo "FAIL: no hint to run --update"; failures=$((failures + 1)); }
minor="$(sed -n 's/^#define NETRUN_ABI_MINOR \([0-9]*\).*/\1/p' "$W/include/netrun_backend.h")"
set_define NETRUN_ABI_MINOR $((minor + 1)) "$W/include/netrun_backend.h"
expect 1 "NETRUN_ABI_MINOR bumped but tools/abi/ not updated"
"${CHECK[@]}" --update >/dev/null
expect 0 "after the bump and --update"

# A params struct changed in netrun_ops.h counts as plugin ABI too.
sed -i '0,/^typedef struct netrun_[a-z_]*_params {/s//&\n    int appended_field_for_the_test;/' "$W/include/netrun_ops.h"
expect 1 "a changed params struct in netrun_ops.h with NETRUN_ABI unchanged"
"${CHECK[@]}" --update >/dev/null

# The exported symbols: pretend the recorded list lacked one (= the library gained a symbol).
sed -i '1d' "$W/tools/abi/exports.txt"
expect 1 "a new exported symbol with NETRUN_VERSION unchanged"
vminor="$(sed -n 's/^#define NETRUN_VERSION_MINOR \([0-9]*\).*/\1/p' "$W/include/netrun.h")"
set_define NETRUN_VERSION_MINOR $((vminor + 1)) "$W/include/netrun.h"
expect 1 "NETRUN_VERSION bumped in netrun.h but not in CMakeLists.txt project(VERSION)"
ver="$(sed -n 's/^project(netrun VERSION \([0-9]*\)\.\([0-9]*\)\.\([0-9]*\).*/\1 \2 \3/p' "$W/CMakeLists.txt")"
set -- $ver
sed -i "s/^project(netrun VERSION [0-9.]*/project(netrun VERSION $1.$((vminor + 1)).$3/" "$W/CMakeLists.txt"
expect 1 "version bumped everywhere but tools/abi/ not updated"
"${CHECK[@]}" --update >/dev/null
expect 0 "after the minor bump and --update (an added symbol)"

# A removed symbol needs a new major: simulate it with a recorded symbol the library does not have.
echo "netrun_zz_removed_for_the_test" >>"$W/tools/abi/exports.txt"
set_define NETRUN_VERSION_MINOR $((vminor + 2)) "$W/include/netrun.h"
sed -i "s/^project(netrun VERSION [0-9.]*/project(netrun VERSION $1.$((vminor + 2)).$3/" "$W/CMakeLists.txt"
expect 1 "a removed symbol with only a minor bump"

if [ "$failures" != 0 ]; then echo "packaging.abi_selftest: $failures check(s) failed"; exit 1; fi
echo "packaging.abi_selftest: all checks passed"
