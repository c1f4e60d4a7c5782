#!/usr/bin/env python3
"""Per-node A/B of netrun settings on one model: runs `netrun MODEL --profile` once per variant in turn, for
several rounds, and prints each node's minimum time over the rounds per variant (the minimum, since this VM's
speed moves over seconds; interleaving keeps the variants in the same phases), then the node sums.

    python3 tools/bench/profile_ab.py build/bench-models/resnet50.onnx --netrun build/bin/netrun \\
        --variant wino:cpu.wino_min_tiles=0 --variant default: --rounds 8 --nodes layer4.1.conv2,layer4.2.conv2

A variant is NAME:KEY=VALUE,KEY=VALUE (each passed as --set); other netrun options (--threads, --batch) go
after `--`.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--netrun", default="build/bin/netrun", help="the CLI to run")
    ap.add_argument("--variant", action="append", required=True, help="NAME:KEY=VALUE,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iterations", type=int, default=20, help="profiled runs per netrun call")
    ap.add_argument("--nodes", default="", help="comma-separated substrings of the node names to print (all)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a, rest = ap.parse_args(argv[:cut]), argv[cut + 1:]  # after `--`: more netrun options, e.g. --threads 2
    variants = []
    for v in a.variant:
        name, _, sets = v.partition(":")
        args = []
        for kv in filter(None, sets.split(",")):
            args += ["--set", kv]
        variants.append((name, args))
    best = [{} for _ in variants]
    sums = [[] for _ in variants]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        for _ in range(a.rounds):
            for i, (name, args) in enumerate(variants):
                cmd = [a.netrun, a.model, "--profile", "--json", out, "--iterations", str(a.iterations), "-q"]
                r = subprocess.run(cmd + args + rest, capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"{name}: {' '.join(cmd + args + rest)} failed:\n{r.stderr}")
                nodes = json.load(open(out))["profile"]["nodes"]
                for n in nodes:
                    best[i][n["name"]] = min(best[i].get(n["name"], float("inf")), n["mean_ms"])
                sums[i].append(sum(n["mean_ms"] for n in nodes))
    want = [s for s in a.nodes.split(",") if s]
    print(f"{'node (min ms over ' + str(a.rounds) + ' rounds)':48s}" + "".join(f"{n:>12s}" for n, _ in variants))
    for k in best[0]:
        if not want or any(s in k for s in want):
            print(f"{k[:48]:48s}" + "".join(f"{b.get(k, float('nan')):12.3f}" for b in best))
    print(f"{'node sum, min':48s}" + "".join(f"{min(s):12.3f}" for s in sums))
    print(f"{'node sum, median':48s}" + "".join(f"{sorted(s)[len(s) // 2]:12.3f}" for s in sums))


if __name__ == "__main__":
    main()
