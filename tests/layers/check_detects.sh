#!/usr/bin/env bash
# tools/check-layers.sh must fail, naming the place, on a copy of the tree where the model layer includes the
# executor's header, the plan layer calls an executor function, and the executor calls the public session API.
set -euo pipefail
src="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/importers" "$tmp/backends"
cp -r "$src/runtime" "$src/layers" "$src/include" "$tmp/"
cp -r "$src/importers/onnx" "$tmp/importers/"
cp -r "$src/backends/common" "$tmp/backends/"
bash "$src/tools/check-layers.sh" --root "$tmp" >/dev/null || { echo "FAIL: the unchanged copy is not clean"; exit 1; }
echo '#include "control_flow.h"' >> "$tmp/runtime/model.c"
printf 'void nr_test_up(netrun_session *s) { (void)nr_session_execute(s); }\n' >> "$tmp/runtime/memplan.c"
printf 'void nr_test_api(netrun_session *s) { (void)netrun_session_run(s); }\n' >> "$tmp/runtime/execute.c"
if bash "$src/tools/check-layers.sh" --root "$tmp" > "$tmp/out.txt"; then
    echo "FAIL: violations not reported"
    exit 1
fi
cat "$tmp/out.txt"
for want in "runtime/model.c:.*includes runtime/control_flow.h" "runtime/memplan.c:.*calls nr_session_execute" \
            "runtime/execute.c:.*calls the public netrun_session_run"; do
    grep -q "$want" "$tmp/out.txt" || { echo "FAIL: not reported: $want"; exit 1; }
done
echo "ok: the three violations are reported"
