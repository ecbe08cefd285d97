#!/usr/bin/env python3
"""BPF run time per block I/O of iostrata's block layer, under fio driving a loop device hard.

Figures come from kernel.bpf_stats_enabled: run_time_ns / run_cnt of each program (bpftool),
divided by the I/Os fio completed. Measured in the same run, beside the tracer:
  - floor: empty tp_btf programs on the same events (bin/bench-floor), i.e. what bpf_stats
    charges on this machine for a program that does nothing;
and in separate runs on the same device, for reference:
  - bpftrace: the biolatency one-liner (classic tracepoints, a hash keyed by dev+sector).
The loop device sits on tmpfs so the device is fast and the tracer's cost is what shows.
The sysctl, tracefs and every device are restored on exit.

Usage: bench/block.py [--seconds S] [--runs N] [--tracer-args "-D -F"]
"""
import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
IOSTRATA = TOP / "bin" / "iostrata"
FLOOR = TOP / "bin" / "bench-floor"
BIOLATENCY = ("tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; } "
              "tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ { "
              "@usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000); "
              "delete(@start[args->dev, args->sector]); }")


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def prog_stats(prefixes):
    """{name: (run_time_ns, run_cnt)} of loaded programs whose name starts with a prefix."""
    out = {}
    for p in json.loads(sh("bpftool", "-j", "prog", "show") or "[]"):
        name = p.get("name", "")
        if name.startswith(prefixes):
            out[f"{name}#{p['id']}"] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return out


def fio(dev, seconds):
    out = sh("fio", "--name=bench", f"--filename={dev}", "--direct=1", "--ioengine=libaio",
             "--iodepth=32", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--time_based",
             f"--runtime={seconds}", "--group_reporting", "--output-format=json")
    job = json.loads(out)["jobs"][0]
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    return ios, job["read"]["iops"] + job["write"]["iops"]


