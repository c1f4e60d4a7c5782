#!/usr/bin/env bash
# check-layers.sh: the runtime's files form layers that depend downward only (docs/design.md, "Dependency layers").
#
#   0 base      status, strmap, dtype, the public headers
#   1 ir        IR, the plugin registry and the host services plugins get
#   2 model     the model: loading and checks, the ONNX importer (importers/onnx), op definitions (layers/),
#               control-flow subgraphs compiled at load
#   3 plan      the session's state and its plan: options, inference, placement, graph passes, memory plan, prepare
#   4 exec      the executor and control flow (bodies run through nr_body_ops, not the public API)
#   5 api       the public session API and backend listing
#
# Checked: every #include "..." of runtime/, layers/ and importers/onnx/ names a file of the same or a lower layer;
# every nr_* function a file calls is defined in the same or a lower layer; below the api layer nothing calls the
# public netrun_session_* functions. Every runtime/ file must have a layer here. A new file: add it to LAYERS.
#
#   bash tools/check-layers.sh [--root DIR]       exit 0: clean; 1: violations (listed); 2: usage
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "${1:-}" == "--root" && -n "${2:-}" ]]; then root="$2"; elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--root DIR]" >&2
    exit 2
fi
exec python3 - "$root" <<'PYEOF'
import fnmatch
import os
import re
import sys

root = sys.argv[1]
LAYERS = {
    0: ["runtime/status.h", "runtime/status.c", "runtime/strmap.h", "runtime/strmap.c", "runtime/dtype.c",
        "include/*", "backends/common/*"],
    1: ["runtime/ir.h", "runtime/ir.c"],
    # plugins may define ops (ABI 1.9), so loading them sits with the op registry (layers/) and its services
    2: ["runtime/backend_registry.h", "runtime/backend_registry.c", "runtime/host_api.c", "runtime/plugin_ops.h",
        "runtime/plugin_ops.c", "runtime/model.h", "runtime/model.c", "runtime/layer_ctx.h", "runtime/layer_ctx.c", "runtime/tensor_io.c",
        "runtime/subgraphs.h", "runtime/subgraphs.c", "importers/onnx/*", "layers/*"],
    3: ["runtime/session.h", "runtime/session_state.c", "runtime/options.c", "runtime/option_keys.c",
        "runtime/host_memory.c", "runtime/plan.h", "runtime/infer.c", "runtime/place.h", "runtime/place.c",
        "runtime/optimize.h", "runtime/optimize_internal.h", "runtime/optimize.c", "runtime/opt_*.c",
        "runtime/qdq_fuse.h", "runtime/qdq_fuse.c", "runtime/memplan.c", "runtime/micro_batch.h", "runtime/micro_batch.c", "runtime/prepare.c",
        "runtime/preprocess.h", "runtime/preprocess.c", "runtime/device_io.c"],
    4: ["runtime/execute.h", "runtime/execute.c", "runtime/control_flow.h", "runtime/control_flow.c"],
    5: ["runtime/session.c", "runtime/api_backends.c"],
}
NAMES = {0: "base", 1: "ir", 2: "model", 3: "plan", 4: "exec", 5: "api"}


def layer_of(rel):
    for lv, pats in LAYERS.items():
        if rel in pats:
            return lv
    for lv, pats in LAYERS.items():
        if any("*" in p and fnmatch.fnmatch(rel, p) and rel.count("/") == p.count("/") for p in pats):
            return lv
    return None


def strip(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


files = []
for d in ("runtime", "layers", "importers/onnx"):
    for f in sorted(os.listdir(os.path.join(root, d))):
        if f.endswith((".c", ".h")) and not f.endswith(".pb-c.c") and not f.endswith(".pb-c.h"):
            files.append(f"{d}/{f}")
errors = []
for f in files:
    if layer_of(f) is None:
        errors.append(f"{f}: no layer (add it to LAYERS in tools/check-layers.sh)")
raw = {f: open(os.path.join(root, f), encoding="utf-8", errors="replace").read() for f in files}
code = {f: strip(t) for f, t in raw.items()}

# includes
for f in files:
    lf = layer_of(f)
    if lf is None:
        continue
    for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', raw[f], flags=re.M):
        inc = m.group(1)
        cands = [os.path.normpath(os.path.join(os.path.dirname(f), inc))] + \
                [f"{d}/{inc}" for d in ("runtime", "layers", "importers/onnx", "include")]
        target = next((c for c in cands if os.path.exists(os.path.join(root, c))), None)
        if target is None:
            continue  # generated (onnx.pb-c.h) or system
        lt = layer_of(target)
        if lt is not None and lt > lf:
            line = raw[f].count("\n", 0, m.start()) + 1
            errors.append(f"{f}:{line}: includes {target} ({NAMES[lt]}) from the {NAMES[lf]} layer")

# nr_* functions: defined where, called from where
defined = {}
for f in files:
    if not f.endswith(".c"):
        continue
    for m in re.finditer(r"^(?!static\b)[A-Za-z_][\w \*]*?\b(nr_\w+)\s*\([^;{]*\)\s*\{", code[f], flags=re.M | re.S):
        defined.setdefault(m.group(1), f)
for f in files:
    lf = layer_of(f)
    if lf is None:
        continue
    for m in re.finditer(r"\b(nr_\w+)\s*\(", code[f]):
        d = defined.get(m.group(1))
        if d and d != f and layer_of(d) is not None and layer_of(d) > lf:
            line = code[f].count("\n", 0, m.start()) + 1
            errors.append(f"{f}:{line}: calls {m.group(1)} of {d} ({NAMES[layer_of(d)]}) from the {NAMES[lf]} layer")
    if lf < 5:
        for m in re.finditer(r"\b(netrun_session_\w+)\s*\(", code[f]):
            line = code[f].count("\n", 0, m.start()) + 1
            errors.append(f"{f}:{line}: calls the public {m.group(1)} below the api layer")

for e in sorted(set(errors)):
    print(e)
n = len([f for f in files if f.startswith("runtime/")])
if errors:
    print(f"check-layers: {len(set(errors))} violation(s)")
    sys.exit(1)
print(f"check-layers: OK ({n} runtime files in {len(LAYERS)} layers, layers/ and importers/onnx/ in the model layer)")
PYEOF
