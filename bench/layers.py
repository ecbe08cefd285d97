#!/usr/bin/env python3
"""BPF run time per I/O of every iostrata layer, with bio linking on, under io_uring O_DIRECT.

fio (ioengine=io_uring, 4 KiB random reads, qd 32) drives a tmpfs-backed loop device, once with
iostrata's block layer alone and once with all layers (block, uring, aio, syscall; the block
programs then link each request to its bios). Figures are kernel.bpf_stats_enabled's
run_time_ns of each program family, divided by the I/Os fio completed; IOPS are fio's. The
sysctl and the device are restored on exit. Medians of --runs alternating runs.

Usage: bench/layers.py [--seconds S] [--runs N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from block import IOSTRATA, prog_stats, sh, wait_for  # noqa: E402

FAMILIES = {"block": ("tp_btf_block", "raw_tp_block"), "uring": ("tp_btf_io_uring",
            "raw_tp_io_uring"), "aio": ("aio_",), "syscall": ("sce_", "scx_")}
CONFIGS = {"block only": ["-l", "block"], "all layers": ["-l", "block,uring,aio,syscall"]}


def fio(dev, seconds):
    import json
    out = sh("fio", "--name=bench", f"--filename={dev}", "--direct=1", "--ioengine=io_uring",
             "--iodepth=32", "--rw=randread", "--bs=4k", "--time_based", f"--runtime={seconds}",
             "--output-format=json")
    job = json.loads(out)["jobs"][0]
    return job["read"]["total_ios"], job["read"]["iops"]


def run(dev, seconds, tracer_args):
    every = tuple(p for f in FAMILIES.values() for p in f)
    tracer = subprocess.Popen([str(IOSTRATA), *tracer_args, "-j"], stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(prog_stats(("tp_btf_block", "raw_tp_block"))) >= 3,
                 "iostrata to attach")
        before = prog_stats(every)
        ios, iops = fio(dev, seconds)
        after = prog_stats(every)
    finally:
        tracer.send_signal(2)
        tracer.wait(timeout=30)
    per = {}
    for fam, prefixes in FAMILIES.items():
        ns = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after if k.startswith(prefixes))
        per[fam] = ns / ios
    return ios, iops, per


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: must run as root")
    for tool in ("fio", "bpftool", "losetup"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (make deps)")
    work = tempfile.mkdtemp(prefix="iostrata-bench.")
    stats_path = Path("/proc/sys/kernel/bpf_stats_enabled")
    old_stats = stats_path.read_text().strip()
    dev = None
    try:
        sh("mount", "-t", "tmpfs", "-o", "size=600M", "tmpfs", work)
        img = Path(work) / "disk.img"
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        dev = sh("losetup", "-f", "--show", "--direct-io=on", str(img)).strip()
        sh("dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=512", "oflag=direct")
        stats_path.write_text("1")
        print(f"machine: {os.uname().machine}, {os.cpu_count()} CPUs, kernel {os.uname().release}")
        print(f"load: fio io_uring randread 4k qd32 O_DIRECT on a tmpfs-backed loop device, "
              f"{args.seconds}s x {args.runs} runs per configuration")
        res = {c: [] for c in CONFIGS}
        for r in range(args.runs):
            for name, targs in CONFIGS.items():
                ios, iops, per = run(dev, args.seconds, targs)
                res[name].append((iops, per))
                print(f"run {r + 1} {name:<11} {iops:9.0f} IOPS  " +
                      "  ".join(f"{f} {v:6.1f}" for f, v in per.items() if v) +
                      f"  = {sum(per.values()):6.1f} ns/I/O")
        print("\nmedians")
        print(f"{'configuration':<14} {'IOPS':>9} " + " ".join(f"{f:>8}" for f in FAMILIES) +
              f" {'total':>8}  (BPF ns per I/O)")
        for name, rows in res.items():
            iops = statistics.median(r[0] for r in rows)
            fam = {f: statistics.median(r[1][f] for r in rows) for f in FAMILIES}
            print(f"{name:<14} {iops:9.0f} " + " ".join(f"{fam[f]:8.1f}" for f in FAMILIES) +
                  f" {sum(fam.values()):8.1f}")
        print("goal (issue #4): <= 400 ns per I/O with all layers and linking on")
    finally:
        stats_path.write_text(old_stats)
        if dev:
            subprocess.run(["losetup", "-d", dev])
        subprocess.run(["umount", work], stderr=subprocess.DEVNULL)
        os.rmdir(work)


if __name__ == "__main__":
    main()
