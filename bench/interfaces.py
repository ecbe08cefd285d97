#!/usr/bin/env python3
"""The Linux I/O interface comparison, measured on this machine by iostrata-load.

One command (`make interfaces`) runs 4 KiB random O_DIRECT reads through every engine at queue
depths 1, 32 and 128 on one file and writes docs/interfaces.md: IOPS per depth, p99 latency,
CPU per I/O (whole process, helper threads included) and submission cost (mean time from an I/O
being prepared to its submit call returning) at depth 32.

psync has no queue: depth N means N threads. threadpool runs min(N, 32) workers.

Usage: bench/interfaces.py [--seconds S] [--dir DIR] [--out FILE]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
LOAD = TOP / "bin" / "iostrata-load"
ENGINES = ["psync", "libaio", "posixaio", "io_uring", "threadpool"]
DEPTHS = [1, 32, 128]


def load(args):
    before = os.times()
    r = subprocess.run([str(LOAD), *args, "--json"], capture_output=True, text=True)
    after = os.times()
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1]
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    return json.loads(r.stdout), cpu


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns < 1000:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    return f"{ns / 1e6:.2f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--out", default=str(TOP / "docs" / "interfaces.md"))
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="iostrata-interfaces.", dir=args.dir) as d:
        path = str(Path(d) / "shared")
        subprocess.run([str(LOAD), "--engine", "psync", "--rw", "read", "--ios", "1",
                        "--size", "512m", "--file", path, "--keep"], check=True,
                       capture_output=True)
        for eng in ENGINES:
            row = {"engine": eng, "iops": {}, "note": ""}
            for qd in DEPTHS:
                opts = ["--engine", eng, "--rw", "randread", "--bs", "4k", "--file", path,
                        "--runtime", f"{args.seconds}s"]
                if eng == "psync":
                    opts += ["--jobs", str(qd)]
                else:
                    opts += ["--qd", str(qd)]
                if eng == "threadpool":
                    opts += ["--workers", str(min(qd, 32))]
                doc, cpu = load(opts)
                print(f"{eng:<11} depth {qd:<4} ", end="", file=sys.stderr)
                if doc is None:
                    row["iops"][qd] = None
                    row["note"] = cpu
                    print(f"failed: {cpu}", file=sys.stderr)
                    continue
                rd = doc["total"]["read"]
                row["iops"][qd] = rd["iops"]
                print(f"{rd['iops']} IOPS", file=sys.stderr)
                if qd == 32:
                    pct = rd["lat_ns"].get("percentile", {})
                    row["p99"] = pct.get("99.000000")
                    row["cpu"] = cpu / max(rd["total_ios"], 1) * 1e9
                    row["slat"] = rd["slat_ns"]["mean"] if rd["slat_ns"]["N"] else None
            rows.append(row)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    u = os.uname()
    lines = [
        "# Linux I/O interfaces compared, on one machine",
        "",
        f"Produced by `make interfaces` (bench/interfaces.py) on {now}: {u.machine}, "
        f"{os.cpu_count()} CPUs, kernel {u.release}, a 512 MiB file on the filesystem of "
        f"`{args.dir}`, 4 KiB random O_DIRECT reads, {args.seconds} s per cell, "
        "iostrata-load's own clock and histogram.",
        "",
        "| engine | IOPS qd1 | IOPS qd32 | IOPS qd128 | p99 at qd32 | CPU per I/O at qd32 "
        "| submission at qd32 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        iops = [f"{r['iops'][q]:,}" if r["iops"].get(q) is not None else "-" for q in DEPTHS]
        lines.append(f"| {r['engine']} | {' | '.join(iops)} | {fmt_ns(r.get('p99'))} | "
                     f"{fmt_ns(r.get('cpu'))} | {fmt_ns(r.get('slat'))} |")
    lines += [
        "",
        "- psync at depth N is N threads doing pread; threadpool hands each I/O to one of "
        "min(N, 32) workers.",
        "- CPU per I/O is user + system time of the whole process (every thread: glibc's POSIX "
        "aio threads, io_uring's kernel workers, the pool) divided by the I/Os done.",
        "- Submission is the mean time from an I/O being prepared to its submit call "
        "returning (slat); synchronous engines have none.",
        "- glibc serialises POSIX aio requests per file descriptor, so posixaio at depth 32 "
        "on one file behaves close to depth 1.",
        "- One run per cell on a shared, noisy machine: compare rows within one table, not "
        "across machines.",
    ]
    notes = [f"- {r['engine']}: {r['note']}" for r in rows if r["note"]]
    if notes:
        lines += ["", "Failures:", *notes]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
