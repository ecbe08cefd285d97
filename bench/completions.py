#!/usr/bin/env python3
"""Who completed what on a disk: the kernel's counters, a tracefs instance (ftrace, no BPF) and a
tp_btf program (bin/bench-unseen) counting one disk's block_rq_complete, the last two by the
task each completion ran on top of. Shared by bench/exact.py and bench/unseen.py."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
HELPER = TOP / "bin" / "bench-unseen"
TRACEFS = Path("/sys/kernel/tracing")
STAT_FIELDS = {"read": 0, "write": 4, "discard": 11, "flush": 15}
PROG = "check-" + Path(sys.argv[0]).stem          # check-exact, check-unseen: errors say which
# "           <idle>-0       [001] ..s1.  1234.567890: block_rq_complete: 254,0 R () ..."
EVENT = re.compile(r"^\s*(.*)-(\d+)\s+\[(\d+)\].*?\sblock_rq_complete:")


def disk_of(path):
    """The whole disk holding path's filesystem (e.g. vda for /dev/vda1)."""
    st = os.stat(path)
    sysdev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
    if (sysdev / "partition").exists():
        sysdev = sysdev.parent
    if not (sysdev / "stat").exists():
        sys.exit(f"{PROG}: {path} is not on a block device (its filesystem: {sysdev})")
    return sysdev.name


def stat(disk):
    f = [int(x) for x in Path(f"/sys/block/{disk}/stat").read_text().split()]
    return {op: f[i] for op, i in STAT_FIELDS.items() if i < len(f)}


