#!/usr/bin/env python3
"""Which block completions reach no BPF program on this host, and on top of which tasks.

iostrata counts a request whose completion no program saw as drops.complete_unseen
(docs/trust.md). This check finds where such completions happen: over one window, the same
event (block:block_rq_complete of one disk) is counted three ways, by the kernel's own
/sys/block/DISK/stat, by a tracefs instance (ftrace's ring buffer, no BPF), and by a tp_btf
program (bin/bench-unseen), the last two by the thread each completion ran on top of (a
completion in softirq runs on whatever thread the CPU was running), matched by thread id and
shown by name (bench/completions.py):

    thread the completion ran on top of    tracefs       BPF  missed
    <idle>                                  179688    179688       0
    tokio-rt-worker                              9         0       9   process 1 (process_api)

The window opens and closes on an idle disk whose counters did not move while both counters
were switched (else it is retried at the start, refused at the end), so the three counts cover
the same completions. The load is fio (io_uring, 4 KiB random reads, O_DIRECT) paced under what
the tracefs buffer holds; any event the buffer lost makes the run inexact (exit 2).

Exit 0: BPF saw every completion tracefs recorded; 1: it missed some (the table says on top of
which tasks); 2: the window was inexact, rerun.

Usage: bench/unseen.py [--seconds S] [--iops N] [--dir DIR | --dev DEV]   (make check-unseen)
  --dir DIR  load a temporary file in DIR, on the disk that holds it (default /var/tmp)
  --dev DEV  load the whole block device DEV (/dev/loopN, ...); refused if mounted
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from completions import Counters, completions, disk_of, idle  # noqa: E402


def mounted(dev):
    real = os.path.realpath(dev)
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if os.path.realpath(line.split()[0]) == real:
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--iops", type=int, default=3000,
                    help="fio's pace: the tracefs buffer must hold every event of the window")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--dir", default="/var/tmp")
    where.add_argument("--dev")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("check-unseen: needs root (loads BPF, uses tracefs)")
    if args.seconds < 1 or args.iops < 1:
        sys.exit("check-unseen: --seconds and --iops must be at least 1")
    if args.dev:
        if not Path(args.dev).is_block_device():
            sys.exit(f"check-unseen: {args.dev} is not a block device")
        if mounted(args.dev):
            sys.exit(f"check-unseen: {args.dev} is mounted; refusing to load it")
        disk = Path(f"/sys/class/block/{os.path.basename(os.path.realpath(args.dev))}").name
        if not Path(f"/sys/block/{disk}").exists():
            sys.exit(f"check-unseen: {args.dev} is not a whole disk")
        target, size = args.dev, "64m"
    else:
        disk = disk_of(args.dir)
        target, size = None, "256m"
    # ~100 bytes an event in the ring buffer; room for the whole window on one CPU, twice over
    buffer_kb = max(4096, args.iops * (args.seconds + 5) * 200 // 1024)

    path = counters = None
    try:
        if target is None:
            fd, path = tempfile.mkstemp(prefix="iostrata-unseen.", dir=args.dir)
            os.close(fd)
            subprocess.run(["fio", "--name=fill", f"--filename={path}", f"--size={size}",
                            "--rw=write", "--bs=1m", "--direct=1", "--output=/dev/null"],
                           check=True)
            subprocess.run(["sync"], check=True)
            target = path
        counters = Counters(disk, buffer_kb)
        for attempt in range(10):
            idle(disk)
            before = completions(disk)
            counters.on()
            if completions(disk) == before:
                break  # nothing completed while the two counters were switched on
            counters.off()
        else:
            sys.exit("check-unseen: the disk completed requests during every one of 10 starts")
        fio = subprocess.run(["fio", "--name=unseen", f"--filename={target}", f"--size={size}",
                              "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                              "--iodepth=32", f"--rate_iops={args.iops}", "--time_based",
                              f"--runtime={args.seconds}", "--output-format=json"],
                             check=True, capture_output=True, text=True)
        ios = json.loads(fio.stdout)["jobs"][0]["read"]["total_ios"]
        was_idle = idle(disk)
        after = completions(disk)
        counters.off()
        moved = completions(disk) - after
        seen = counters.result()
    finally:
        if counters:
            counters.close()
        if path:
            os.unlink(path)

    kernel = after - before
    print(f"check-unseen: /dev/{disk}, fio io_uring randread 4k qd32 at {args.iops} IOPS, "
          f"{args.seconds} s ({ios} reads)")
    missed = seen.table()
    tsum, bsum = sum(seen.traced.values()), sum(seen.bpf.values()) + seen.unrecorded
    print(f"{'all':<36} {tsum:>9} {bsum:>9} {tsum - bsum:>7}   "
          f"(/sys/block/{disk}/stat: {kernel} completed)")
    if seen.unrecorded:
        print(f"{seen.unrecorded} completions BPF saw are in no row: its table was full")
    if moved or seen.lost or not was_idle or seen.more:
        print("INEXACT: " + "; ".join(x for x in (
            f"the disk completed {moved} requests while the counters were being switched off"
            if moved else "",
            f"tracefs lost {seen.lost} events (lower --iops)" if seen.lost else "",
            "the disk was not idle at the end of the window" if not was_idle else "",
            "BPF counted more completions than tracefs recorded on top of threads "
            + ", ".join(str(t) for t in seen.more) if seen.more else "") if x)
            + "; rerun")
        return 2
    if not missed and tsum == bsum:
        print("SEEN: a BPF program ran for every completion the kernel traced")
        return 0
    on_top = ", ".join(f"{c} {n}" for c, n in missed.items())
    print(f"MISSED: {tsum - bsum} of {tsum} completions ran no BPF program"
          + (f"; by the thread they ran on top of: {on_top}" if on_top else "")
          + " (docs/trust.md, complete_unseen)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
