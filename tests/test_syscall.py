"""Live-kernel tests of the syscall layer: the test's own syscalls, counted exactly per process."""
import json
import os
import re
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, SCHEMA, Tracer, records, schema_check

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA_DOC = json.loads(SCHEMA.read_text())


def syscalls_of(recs, comm):
    """{syscall: count} for one comm, per process."""
    by_pid = {}
    for rec in recs:
        schema_check(rec, SCHEMA_DOC)
        for h in rec["hists"]:
            assert h["layer"] == "syscall" and h["stage"] == "duration"
            if h["labels"].get("comm") != comm:
                continue
            by_pid.setdefault(h["labels"]["pid"], Counter())[h["labels"]["syscall"]] += h["count"]
    return by_pid


def run_load(*args):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        r = subprocess.run([str(LOAD), *args, "--size", "1m", "--file", f"{d}/f", "--json"],
                           capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


@pytest.mark.parametrize("engine,syscall", [("psync", "pread64"), ("posixaio", "pread64"),
                                            ("threadpool", "pread64")])
def test_reads_count_exactly_per_process(engine, syscall, no_bpf_leak):
    """N reads -> N pread64 for the process, whichever of its threads made them (glibc's POSIX
    aio helpers and the pool's workers included)."""
    tracer = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j"])
    doc = run_load("--engine", engine, "--rw", "randread", "--ios", "250")
    recs = records(tracer.stop())
    assert doc["total"]["read"]["total_ios"] == 250
    by_pid = syscalls_of(recs, "iostrata-load")
    assert len(by_pid) == 1, f"one process expected: {by_pid}"
    counts = next(iter(by_pid.values()))
    assert counts[syscall] == 250, counts


def test_whole_host_counts_without_per_process_keys(no_bpf_leak):
    """Without -P the histograms are a per-CPU array by (generation, syscall). A -P tracer
    beside it sees the same syscalls of the load: per syscall, the counts must be equal, and
    the reads exact."""
    def totals(recs):
        total = Counter()
        for rec in recs:
            schema_check(rec, SCHEMA_DOC)
            for h in rec["hists"]:
                total[h["labels"]["syscall"]] += h["count"]
        return total

    whole = Tracer(["-l", "syscall", "--comm", "iostrata-load", "-j", "0.2"])
    per = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j", "0.2"])
    # one key per-CPU (as few as a host with many CPUs holds): the rest in the spill map,
    # by process (-P) and, where the array would not fit either, by syscall alone
    spill = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j", "0.2",
                    "--hist-keys", "1"])
    spill_whole = Tracer(["-l", "syscall", "--comm", "iostrata-load", "-j", "0.2",
                          "--hist-keys", "1"])
    run_load("--engine", "psync", "--rw", "randread", "--ios", "300")
    run_load("--engine", "psync", "--rw", "randwrite", "--ios", "120")
    recs = records(whole.stop())
    a, b = totals(recs), totals(records(per.stop()))
    c = totals(records(spill.stop()))
    d = totals(records(spill_whole.stop()))
    assert all("pid" not in h["labels"] for rec in recs for h in rec["hists"])
    # 120 writes and each load laying its file out with one 1 MiB pwrite (tools/load/target.c)
    assert a == b == c == d and a["pread64"] == 300 and a["pwrite64"] == 122, (a, b, c, d)
    for t in (spill, spill_whole):
        keys = re.search(r"syscall: histogram keys: at most (\d+) per CPU \(room for 1\), "
                         r"(\d+) in spill slots", t.stderr)
        assert keys and int(keys[1]) == 1 and int(keys[2]) >= 1, t.stderr


def test_libaio_and_io_uring_entry_points(no_bpf_leak):
    tracer = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j"])
    run_load("--engine", "libaio", "--qd", "1", "--ios", "40")
    run_load("--engine", "io_uring", "--qd", "1", "--ios", "30")
    recs = records(tracer.stop())
    total = Counter()
    for c in syscalls_of(recs, "iostrata-load").values():
        total.update(c)
    # qd 1: one submit and one reap per I/O
    assert total["io_submit"] == 40 and total["io_getevents"] == 40, total
    assert total["io_uring_enter"] >= 30, total