def idle(disk, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Path(f"/sys/block/{disk}/inflight").read_text().split() == ["0", "0"]:
            return True
        time.sleep(0.01)
    return False


def devt(disk):
    """The kernel's dev_t encoding of a disk (major << 20 | minor), as tracefs prints it."""
    major, minor = (int(x) for x in Path(f"/sys/block/{disk}/dev").read_text().split(":"))
    return major << 20 | minor


def completions(disk):
    return sum(stat(disk).values())


class Tracefs:
    """A tracefs instance recording one disk's block_rq_complete (skip_idle: not those run on top
    of the idle task, the bulk under load, so that a buffer can hold the rest), mounting tracefs
    if need be; close() removes the instance and unmounts what it mounted, whatever was done."""

    def __init__(self, devt, buffer_kb, skip_idle=False):
        self.mounted_here, self.dir = False, None
        if not (TRACEFS / "instances").is_dir():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
            self.mounted_here = True
        try:
            self.dir = TRACEFS / "instances" / f"iostrata-unseen-{os.getpid()}"
            self.dir.mkdir()
            self.event = self.dir / "events" / "block" / "block_rq_complete"
            self.write("tracing_on", "0")
            self.write("buffer_size_kb", str(buffer_kb))
            (self.event / "filter").write_text(
                f"dev == {devt}" + (" && common_pid != 0" if skip_idle else "") + "\n")
            (self.event / "enable").write_text("1\n")
        except BaseException:
            self.close()
            raise

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

    def by_thread(self):
        """{thread id: completions} of the recorded completions, and {thread id: name}."""
        counts, names = {}, {}
        with open(self.dir / "trace") as f:
            for line in f:
                m = EVENT.match(line)
                if m:
                    tid = int(m.group(2))
                    counts[tid] = counts.get(tid, 0) + 1
                    names.setdefault(tid, m.group(1).strip())
        return counts, names

    def close(self):
        try:
            if self.dir and self.dir.is_dir():
                self.dir.rmdir()  # the kernel disables its events with it
        finally:
            if self.mounted_here:
                subprocess.run(["umount", str(TRACEFS)], check=False)


class Helper:
    def __init__(self, devt):
        self.p = subprocess.Popen([str(HELPER), str(devt)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "attached":
            self.p.wait()
            sys.exit(f"{PROG}: bench-unseen did not attach: {self.p.stderr.read().strip()}")

    def say(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        if self.p.stdout.readline().strip() != "ok":
            sys.exit(f"{PROG}: bench-unseen did not answer {cmd!r}")

    def finish(self):
        """{thread id: completions}, {thread id: name}, and the completions it had no room for."""
        out, err = self.p.communicate(timeout=30)
        counts, names, unrecorded = {}, {}, 0
        for line in out.splitlines():
            if line.startswith("unrecorded "):
                unrecorded = int(line.split()[1])
            elif line.count("\t") == 2:
                n, tid, comm = line.split("\t")
                counts[int(tid)], names[int(tid)] = int(n), comm
        if self.p.returncode:
            sys.exit(f"{PROG}: bench-unseen exited {self.p.returncode}: {err.strip()}")
        return counts, names, unrecorded

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def process_of(tids):
    """'process 1 (process_api)' for the threads still alive, or ''."""
    out = set()
    for tid in sorted(tids):
        try:
            st = Path(f"/proc/{tid}/status").read_text()
            tgid = int(re.search(r"^Tgid:\s+(\d+)", st, re.M).group(1))
            out.add(f"process {tgid} ({Path(f'/proc/{tgid}/comm').read_text().strip()})")
        except (OSError, AttributeError):
            continue
    return ", ".join(sorted(out))


class Counters:
    """tracefs and bench-unseen counting one disk's completions by task over one window: on() and
    off() switch both (call them on an idle disk); close() undoes everything, however it ends."""

    def __init__(self, disk, buffer_kb, skip_idle=False):
        self.skip_idle, self.tfs, self.helper = skip_idle, None, None
        try:
            self.tfs = Tracefs(devt(disk), buffer_kb, skip_idle)
            self.helper = Helper(devt(disk))
        except BaseException:
            self.close()
            raise

    def on(self):
        self.tfs.clear()
        self.helper.say("on")
        self.tfs.on(True)

    def off(self):
        self.tfs.on(False)
        self.helper.say("off")

    def result(self):
        """A Seen of the window's completions, by thread."""
        lost = self.tfs.lost()
        traced, tnames = self.tfs.by_thread()
        bpf, bnames, unrecorded = self.helper.finish()
        self.helper = None
        if self.skip_idle:  # tracefs left the idle task's out
            bpf.pop(0, None)
        return Seen(traced, bpf, {**tnames, **bnames}, unrecorded, lost)

    def close(self):
        try:
            if self.helper:
                self.helper.kill()
        finally:
            if self.tfs:
                self.tfs.close()


class Seen:
    """One window's completions by the thread they ran on top of, as tracefs recorded them
    (traced) and as BPF counted them (bpf), matched by thread id: tracefs records the id of the
    thread at the event, but its name only when read (a thread that exec'd since shows its new
    name), so names come from BPF where it saw the thread. unrecorded: completions BPF saw and had
    no room to count by thread; lost: events tracefs's buffer lost."""

    def __init__(self, traced, bpf, names, unrecorded, lost):
        self.traced, self.bpf, self.names = traced, bpf, names
        self.unrecorded, self.lost = unrecorded, lost
        self.tids = sorted(set(traced) | set(bpf))
        self.missed = {t: traced.get(t, 0) - bpf.get(t, 0) for t in self.tids
                       if traced.get(t, 0) > bpf.get(t, 0)}
        self.more = [t for t in self.tids if bpf.get(t, 0) > traced.get(t, 0)]

    def name(self, tid):
        if tid == 0:
            return "<idle>"
        name = self.names.get(tid, "<...>")
        if name == "<...>":  # tracefs's table of names no longer held it
            try:
                name = Path(f"/proc/{tid}/comm").read_text().strip()
            except OSError:
                pass
        return name

    def table(self):
        """Prints the counts by thread name, and returns {name: completions BPF missed} for the
        names it missed some on."""
        rows = {}
        for t in self.tids:
            r = rows.setdefault(self.name(t), [0, 0, 0, set()])
            r[0] += self.traced.get(t, 0)
            r[1] += self.bpf.get(t, 0)
            if t in self.missed:
                r[2] += self.missed[t]
                r[3].add(t)
        print(f"{'thread the completion ran on top of':<36} {'tracefs':>9} {'BPF':>9} "
              f"{'missed':>7}")
        for name, (t, b, m, tids) in sorted(rows.items(), key=lambda kv: (-kv[1][0], kv[0])):
            who = process_of(tids) if m else ""
            print(f"{name:<36} {t:>9} {b:>9} {m:>7}" + (f"   {who}" if who else ""))
        return {name: r[2] for name, r in rows.items() if r[2]}
