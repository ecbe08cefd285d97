#!/usr/bin/env python3
"""Which block completions reach no BPF program on this host, and on top of which tasks.

iostrata counts a request whose completion no program saw as drops.complete_unseen
(docs/trust.md). This check finds where such completions happen: over one window, the same
event (block:block_rq_complete of one disk) is counted three ways, by the kernel's own
/sys/block/DISK/stat, by a tracefs instance (ftrace's ring buffer, no BPF), and by a tp_btf
program (bin/bench-unseen), the last two by the task each completion ran on top of (a
completion in softirq runs on whatever task the CPU was running). Per task name:

    task                  tracefs       BPF   missed
    swapper/1              179688    179688        0
    tokio-rt-worker             9         0        9

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
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exact import disk_of, idle, stat  # noqa: E402

TOP = Path(__file__).resolve().parent.parent
HELPER = TOP / "bin" / "bench-unseen"
TRACEFS = Path("/sys/kernel/tracing")
# "           <idle>-0       [001] ..s1.  1234.567890: block_rq_complete: 254,0 R () ..."
EVENT = re.compile(r"^\s*(.*)-(\d+)\s+\[(\d+)\].*?\sblock_rq_complete:")


def completions(disk):
    return sum(stat(disk).values())


def mounted(dev):
    real = os.path.realpath(dev)
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if os.path.realpath(line.split()[0]) == real:
            return True
    return False


class Tracefs:
    """A tracefs instance recording one disk's block_rq_complete, mounting tracefs if need be;
    close() removes the instance and unmounts what it mounted."""

    def __init__(self, devt, buffer_kb):
        self.mounted_here = False
        if not (TRACEFS / "instances").is_dir():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
            self.mounted_here = True
        self.dir = TRACEFS / "instances" / f"iostrata-unseen-{os.getpid()}"
        self.dir.mkdir()
        self.event = self.dir / "events" / "block" / "block_rq_complete"
        self.write("tracing_on", "0")
        self.write("buffer_size_kb", str(buffer_kb))
        (self.event / "filter").write_text(f"dev == {devt}\n")
        (self.event / "enable").write_text("1\n")

    def write(self, name, value):
        (self.dir / name).write_text(value + "\n")

    def on(self, flag):
        self.write("tracing_on", "1" if flag else "0")

    def clear(self):
        self.write("trace", "")

    def lost(self):
        n = 0
        for f in (self.dir / "per_cpu").glob("cpu*/stats"):
            for line in f.read_text().splitlines():
                if line.startswith("overrun:") or line.startswith("dropped events:"):
                    n += int(line.split(":")[1])
        return n

    def by_task(self):
        """{comm: count}, and {comm: set of thread ids}, of the recorded completions."""
        counts, tids = {}, {}
        with open(self.dir / "trace") as f:
            for line in f:
                m = EVENT.match(line)
                if m:
                    comm, tid = m.group(1).strip(), int(m.group(2))
                    if tid == 0:  # tracefs's <idle> is the CPU's idle task, swapper/CPU to BPF
                        comm = f"swapper/{int(m.group(3))}"
                    elif comm == "<...>":  # a thread tracefs's table of names no longer held
                        comm = thread_name(tid)
                    counts[comm] = counts.get(comm, 0) + 1
                    tids.setdefault(comm, set()).add(tid)
        return counts, tids

    def close(self):
        try:
            self.on(False)
            (self.event / "enable").write_text("0\n")
            self.dir.rmdir()
        finally:
            if self.mounted_here:
                subprocess.run(["umount", str(TRACEFS)], check=False)


class Helper:
    def __init__(self, devt):
        self.p = subprocess.Popen([str(HELPER), str(devt)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "attached":
            self.p.wait()
            sys.exit(f"check-unseen: bench-unseen did not attach: {self.p.stderr.read().strip()}")

    def say(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        if self.p.stdout.readline().strip() != "ok":
            sys.exit(f"check-unseen: bench-unseen did not answer {cmd!r}")

    def finish(self):
        out, err = self.p.communicate(timeout=30)
        counts, unrecorded = {}, 0
        for line in out.splitlines():
            if line.startswith("unrecorded "):
                unrecorded = int(line.split()[1])
            elif "\t" in line:
                n, comm = line.split("\t", 1)
                counts[comm] = int(n)
        if self.p.returncode:
            sys.exit(f"check-unseen: bench-unseen exited {self.p.returncode}: {err.strip()}")
        return counts, unrecorded

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def thread_name(tid):
    try:
        return Path(f"/proc/{tid}/comm").read_text().strip()
    except OSError:
        return "<...>"  # it has exited: its name is not known here


def process_of(tids):
    """'process 1 (process_api)' for the threads still alive, or ''."""
    out = set()
    for tid in sorted(tids):
        try:
            st = Path(f"/proc/{tid}/status").read_text()
        except OSError:
            continue
        tgid = int(re.search(r"^Tgid:\s+(\d+)", st, re.M).group(1))
        if tgid:
            name = Path(f"/proc/{tgid}/comm").read_text().strip()
            out.add(f"process {tgid} ({name})")
    return ", ".join(sorted(out))


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
    major, minor = (int(x) for x in Path(f"/sys/block/{disk}/dev").read_text().split(":"))
    devt = major << 20 | minor
    # ~100 bytes an event in the ring buffer; room for the whole window on one CPU, twice over
    buffer_kb = max(4096, args.iops * (args.seconds + 5) * 200 // 1024)

    path = None
    tfs = helper = None
    try:
        if target is None:
            fd, path = tempfile.mkstemp(prefix="iostrata-unseen.", dir=args.dir)
            os.close(fd)
            subprocess.run(["fio", "--name=fill", f"--filename={path}", f"--size={size}",
                            "--rw=write", "--bs=1m", "--direct=1", "--output=/dev/null"],
                           check=True)
            subprocess.run(["sync"], check=True)
            target = path
        tfs = Tracefs(devt, buffer_kb)
        helper = Helper(devt)
        for attempt in range(10):
            idle(disk)
            before = completions(disk)
            tfs.clear()
            helper.say("on")
            tfs.on(True)
            if completions(disk) == before:
                break  # nothing completed while the two counters were switched on
            tfs.on(False)
            helper.say("off")
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
        tfs.on(False)
        helper.say("off")
        moved = completions(disk) - after
        lost = tfs.lost()
        traced, tids = tfs.by_task()
        bpf, unrecorded = helper.finish()
        helper = None
    finally:
        if helper:
            helper.kill()
        if tfs:
            tfs.close()
        if path:
            os.unlink(path)

    kernel = after - before
    print(f"check-unseen: /dev/{disk}, fio io_uring randread 4k qd32 at {args.iops} IOPS, "
          f"{args.seconds} s ({ios} reads)")
    print(f"{'task the completion ran on top of':<34} {'tracefs':>9} {'BPF':>9} {'missed':>7}")
    tasks = sorted(set(traced) | set(bpf), key=lambda c: (-traced.get(c, 0), c))
    for comm in tasks:
        t, b = traced.get(comm, 0), bpf.get(comm, 0)
        who = process_of(tids.get(comm, ())) if t > b else ""
        print(f"{comm:<34} {t:>9} {b:>9} {t - b:>7}" + (f"   {who}" if who else ""))
    tsum, bsum = sum(traced.values()), sum(bpf.values()) + unrecorded
    print(f"{'all':<34} {tsum:>9} {bsum:>9} {tsum - bsum:>7}   "
          f"(/sys/block/{disk}/stat: {kernel} completed)")
    if unrecorded:
        print(f"{unrecorded} completions BPF saw are in no row: its table was full")
    if moved or lost or not was_idle:
        print("INEXACT: " + "; ".join(x for x in (
            f"the disk completed {moved} requests while the counters were switched off"
            if moved else "",
            f"tracefs lost {lost} events (lower --iops)" if lost else "",
            "the disk was not idle at the end of the window" if not was_idle else "") if x)
            + "; rerun")
        return 2
    missed = {c: traced.get(c, 0) - bpf.get(c, 0) for c in tasks}
    if all(n == 0 for n in missed.values()) and not unrecorded:
        print("SEEN: a BPF program ran for every completion the kernel traced")
        return 0
    on_top = ", ".join(f"{c} {n}" for c, n in missed.items() if n > 0)
    print(f"MISSED: {tsum - bsum} of {tsum} completions ran no BPF program"
          + (f"; by the task they ran on top of: {on_top}" if on_top else "")
          + " (docs/trust.md, complete_unseen)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
