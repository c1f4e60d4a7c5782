#!/usr/bin/env python3
"""Runs netrun on every hostile model of tests/corpus/models and checks that it fails cleanly.

usage: run_corpus.py --netrun PATH [--models DIR] [--timeout 20] [--valgrind [--subset N]] [--only NAME,...]

For each model: `netrun MODEL --backend cpu --iterations 1 --warmup 0 -q` (random inputs) must end with an
exit code listed for it in expect.json (always 0, 1 or 2: never a signal, never past the timeout), and on
exit 1 or 2 print an error on stderr that contains one of the listed words (it names what went wrong and
where). With --valgrind the runs go through valgrind memcheck (a spread-out subset of N files) and any
invalid read/write, use of uninitialised memory or definite leak fails the file.
Prints one line per file, then 'N passed, N failed'; exit 1 when any failed.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile


def special_cases(tmp, models):
    """Files git cannot hold, made here: a model path that is a FIFO (opening it for reading would block until
    a writer comes), a socket, a directory, a character device, and a model whose external data is a FIFO in
    its folder. Each must be refused before anything blocks. (name, path, words)"""
    cases = []
    fifo = os.path.join(tmp, "model.fifo")
    os.mkfifo(fifo)
    cases.append(("<fifo as model>", fifo, ["FIFO", "regular file"]))
    sock_path = os.path.join(tmp, "model.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sock_path)
    cases.append(("<socket as model>", sock_path, ["socket", "regular file"]))
    cases.append(("<directory as model>", tmp, ["directory", "regular file"]))
    if os.path.exists("/dev/zero"):
        cases.append(("<character device as model>", "/dev/zero", ["device", "regular file"]))
    ext_dir = os.path.join(tmp, "ext")
    os.makedirs(ext_dir)
    os.mkfifo(os.path.join(ext_dir, "weights.bin"))
    src = os.path.join(models, "external_missing_file.onnx")  # external data named no_such_weights.bin
    with open(src, "rb") as f:
        data = f.read().replace(b"no_such_weights.bin", b"weights.bin\0\0\0\0\0\0\0\0"[:19])
    model_path = os.path.join(ext_dir, "model.onnx")
    with open(model_path, "wb") as f:
        f.write(data)
    cases.append(("<external data is a FIFO>", model_path, ["FIFO", "regular file"]))
    return cases, sock


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--models", default=os.path.join(here, "models"))
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--valgrind", action="store_true")
    ap.add_argument("--subset", type=int, default=12)
    ap.add_argument("--only", default="")
    a = ap.parse_args()

    with open(os.path.join(a.models, "expect.json")) as f:
        expect = json.load(f)
    names = sorted(expect)
    missing = [n for n in names if not os.path.exists(os.path.join(a.models, n))]
    if missing:
        print("corpus files missing (rerun make_corpus.py): " + ", ".join(missing))
        return 1
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    prefix = []
    timeout = a.timeout
    if a.valgrind:
        vg = shutil.which("valgrind")
        if not vg:
            print("valgrind not installed: skipped")
            return 77
        # not the cases that run to a limit (100,000 Loop iterations, a memory budget): minutes under memcheck
        names = [n for n in names if not expect[n].get("args")]
        step = max(1, len(names) // a.subset)
        names = names[::step][:a.subset]
        supp = os.path.join(here, "valgrind.supp")
        prefix = [vg, "--tool=memcheck", f"--suppressions={supp}", "--error-exitcode=99", "--leak-check=full",
                  "--errors-for-leak-kinds=definite", "--track-origins=no", "-q"]
        timeout = a.timeout * 30  # memcheck is 20-50x slower

    # Under ASan a model's 4 TiB request must come back as NULL, as malloc does (netrun then reports out of
    # memory), not abort the process: that is what an ordinary build does.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1").lstrip(":")
    failed = 0
    if not a.only and not a.valgrind:
        tmp = tempfile.mkdtemp(prefix="netrun-corpus-")
        try:
            cases, sock = special_cases(tmp, a.models)
            for name, path, words in cases:
                cmd = [a.netrun, path, "--backend", "cpu", "--iterations", "1", "--warmup", "0", "-q"]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
                    err = r.stderr.strip()
                    ok = r.returncode == 2 and any(w.lower() in err.lower() for w in words)
                    problem = None if ok else f"exit {r.returncode}, stderr: {err[-500:]}"
                except subprocess.TimeoutExpired:
                    problem, err = f"blocked: no answer after {a.timeout:g} s", ""
                if problem:
                    failed += 1
                    print(f"FAIL {name}: {problem}")
                else:
                    print(f"ok   {name} (exit 2) {err.splitlines()[0][:150] if err else ''}")
            sock.close()
            names_count = len(cases)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        names_count = 0
    for name in names:
        exp = expect[name]
        cmd = prefix + [a.netrun, os.path.join(a.models, name), "--backend", "cpu", "--threads", "1",
                        "--iterations", "1", "--warmup", "0", "-q"] + exp.get("args", [])
        problem = None
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            problem = f"timed out after {timeout:g} s"
            r = None
        err = r.stderr.strip() if r else ""
        if r is not None:
            if r.returncode < 0:
                problem = f"killed by signal {-r.returncode}"
            elif re.search(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:", err):
                problem = "sanitizer report"  # ASan's default exit code is 1, which would pass as an error
            elif a.valgrind and r.returncode == 99:
                problem = "valgrind memcheck errors"
            elif a.valgrind and re.search(r"Invalid (read|write)|uninitialised|definitely lost", err):
                problem = "valgrind memcheck errors"
            elif r.returncode not in exp["exit"]:
                problem = f"exit {r.returncode}, expected one of {exp['exit']}"
            elif r.returncode in (1, 2):
                # the model's own path does not count as naming the problem
                low = err.replace(os.path.join(a.models, name), "<model>").replace(name, "<model>").lower()
                if not err:
                    problem = f"exit {r.returncode} with an empty stderr"
                elif exp["words"] and not any(w.lower() in low for w in exp["words"]):
                    problem = f"error message names none of {exp['words']}"
        code = "timeout" if r is None else r.returncode
        if problem:
            failed += 1
            print(f"FAIL {name}: {problem}\n     stderr: {err[-1500:]}")
        else:
            first = err.splitlines()[0][:150] if err else ""
            print(f"ok   {name} (exit {code}) {first}")
        sys.stdout.flush()
    print(f"{len(names) + names_count - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
