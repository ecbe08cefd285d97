#!/usr/bin/env python3
"""iostrata-load against fio, side by side, in one run, on the same file.

For each row (engine, queue depth) both tools do 4 KiB random O_DIRECT reads of the same
pre-laid-out file for the same time, alternating, --runs times; the table gives medians.
IOPS come from each tool's JSON; CPU comes from the kernel's accounting of each tool's whole
process tree (os.times() children: every thread and child, helper threads included) divided by the I/Os it
did, so both are measured the same way.

Usage: bench/load.py [--seconds S] [--runs N] [--dir DIR] [--size SIZE]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
LOAD = TOP / "bin" / "iostrata-load"

ROWS = [  # (label, our engine, fio engine, qd)
    ("psync qd1", "psync", "psync", 1),
    ("libaio qd1", "libaio", "libaio", 1),
    ("libaio qd32", "libaio", "libaio", 32),
    ("posixaio qd32", "posixaio", "posixaio", 32),
    ("io_uring qd1", "io_uring", "io_uring", 1),
    ("io_uring qd32", "io_uring", "io_uring", 32),
]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed: {r.stderr.strip()}")
    return r.stdout


def timed(cmd):
    """Run cmd; return (stdout, user+system CPU seconds of it and everything it waited for)."""
    before = os.times()
    out = run(cmd)
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    return out, cpu


def ours(engine, qd, path, secs):
    out, cpu = timed([str(LOAD), "--engine", engine, "--qd", str(qd), "--rw", "randread",
                      "--bs", "4k", "--direct", "--file", path, "--runtime", f"{secs}s",
                      "--json"])
    rd = json.loads(out)["total"]["read"]
    return rd["iops"], cpu / max(rd["total_ios"], 1)


def fio(engine, qd, path, secs, size):
    out, cpu = timed(["fio", "--name=bench", f"--filename={path}", f"--ioengine={engine}",
                      f"--iodepth={qd}", "--rw=randread", "--bs=4k", "--direct=1",
                      f"--size={size}", "--time_based", f"--runtime={secs}",
                      "--output-format=json"])
    rd = json.loads(out)["jobs"][0]["read"]
    return rd["iops"], cpu / max(rd["total_ios"], 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp", help="where the shared file goes (a disk)")
    ap.add_argument("--size", default="256m")
    args = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("bench: fio is missing (make deps)")

    with tempfile.TemporaryDirectory(prefix="iostrata-bench-load.", dir=args.dir) as d:
        path = str(Path(d) / "shared")
        # lay the file out once, with iostrata-load itself, and keep it for both tools
        run([str(LOAD), "--engine", "psync", "--rw", "read", "--ios", "1", "--size", args.size,
             "--file", path, "--keep", "--json"])
        print(f"machine: {os.uname().machine}, {os.cpu_count()} CPUs, kernel "
              f"{os.uname().release}; {path} ({args.size}), 4 KiB random O_DIRECT reads, "
              f"{args.seconds}s per run, median of {args.runs} alternating runs")
        print(f"{'row':<15} {'fio IOPS':>9} {'ours IOPS':>9} {'ratio':>6}   "
              f"{'fio CPU/IO':>10} {'ours CPU/IO':>11} {'ratio':>6}")
        for label, eng, fio_eng, qd in ROWS:
            f_iops, f_cpu, o_iops, o_cpu = [], [], [], []
            for _ in range(args.runs):
                i, c = fio(fio_eng, qd, path, args.seconds, args.size)
                f_iops.append(i)
                f_cpu.append(c)
                i, c = ours(eng, qd, path, args.seconds)
                o_iops.append(i)
                o_cpu.append(c)
            fi, oi = statistics.median(f_iops), statistics.median(o_iops)
            fc, oc = statistics.median(f_cpu), statistics.median(o_cpu)
            print(f"{label:<15} {fi:>9.0f} {oi:>9.0f} {oi / fi:>6.2f}   "
                  f"{fc * 1e6:>8.2f}us {oc * 1e6:>9.2f}us {oc / fc:>6.2f}")
        print("ratio: iostrata-load / fio (goal: IOPS >= 1.00, CPU per I/O <= 1.00)")


if __name__ == "__main__":
    main()
