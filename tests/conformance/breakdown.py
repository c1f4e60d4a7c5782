#!/usr/bin/env python3
"""Summarise why node tests do not pass, from a netrun-conformance JSON report.

usage: breakdown.py REPORT.json [--top N]
Prints: the summary; ops that are missing (unknown to netrun) by test count; ops netrun knows but whose
tested variant no backend takes (the reason the backend gave); other unsupported causes; error messages and
failures grouped after blanking node names and numbers.
"""
import argparse
import collections
import json
import re


def normalise(msg):
    msg = re.sub(r"^test_data_set_\d+/", "", msg)
    msg = re.sub(r"node '[^']*'", "node '…'", msg)
    msg = re.sub(r"(input|output|tensor) '[^']*'", r"\1 '…'", msg)
    msg = re.sub(r"\[[0-9, ]*\]", "[…]", msg)
    msg = re.sub(r"(Cast(Like)?) from \S+ to (?!undefined)\S+", r"\1 from … to …", msg)
    msg = re.sub(r"(?<![A-Za-z0-9_.])-?\d+(\.\d+)?(e-?\d+)?(?![A-Za-z0-9_])", "N", msg)
    return msg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    rep = json.load(open(a.report))
    tests = rep["tests"]
    s = rep["summary"]
    out = []
    out.append("summary: " + ", ".join("%s %d" % (k, v) for k, v in s.items()))
    unknown, variant, other_unsup, errors, failed = (collections.Counter() for _ in range(5))
    examples = {}
    for t in tests:
        d, st = t["detail"], t["status"]
        if st == "unsupported":
            op = t.get("missing_op", "")
            if "is not known to netrun" in d:
                unknown[op] += 1
                examples.setdefault(("u", op), t["name"])
            elif op:
                m = re.search(r"no backend supports it \((.*)\)$", d) or re.search(r"\): (.*)$", d)
                key = "%s: %s" % (op, normalise(m.group(1) if m else d))
                variant[key] += 1
                examples.setdefault(("v", key), t["name"])
            else:
                key = normalise(re.sub(r"^load: [^:]*: ", "load: ", d))
                other_unsup[key] += 1
                examples.setdefault(("o", key), t["name"])
        elif st == "error":
            key = normalise(re.sub(r"^load: [^:]*: ", "load: ", d))
            key = re.sub(r"^read [^:]*: ", "read input: ", key)
            errors[key] += 1
            examples.setdefault(("e", key), t["name"])
        elif st == "failed":
            failed[t.get("op", "?")] += 1
            examples.setdefault(("f", t.get("op", "?")), t["name"] + ": " + d)

    def section(title, counter, tag):
        out.append("")
        out.append("%s (%d tests):" % (title, sum(counter.values())))
        for key, n in counter.most_common(a.top):
            out.append("  %4d  %s   [e.g. %s]" % (n, key, examples[(tag, key)]))
        if len(counter) > a.top:
            out.append("  ... %d more" % (len(counter) - a.top))

    section("unsupported: ops unknown to netrun", unknown, "u")
    section("unsupported: known ops, variant not supported (op: backend's reason)", variant, "v")
    section("unsupported: other (types netrun cannot represent)", other_unsup, "o")
    section("error: messages (node names and numbers blanked)", errors, "e")
    section("failed: wrong values, by op", failed, "f")
    print("\n".join(out))


if __name__ == "__main__":
    main()
