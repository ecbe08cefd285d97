"""A tracing session as a whole: every layer read at the same interval boundaries with nothing
lost or counted twice across them, the tracer never counting itself, and what a stop prints
(issue 10)."""
import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (IOSTRATA, ROOT, SCHEMA, Tracer, drops_of, queue_set, records,
                      schema_check, stat_requests)

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA_DOC = json.loads(SCHEMA.read_text())
URING_DISABLED = Path("/proc/sys/kernel/io_uring_disabled")


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    assert not dup, f"a JSON object repeats {sorted(dup)}: {pairs}"
    return dict(pairs)


def strict_records(stdout):
    """records(), but a key given twice in any object fails (json.loads keeps the last)."""
    return [json.loads(line, object_pairs_hook=no_duplicate_keys)
            for line in stdout.splitlines() if line.strip()]


def tally(recs, layer, stage, field="count", **labels):
    return sum(h[field] for rec in recs for h in rec["hists"]
               if h["layer"] == layer and h["stage"] == stage
               and all(h["labels"].get(k) == v for k, v in labels.items()))


class HeldLoad:
    """iostrata-load started, but holding its I/O until go(): a shell that reads a line from
    stdin, then execs iostrata-load. exec keeps the process id (the tgid -p filters by), so the
    tracer can be given the pid before the first I/O, as calibrate does with its own loads."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(["sh", "-c", 'read _ && exec "$0" "$@"', str(LOAD), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self):
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, f"iostrata-load failed: {err}"
        return json.loads(out)


def test_interval_boundaries_shared(loopdev, loopdev2, no_bpf_leak):
    """20000 O_DIRECT reads through io_uring and 20000 through libaio, rate-limited so that they
    span ~5 s, i.e. ~100 boundaries of 50 ms intervals, with all four layers on. Summed over
    every record, each layer's count is exactly what the loads issued: an I/O whose stages
    straddle a boundary is counted once, in one interval, never lost, never twice.

    Design: -p takes one pid and filters by tgid, and the two loads are two processes, so each
    load gets its own tracer (all four layers, -p its pid), both running at once. With -p the
    block layer counts only the requests the load queued, whatever else the shared machine does.

    Target: raw loop devices, one per load, not a file on ext4. On a file, the filesystem's own
    I/O (layout writes, extent-tree reads, reads of unwritten extents that issue no bio at all)
    would make the block count differ from the reads for reasons that are not the tracer's. On
    the raw device one 4 KiB O_DIRECT read is one bio and one request; nomerges=2 turns off
    every merge (plug and elevator), so two random reads that happen to be adjacent cannot
    become one request either. Then the block layer's O_DIRECT read requests == reads (the
    load's signature check adds readahead requests, told apart by their flag: see below).
    A device each, so that a block request (its struct request, and its entry in the tracer's
    in-flight table) is only ever reused by the same load: see complete_unseen below."""
    if URING_DISABLED.exists() and URING_DISABLED.read_text().strip() != "0":
        pytest.skip("io_uring is disabled on this kernel (kernel.io_uring_disabled)")
    n, rate = 20000, 4000
    common = ["--rw", "randread", "--bs", "4k", "--qd", "16", "--ios", str(n), "--rate",
              str(rate), "--force", "--json"]
    loads, tracers = {}, {}
    with contextlib.ExitStack() as settings:    # put back before the devices go
        try:
            for name, engine, dev in (("uring", "io_uring", loopdev),
                                      ("aio", "libaio", loopdev2)):
                settings.enter_context(queue_set(dev, nomerges=2))
                loads[name] = HeldLoad("--engine", engine, "--device", dev, *common)
            for name, ld in loads.items():
                tracers[name] = Tracer(["-l", "block,uring,aio,syscall", "-P", "-O", "-F", "-j",
                                        "-p", str(ld.pid), "0.05"])
            for ld in loads.values():
                ld.go()
            docs = {name: ld.finish() for name, ld in loads.items()}
        finally:
            for ld in loads.values():
                if ld.proc.poll() is None:
                    ld.proc.kill()
                    ld.proc.wait()
            stdouts = {name: t.stop() for name, t in tracers.items()}
    for doc in docs.values():
        assert doc["total"]["read"]["total_ios"] == n and doc["total"]["read"]["errors"] == 0

    got, expected = {}, {}
    for name, out in stdouts.items():
        recs = strict_records(out)  # each record has one interval_ns: no key twice
        assert recs, name
        for rec in recs:
            schema_check(rec, SCHEMA_DOC)
            assert rec["type"] == "interval" and isinstance(rec["interval_ns"], int)
        assert sum(rec["interval_ns"] for rec in recs) > 0
        pid = loads[name].pid
        for rec in recs:
            for h in rec["hists"]:
                if h["layer"] in ("uring", "aio", "syscall"):
                    assert h["labels"]["pid"] == pid, (name, h["labels"])
        assert any(h["layer"] == "syscall" for rec in recs for h in rec["hists"]), name
        # the I/O did cross interval boundaries: it is in more than one record
        with_io = [rec for rec in recs if any(h["layer"] == "block" and h["count"]
                                              for h in rec["hists"])]
        assert len(with_io) > 1, name

        # The one drop that may legitimately appear: complete_unseen, a block request the
        # kernel ended without a block_rq_complete the programs saw (docs/trust.md, "Not
        # seen"; ~1 in 50,000 requests; here 7 or 8 at once in 4 runs of 43, none in the
        # rest). Such a request is in no block histogram and its io_uring/aio request is
        # unmeasured in the linked stages, and the drop says so: the exact relation is
        # counted + unseen == issued. (It is counted when the request is reused; with a
        # device per load that reuse is by the same load.) Every other drop must be 0.
        drops = drops_of(recs)
        k = drops.pop("complete_unseen", 0)
        g = got[name] = {"drops": drops}
        expected[name] = {"drops": {}}

        # Block: one read request per O_DIRECT read of the load, in wait, device and total.
        # The only other requests it may queue are those of its safety check, a buffered
        # 68 KiB pread at offset 0 looking for filesystem signatures: page-cache readahead,
        # flagged rahead (0 or a few).
        for stage in ("wait", "device", "total"):
            g[f"block {stage}"] = g[f"block {stage} unmeasured"] = 0
            expected[name].update({f"block {stage}": n - k, f"block {stage} unmeasured": 0})
            for h in (h for rec in recs for h in rec["hists"]
                      if h["layer"] == "block" and h["stage"] == stage):
                if "rahead" in h["labels"].get("flags", "").split("|"):
                    assert h["labels"]["op"] == "read", (name, h["labels"])
                    continue
                assert h["labels"] == {"op": "read"}, (name, h["labels"])
                g[f"block {stage}"] += h["count"]
                g[f"block {stage} unmeasured"] += h["unmeasured"]

    # io_uring: each read's submit -> CQE, and the device time of its bio, linked to it
    ur = strict_records(stdouts["uring"])
    k = sum(rec["drops"].get("complete_unseen", 0) for rec in ur)
    got["uring"].update({
        "uring submit_cqe read": tally(ur, "uring", "submit_cqe", opcode="read"),
        "uring submit_cqe": tally(ur, "uring", "submit_cqe"),
        "uring device read": tally(ur, "uring", "device", opcode="read"),
        "uring device unmeasured": tally(ur, "uring", "device", "unmeasured"),
        "aio total+unmeasured": tally(ur, "aio", "total") + tally(ur, "aio", "total",
                                                                   "unmeasured")})
    expected["uring"].update({"uring submit_cqe read": n, "uring submit_cqe": n,
                              "uring device read": n - k, "uring device unmeasured": k,
                              "aio total+unmeasured": 0})
    # libaio: each pread's submit -> reap (or unmeasured, if reaped unseen), and its bio's
    ai = strict_records(stdouts["aio"])
    k = sum(rec["drops"].get("complete_unseen", 0) for rec in ai)
    got["aio"].update({
        "aio total+unmeasured pread": tally(ai, "aio", "total", opcode="pread") +
        tally(ai, "aio", "total", "unmeasured", opcode="pread"),
        "aio total+unmeasured": tally(ai, "aio", "total") + tally(ai, "aio", "total",
                                                                   "unmeasured"),
        "aio device pread": tally(ai, "aio", "device", opcode="pread"),
        "aio device unmeasured": tally(ai, "aio", "device", "unmeasured"),
        "uring submit_cqe": tally(ai, "uring", "submit_cqe")})
    expected["aio"].update({"aio total+unmeasured pread": n, "aio total+unmeasured": n,
                            "aio device pread": n - k, "aio device unmeasured": k,
                            "uring submit_cqe": 0})
    assert got == expected, f"\ngot      {got}\nexpected {expected}"


def test_every_layer_starts_counting_at_once(loopdev, no_bpf_leak):
    """A load already running when tracing starts. The layers attach one after another, block
    first, each loaded and verified in turn, and the first interval starts once the last has
    attached: what the block layer recorded before went into that interval too (149,959 block
    requests against 121,359 CQEs of the same reads in one run: a first interval with 24 % more
    I/O in one layer than in the other, and a rate above the true one). Every layer now starts
    counting at the same instant. The load ends before the tracer stops, so the run's end is
    exact; at its start, the reads in flight at that instant may be in one count and not the
    other: the two differ by at most the queue depth. One 4 KiB read is one request (a raw
    device, nomerges=2), and a request the kernel ended unseen is counted (complete_unseen)."""
    if URING_DISABLED.exists() and URING_DISABLED.read_text().strip() != "0":
        pytest.skip("io_uring is disabled on this kernel (kernel.io_uring_disabled)")
    qd = 8
    with queue_set(loopdev, nomerges=2):
        load = subprocess.Popen([str(LOAD), "--engine", "io_uring", "--rw", "randread", "--bs",
                                 "4k", "--qd", str(qd), "--device", loopdev, "--force",
                                 "--runtime", "120s", "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        tracer = None

        def reads_done(n):
            """n more reads reach the disk, the load running."""
            start = stat_requests(loopdev)["read"]
            deadline = time.monotonic() + 60
            while stat_requests(loopdev)["read"] < start + n:
                assert load.poll() is None and time.monotonic() < deadline, load.communicate()
                time.sleep(0.01)
        try:
            reads_done(1000)    # running before the tracer attaches
            tracer = Tracer(["-l", "block,uring", "-p", str(load.pid), "-j"])
            reads_done(1000)    # and while it traces
            load.send_signal(signal.SIGINT)     # it stops, its count exact, before the tracer
            out, err = load.communicate(timeout=60)
            assert load.returncode == 0, err
        finally:
            if load.poll() is None:
                load.kill()
                load.wait()
            recs = records(tracer.stop()) if tracer else []
    ios = json.loads(out)["total"]["read"]["total_ios"]
    block = tally(recs, "block", "device")
    unseen = drops_of(recs).get("complete_unseen", 0)
    uring = tally(recs, "uring", "submit_cqe")
    # the tracer started while the load ran, well after its start
    assert 0 < uring < ios - 1000, (uring, ios)
    assert abs(block + unseen - uring) <= qd, (block, unseen, uring)


@pytest.mark.parametrize("record", [False, True], ids=["trace", "record"])
def test_tracing_stops_when_the_process_ends(loopdev, tmp_path, no_bpf_leak, record):
    """-p's process ends: tracing stops with the interval it ended in, says so, exit 0, every
    one of its I/Os counted. It used to go on printing empty intervals, and once the pid was
    given to another process, that process's I/O would have been counted as the first's."""
    load = HeldLoad("--engine", "psync", "--rw", "randread", "--device", loopdev, "--force",
                    "--ios", "300", "--json")
    out = tmp_path / "r.ndjson"
    args = ["-l", "block,syscall", "-p", str(load.pid), "-j", "60"]
    tracer = Tracer(["-o", str(out), *args], command=("record",)) if record else Tracer(args)
    try:
        load.go()
        load.finish()
        # no signal: it ends by itself, within the 60 s interval
        stdout, stderr = tracer.proc.communicate(timeout=60)
    finally:
        if tracer.proc.poll() is None:
            tracer.proc.kill()
            tracer.proc.communicate()
    assert tracer.proc.returncode == 0, stderr
    stderr = (tracer.stderr + stderr.decode()).splitlines()
    said = [ln for ln in stderr if "exited" in ln]
    assert said == [f"iostrata: warning: process {load.pid} exited: tracing stopped with it "
                    "(its last interval is the one it ended in)"], stderr
    recs = records(out.read_text() if record else stdout.decode())
    intervals = [r for r in recs if r["type"] == "interval"]
    assert len(intervals) == 1, [r["type"] for r in recs]
    # its 300 reads and the 2 of its check for a filesystem signature on the device
    assert tally(intervals, "syscall", "duration", syscall="pread64") == 300 + 2
    reads = [h for h in intervals[0]["hists"] if h["layer"] == "block" and h["stage"] == "device"]
    assert sum(h["count"] + h["unmeasured"] for h in reads) >= 300, reads
    if record:
        (end,) = [r for r in recs if r["type"] == "end"]
        assert end["reason"] == "process_exited", end


def test_no_self_counting(tmp_path, no_bpf_leak):
    """The syscall layer on the whole host for 5 s, -P: the tracer's own syscalls (its write()
    of each record, its reads) are not the workload and must not be in its output. Two tracers
    at once (to halve the wait): one writing its records to a regular file, whose writes are of
    the kind the syscall layer times (regular files and block devices), one to a pipe, whose
    writes are not, but where nothing else the tracer does may show either. Each is checked
    for its own pid only; a finding is (record index, syscall, count). A load of 100 reads
    made meanwhile is the control: each tracer counts it under its pid."""
    out_path = tmp_path / "out.ndjson"
    argv = [str(IOSTRATA), "-v", "-l", "syscall", "-P", "-j", "--duration", "5"]
    with open(out_path, "w") as out:
        to_file = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        to_pipe = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        said = {}
        for p in (to_file, to_pipe):  # both attached before the control load starts
            said[p] = ""
            while "iostrata: tracing" not in said[p]:
                line = p.stderr.readline()
                assert line, f"iostrata did not start: {said[p]}"
                said[p] += line
        load = subprocess.Popen([str(LOAD), "--engine", "psync", "--rw", "randread", "--ios",
                                 "100", "--size", "1m", "--file", str(tmp_path / "control")],
                                stdout=subprocess.DEVNULL)
        assert load.wait(timeout=30) == 0
        piped, err_pipe = to_pipe.communicate(timeout=60)
        _, err_file = to_file.communicate(timeout=60)
    assert to_file.returncode == 0, said[to_file] + err_file
    assert to_pipe.returncode == 0, said[to_pipe] + err_pipe
    own, control = {}, {}
    for name, p, stdout in (("file", to_file, out_path.read_text()), ("pipe", to_pipe, piped)):
        recs = records(stdout)
        assert len(recs) >= 5, (name, recs)
        own[name] = [(i, h["labels"]["syscall"], h["count"]) for i, rec in enumerate(recs)
                     for h in rec["hists"] if h["labels"].get("pid") == p.pid]
        control[name] = sum(h["count"] for rec in recs for h in rec["hists"]
                            if h["labels"].get("pid") == load.pid and
                            h["labels"]["syscall"] == "pread64")
    assert own == {"file": [], "pipe": []}, f"the tracers counted their own syscalls: {own}"
    assert control == {"file": 100, "pipe": 100}, control


@pytest.fixture
def busy_reader(tmp_path):
    """A process reading a cached regular file as fast as it can (psync, buffered): syscalls on
    the host at every instant, as on a busy machine. Stopped with SIGINT, which removes its file."""
    p = subprocess.Popen([str(LOAD), "--engine", "psync", "--buffered", "--rw", "randread",
                          "--runtime", "120s", "--size", "1m", "--file", str(tmp_path / "busy")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    yield p
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err


def test_stop_prints_one_final_interval(busy_reader, no_bpf_leak):
    """A stop prints exactly one last interval: SIGINT 1 s into a 10 s interval gives one record
    (the interval it cut); --duration 1 with 0.3 s intervals gives the 4 the duration implies
    (0.3, 0.3, 0.3 and the 0.1 left). Counts of records, never timings.

    The busy reader makes sure events keep arriving while the tracer stops: on an idle host
    nothing may happen between the last interval's collection and the tracer's later sweep of
    the other generation, and a tracer that prints that sweep as a record of its own (as today's
    does, "late record(s) after the last interval") would go unnoticed."""
    def shape(recs):  # for the failure message only: (interval_ns, histograms) per record
        return [(r["interval_ns"], len(r["hists"])) for r in recs]

    tracer = Tracer(["-j", "10"])
    time.sleep(1)
    cut = records(tracer.stop(signal.SIGINT))

    tracer = Tracer(["-j", "--duration", "1", "0.3"])
    out, err = tracer.proc.communicate(timeout=30)
    assert tracer.proc.returncode == 0, err.decode()
    timed = records(out.decode())
    assert busy_reader.poll() is None, "the busy reader stopped before the tracer did"
    # both runs before any assert on them, so that a failure shows both
    assert (len(cut), len(timed)) == (1, 4), {"SIGINT": shape(cut), "--duration": shape(timed)}


@pytest.mark.parametrize("to", ["process", "group"])
def test_calibrate_json_interrupted_is_valid_json(to, no_bpf_leak):
    """calibrate -j cut short by SIGINT ~2 s in (to the process, or to its process group as a
    terminal's Ctrl-C does, reaching its iostrata-load too): stdout is still one complete JSON
    document, the result FAIL, the exit status 1."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        p = subprocess.Popen([str(IOSTRATA), "calibrate", "-j", "--dir", d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        time.sleep(2)
        assert p.poll() is None, "calibrate ended before it was interrupted"
        if to == "group":
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    assert p.returncode == 1, (p.returncode, err)
    assert len(out.splitlines()) == 1, out
    doc = json.loads(out)
    assert doc["type"] == "calibrate" and doc["result"] == "FAIL", doc
    assert isinstance(doc["checks"], list)


TRACEFS = "/sys/kernel/tracing"


def in_private_mounts(script, cwd):
    """script run by sh in cwd, in a mount namespace of its own, where tracefs starts
    unmounted: what iostrata mounts and unmounts there is seen by the script and never
    touches the host's."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"umount -l {TRACEFS} 2>/dev/null; {script}"],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def tracefs_lines(out):
    return [ln for ln in out.splitlines() if ln.startswith("TRACEFS ")]


def test_features_into_a_closed_pipe_unmounts_tracefs(tmp_path, no_bpf_leak):
    """features mounts tracefs to probe the syscall events; its output into a pipe closed
    early (SIGPIPE killed it before its close) must not leave the mount behind; and a reader
    gone is a way to stop, status 0, nothing said (it said 'Broken pipe', exit 1)."""
    r = in_private_mounts(f"({IOSTRATA} features -v -j 2>err; echo $? >st) | true; "
                          f"echo STATUS $(cat st); cat err >&2; "
                          f"echo TRACEFS $(grep -c ' {TRACEFS} ' /proc/self/mounts)", tmp_path)
    assert "mounted tracefs at" in r.stderr, r.stderr  # it did mount: the case is exercised
    assert tracefs_lines(r.stdout) == ["TRACEFS 0"], (r.stdout, r.stderr)
    assert "STATUS 0" in r.stdout and "error" not in r.stderr, (r.stdout, r.stderr)


def test_nohup_keeps_a_hangup_ignored(no_bpf_leak):
    """Started ignoring SIGHUP (nohup iostrata ... &, so that a logout does not end it), a
    trace runs on through a hangup: all 4 intervals asked for (a review found it stopping)."""
    p = subprocess.Popen([str(IOSTRATA), "-l", "syscall", "-j", "0.5", "4"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        first = p.stdout.readline()         # attached, an interval out
        assert '"type":"interval"' in first, (first, p.stderr.read())
        p.send_signal(signal.SIGHUP)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert (first + out).count('"type":"interval"') == 4, first + out


def test_hangup_stops_tracing_and_unmounts_tracefs(tmp_path, no_bpf_leak):
    """SIGHUP (its terminal closed) stops a trace as Ctrl-C does: the final interval, exit 0,
    every program detached; it used to kill the process outright. The tracefs it mounted to
    attach was never on the host's tree (a mount namespace of its own)."""
    r = in_private_mounts(
        f"{IOSTRATA} -v -l syscall -j >out 2>err & pid=$!; "
        "until grep -q 'iostrata: tracing' err; do sleep 0.1; done; "
        f"echo TRACEFS $(grep -c ' {TRACEFS} ' /proc/self/mounts); "
        "kill -HUP $pid; wait $pid; echo RC $?; cat err >&2; "
        f"echo TRACEFS $(grep -c ' {TRACEFS} ' /proc/self/mounts)", tmp_path)
    assert "mounted tracefs at" in r.stderr, r.stderr
    assert tracefs_lines(r.stdout) == ["TRACEFS 0", "TRACEFS 0"], (r.stdout, r.stderr)
    assert "RC 0" in r.stdout, (r.stdout, r.stderr)


def test_a_second_tracer_does_not_share_the_first_ones_tracefs(tmp_path, no_bpf_leak):
    """Where the host has no tracefs, each tracer mounts its own to attach, seen by no other
    process. The first one's was mounted on the host's tree and unmounted (MNT_DETACH) when it
    had attached or ended: a second one that had found it mounted and was still attaching lost
    it ("failed to determine tracepoint 'syscalls/sys_exit_io_getevents' perf event ID"), and a
    layer not named with -l was dropped without a word. Here the first is tracing; the host
    still has no tracefs; the second mounts its own and traces."""
    r = in_private_mounts(
        f"{IOSTRATA} -v -l syscall -j >out1 2>err1 & pid=$!; "
        "until grep -q 'iostrata: tracing' err1; do sleep 0.1; done; "
        f"echo TRACEFS $(grep -c ' {TRACEFS} ' /proc/self/mounts); "
        f"{IOSTRATA} -v -l syscall,aio -j 0.2 2 >out2 2>err2; echo RC2 $?; "
        "kill -INT $pid; wait $pid; echo RC1 $?; cat err2 >&2; "
        "echo INTERVALS2 $(grep -c '\"type\":\"interval\"' out2)", tmp_path)
    assert tracefs_lines(r.stdout) == ["TRACEFS 0"], (r.stdout, r.stderr)
    assert "mounted tracefs at" in r.stderr, r.stderr     # the second mounted its own
    assert "RC2 0" in r.stdout and "RC1 0" in r.stdout, (r.stdout, r.stderr)
    assert "INTERVALS2 2" in r.stdout, (r.stdout, r.stderr)