def test_io_uring_enter_is_left_to_the_uring_layer(no_bpf_leak):
    """With the uring layer running, the syscall layer does not time io_uring_enter (the uring
    layer follows every request; timing each enter too cost two programs per I/O): features
    says why, no enter is counted, and the uring layer and the other syscalls still count
    exactly. Without it (the test above) io_uring_enter is timed."""
    doc = json.loads(subprocess.run([str(ROOT / "bin" / "iostrata"), "features", "-j"],
                                    capture_output=True, text=True, check=True).stdout)
    enter = [e for e in doc["events"] if e["event"].endswith("_io_uring_enter")]
    assert len(enter) == 2 and all(e["method"] is None and "left to the uring layer" in e["reason"]
                                   for e in enter), enter
    tracer = Tracer(["-l", "uring,syscall", "-P", "--comm", "iostrata-load", "-j"])
    run_load("--engine", "io_uring", "--qd", "1", "--ios", "30")
    run_load("--engine", "libaio", "--qd", "1", "--ios", "40")
    recs = records(tracer.stop())
    calls, cqes = Counter(), 0
    for rec in recs:
        schema_check(rec, SCHEMA_DOC)
        for h in rec["hists"]:
            if h["labels"].get("comm") != "iostrata-load":
                continue
            if h["layer"] == "syscall":
                calls[h["labels"]["syscall"]] += h["count"]
            elif h["layer"] == "uring" and h["stage"] == "submit_cqe":
                cqes += h["count"] + h["unmeasured"]
    assert "io_uring_enter" not in calls, calls
    assert calls["io_submit"] == 40 and calls["io_getevents"] == 40, calls
    assert cqes == 30, cqes