def wait_for(pred, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def run_iostrata(dev, seconds, tracer_args):
    """One fio run with iostrata and the empty floor programs attached side by side."""
    tracer = subprocess.Popen([str(IOSTRATA), "-d", Path(dev).name, *tracer_args, "-j"],
                              stdout=subprocess.DEVNULL)
    floor = subprocess.Popen([str(FLOOR)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert floor.stdout.readline().strip() == "attached", "bench-floor did not attach"
        wait_for(lambda: len(prog_stats(("tp_btf_block", "raw_tp_block"))) >= 3,
                 "iostrata to attach")
        ios, iops = fio(dev, seconds)
        stats = prog_stats(("tp_btf_block", "raw_tp_block", "floor_"))
    finally:
        tracer.send_signal(2)
        tracer.wait(timeout=30)
        floor.stdin.close()
        floor.wait(timeout=30)
    return ios, iops, stats


def run_bpftrace(dev, seconds):
    bt = subprocess.Popen(["bpftrace", "-e", BIOLATENCY], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(prog_stats(("block_rq_",))) >= 2, "bpftrace to attach", 60)
        ios, iops = fio(dev, seconds)
        stats = prog_stats(("block_rq_",))
    finally:
        bt.send_signal(2)
        bt.wait(timeout=30)
    return ios, iops, stats


def per_io(stats, ios, prefix=""):
    return sum(ns for name, (ns, _) in stats.items() if name.startswith(prefix)) / ios


@contextlib.contextmanager
def bench_env(tracefs=False):
    """A 512 MiB loop device on tmpfs (yielded), kernel.bpf_stats_enabled on, and tracefs
    mounted if asked (bpftrace's classic tracepoints); all of it undone on the way out."""
    # SIGTERM/SIGHUP (a kill, a closed terminal) unwind like Ctrl-C, through every finally:
    # the tracer stopped, the sysctl restored, the device and the tmpfs gone
    old_handlers = {sig: signal.signal(sig, _exit_on_signal) for sig in (signal.SIGTERM,
                                                                          signal.SIGHUP)}
    work = tempfile.mkdtemp(prefix="iostrata-bench.")
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    old_stats = stats.read_text().strip()
    tracefs_here = False
    dev = None
    try:
        sh("mount", "-t", "tmpfs", "-o", "size=600M", "tmpfs", work)
        img = Path(work) / "disk.img"
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        dev = sh("losetup", "-f", "--show", "--direct-io=on", str(img)).strip()
        sh("dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=512", "oflag=direct")
        stats.write_text("1")
        if tracefs and not os.path.ismount("/sys/kernel/tracing"):
            sh("mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing")
            tracefs_here = True
        yield dev
    finally:
        stats.write_text(old_stats)
        if tracefs_here:
            subprocess.run(["umount", "/sys/kernel/tracing"])
        if dev:
            subprocess.run(["losetup", "-d", dev])
        subprocess.run(["umount", work], stderr=subprocess.DEVNULL)
        os.rmdir(work)
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)


def _exit_on_signal(sig, _frame):
    sys.exit(128 + sig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tracer-args", default="", help="extra iostrata options, e.g. '-D -F'")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: must run as root")
    for tool in ("fio", "bpftool", "losetup"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (make deps)")

    bpftrace = shutil.which("bpftrace")
    with bench_env(tracefs=bool(bpftrace)) as dev:

        print(f"machine: {os.uname().machine}, {os.cpu_count()} CPUs, kernel {os.uname().release}")
        print(f"load: fio libaio randrw 70/30 4k qd32 on a tmpfs-backed loop device, "
              f"{args.seconds}s x {args.runs} runs; iostrata -d DISK {args.tracer_args}".rstrip())
        print(f"{'run':<4} {'program':<28} {'events':>10} {'ns/event':>9} {'ns/I/O':>8}")
        rows = {"iostrata": [], "floor": [], "bpftrace": [], "iops_iostrata": [],
                "iops_bpftrace": []}
        for r in range(1, args.runs + 1):
            ios, iops, stats = run_iostrata(dev, args.seconds, args.tracer_args.split())
            for name, (ns, cnt) in sorted(stats.items()):
                print(f"{r:<4} {name:<28} {cnt:>10} {ns // max(cnt, 1):>9} {ns / ios:>8.1f}")
            ours = per_io(stats, ios, "tp_btf_block") + per_io(stats, ios, "raw_tp_block")
            floor = per_io(stats, ios, "floor_")
            rows["iostrata"].append(ours)
            rows["floor"].append(floor)
            rows["iops_iostrata"].append(iops)
            print(f"{r:<4} {'iostrata, all programs':<28} {ios:>10} {'':>9} {ours:>8.1f}"
                  f"   ({iops:.0f} IOPS)")
            print(f"{r:<4} {'floor: 3 empty programs':<28} {ios:>10} {'':>9} {floor:>8.1f}")
            if bpftrace:
                ios, iops, stats = run_bpftrace(dev, args.seconds)
                bt = per_io(stats, ios)
                rows["bpftrace"].append(bt)
                rows["iops_bpftrace"].append(iops)
                print(f"{r:<4} {'bpftrace biolatency':<28} {ios:>10} {'':>9} {bt:>8.1f}"
                      f"   ({iops:.0f} IOPS)")

        med = {k: statistics.median(v) for k, v in rows.items() if v}
        print("\nmedians, BPF run time per block I/O (bpf_stats):")
        print(f"  iostrata block layer (wait, device, total): {med['iostrata']:7.1f} ns")
        print(f"  floor, 3 empty programs on the same events:  {med['floor']:7.1f} ns")
        print(f"  iostrata above the floor:                    "
              f"{med['iostrata'] - med['floor']:7.1f} ns")
        if "bpftrace" in med:
            print(f"  bpftrace biolatency (device stage only):     {med['bpftrace']:7.1f} ns"
                  f"   ratio bpftrace/iostrata {med['bpftrace'] / med['iostrata']:.2f}")
        print("  goal (issue #2): <= 100 ns per I/O")


if __name__ == "__main__":
    main()