def test_layers_option_and_features(no_bpf_leak):
    out = subprocess.run([str(ROOT / "bin" / "iostrata"), "features", "-j"], capture_output=True,
                         text=True, check=True).stdout
    st = {(s["layer"], s["stage"]): s for s in json.loads(out)["stages"]}
    assert st["syscall", "duration"]["available"], st
    r = subprocess.run([str(ROOT / "bin" / "iostrata"), "-l", "block,nosuch"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unknown layer 'nosuch'" in r.stderr


# Runs under its own name (prctl PR_SET_NAME) once every fd is open, then ends with os._exit: the
# only traced syscalls made under that name are the ones below.
FD_KINDS = r"""
import ctypes, os, socket, sys
n, m, path, dev = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
pr, pw = os.pipe()
s1, s2 = socket.socketpair()
zero = os.open("/dev/zero", os.O_RDONLY)
f = os.open(path, os.O_RDWR)
app = os.open(path, os.O_WRONLY | os.O_APPEND)
bdev = os.open(dev, os.O_RDONLY)
gone = os.open("/dev/null", os.O_RDONLY)
os.close(gone)
ctypes.CDLL(None).prctl(15, sys.argv[5].encode(), 0, 0, 0)
got = 0
for _ in range(n):  # not counted: a pipe, a socket, a character device, fds that are not open
    os.write(pw, b"xy")
    got += len(os.read(pr, 1)) + os.readv(pr, [bytearray(1)])
    os.write(s1.fileno(), b"z")
    got += len(os.read(s2.fileno(), 1)) + len(os.read(zero, 4096)) + len(os.pread(zero, 4096, 0))
    for fd in (pr, gone, 1 << 20):
        try:
            os.fsync(fd)
        except OSError:
            pass
    try:
        os.read(gone, 1)
    except OSError:
        pass
for i in range(m):  # counted: a regular file and a block device
    got += len(os.read(f, 4096)) + len(os.pread(f, 4096, 0)) + os.pwrite(f, b"w" * 4096, 0)
    got += os.write(app, b"a" * 512) + os.readv(bdev, [bytearray(4096)])
    os.fsync(app)
print(got, flush=True)
os._exit(0)
"""


def test_only_regular_files_and_block_devices(tmp_path, loopdev, no_bpf_leak):
    """The fd-taking syscalls count only on regular files and block devices: N rounds of pipe,
    socket, /dev/zero and not-open-fd calls are not counted, M rounds on a file and a loop
    device are, exactly."""
    n, m, comm = 300, 70, "iost-fdkinds"
    path = tmp_path / "f"
    path.write_bytes(b"r" * (4096 * m))
    tracer = Tracer(["-l", "syscall", "-P", "--comm", comm, "-j"])
    r = subprocess.run(["python3", "-c", FD_KINDS, str(n), str(m), str(path), loopdev, comm],
                       capture_output=True, text=True, timeout=60)
    recs = records(tracer.stop())
    assert r.returncode == 0, r.stderr
    # every call was made and moved data (the pipe, socket and /dev/zero ones included)
    assert int(r.stdout) == n * (1 + 1 + 1 + 4096 + 4096) + m * (3 * 4096 + 512 + 4096)
    by_pid = syscalls_of(recs, comm)
    assert len(by_pid) == 1, f"one process expected: {by_pid}"
    assert next(iter(by_pid.values())) == Counter(
        read=m, pread64=m, pwrite64=m, write=m, readv=m, fsync=m)


def test_a_process_named_with_any_bytes_keeps_json_and_text_clean(tmp_path, no_bpf_leak):
    """A process names itself (prctl) with bytes that are no UTF-8, an escape sequence and a
    bell: the JSON stays valid UTF-8 (each stray byte U+FFFD, controls escaped) and the text
    view sends no control byte to the terminal (each shown as '?'). Its 20 reads are counted
    under that name in both."""
    f = tmp_path / "f"
    f.write_bytes(b"x" * 4096)
    name = b"\xff\x1b[31mbad\x07"
    script = ("import ctypes, os\n"
              f"ctypes.CDLL(None).prctl(15, {name!r}, 0, 0, 0)\n"
              f"fd = os.open({str(f)!r}, os.O_RDONLY)\n"
              "for _ in range(20):\n    os.pread(fd, 4096, 0)\n")
    js = Tracer(["-l", "syscall", "-P", "-j"])
    txt = Tracer(["-l", "syscall", "-P"])
    subprocess.run(["python3", "-c", script], check=True)
    recs = records(js.stop())  # decoded strictly: a stray byte would raise here
    text = txt.stop()
    by_pid = syscalls_of(recs, "\ufffd\x1b[31mbad\x07")
    assert [c["pread64"] for c in by_pid.values()] == [20], by_pid
    assert not any(ord(c) < 0x20 and c != "\n" for c in text), "a control byte reached the text"
    assert "?[31mbad?" in text, text[-2000:]


def test_fsync_every_n_writes(tmp_path, no_bpf_leak):
    """iostrata-load --fsync-every 16 over 64 buffered writes: 4 fsyncs, counted by the
    syscall layer for its process beside its 64 writes (and one write and one fsync laying its
    file out, tools/load/target.c)."""
    tracer = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j"])
    subprocess.run([str(LOAD), "--engine", "psync", "--buffered", "--rw", "write", "--ios",
                    "64", "--fsync-every", "16", "--size", "256k", "--file",
                    str(tmp_path / "b")], check=True, capture_output=True)
    by_pid = syscalls_of(records(tracer.stop()), "iostrata-load")
    assert len(by_pid) == 1, by_pid
    counts = next(iter(by_pid.values()))
    assert counts["pwrite64"] == 64 + 1 and counts["fsync"] == 4 + 1, counts


def test_a_call_still_in_progress_at_the_stop_is_unmeasured(no_bpf_leak):
    """A thread blocked in a traced call when tracing stops: its exit will not be seen, and the
    call was counted nowhere. It is now unmeasured in its syscall's record (found by walking
    the threads at the stop), so count + unmeasured is every call seen entering. Here the load
    waits 60 s in io_uring_enter for a TIMEOUT (asleep: --no-spin)."""
    if Path("/proc/sys/kernel/io_uring_disabled").exists() and \
            Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() != "0":
        pytest.skip("io_uring is disabled here (kernel.io_uring_disabled)")
    tracer = Tracer(["-l", "syscall", "-P", "--comm", "iostrata-load", "-j"])
    load = subprocess.Popen([str(LOAD), "--op", "timeout", "--no-spin", "--latency", "60s",
                             "--ios", "1", "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # the job thread waits in io_uring_enter (426 on every architecture's table)
        deadline = time.monotonic() + 30
        while not any(Path(f"/proc/{load.pid}/task/{t}/syscall").read_text().startswith("426 ")
                      for t in os.listdir(f"/proc/{load.pid}/task") if t != str(load.pid)):
            assert load.poll() is None and time.monotonic() < deadline, load.stderr.read()
            time.sleep(0.01)
        recs = records(tracer.stop())
    finally:
        load.kill()
        load.wait()
    enter = [h for rec in recs for h in rec["hists"]
             if h["labels"].get("syscall") == "io_uring_enter"
             and h["labels"].get("pid") == load.pid]
    assert sum(h.get("unmeasured", 0) for h in enter) == 1, enter
    assert all(h["labels"]["comm"] == "iostrata-load" for h in enter), enter
