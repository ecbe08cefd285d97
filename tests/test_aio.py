"""Live-kernel tests of the aio layer: native aio requests of the test's own processes, counted
exactly, linked to their bios, and never timed when their reap cannot be seen."""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (ROOT, SCHEMA, Tracer, drops_of, records, schema_check,
                      without_unseen)
from test_snoop import cgroups  # noqa: F401  (a fixture)

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
REAPER = ROOT / "bin" / "reaper"
SCHEMA_DOC = json.loads(SCHEMA.read_text())


def aio_stages(recs, comm, opcode="pread"):
    """{stage: {count, unmeasured, sum_ns}} over the aio records of one comm, and the events."""
    out, events = {}, {}
    for rec in recs:
        schema_check(rec, SCHEMA_DOC)
        for k, v in rec["events"].items():
            events[k] = events.get(k, 0) + v
        for h in rec["hists"]:
            if h["layer"] != "aio" or h["labels"].get("comm") != comm:
                continue
            assert h["labels"]["opcode"] == opcode, h["labels"]
            st = out.setdefault(h["stage"], {"count": 0, "unmeasured": 0, "sum_ns": 0})
            for f in st:
                st[f] += h[f]
    return out, events


@pytest.mark.parametrize("qd", [1, 32])
def test_libaio_direct_reads_counted_and_linked(loopdev, qd, no_bpf_leak):
    def run():
        tracer = Tracer(["-l", "block,aio", "-P", "-O", "-j"])
        subprocess.run([str(LOAD), "--engine", "libaio", "--rw", "randread", "--ios", "300",
                        "--qd", str(qd), "--device", loopdev, "--force"], check=True,
                       capture_output=True)
        return tracer, records(tracer.stop())
    st, events = aio_stages(without_unseen(run)[1], "iostrata-load")
    for stage in ("total", "submit_complete", "complete_reap", "submit_bio", "wait", "device"):
        assert st[stage]["count"] == 300, (stage, st)
        assert st[stage]["unmeasured"] == 0, (stage, st)
    # per request: submit_bio + wait + device == submit_complete, and + complete_reap == total
    assert sum(st[s]["sum_ns"] for s in ("submit_bio", "wait", "device")) == \
        st["submit_complete"]["sum_ns"]
    assert st["submit_complete"]["sum_ns"] + st["complete_reap"]["sum_ns"] == \
        st["total"]["sum_ns"]
    assert not events.get("aio_reap_unobserved")


def test_a_lost_block_completion_is_given_as_the_reason(loopdev, no_bpf_leak):
    """A block completion no program saw (made here with --lose-completions, as the kernel
    makes them: drops.complete_unseen) leaves its aio request's submit_complete and
    complete_reap unmeasured. They were said to be "not linked to bios" and "reaped without
    io_getevents", neither true of libaio reads of a device: the reason names the drop."""
    tracer = Tracer(["-l", "block,aio", "-P", "-O", "--lose-completions", "25", "600"])
    subprocess.run([str(LOAD), "--engine", "libaio", "--rw", "randread", "--ios", "400",
                    "--qd", "8", "--device", loopdev, "--force"], check=True,
                   capture_output=True)
    out = tracer.stop()
    said = {m[0]: m[1] for m in re.findall(
        r"unmeasured: aio (\w+) \[pread pid \d+ iostrata-load\] \d+ of 400: (.*)", out)}
    assert set(said) >= {"submit_complete", "complete_reap"}, out
    for stage in ("submit_complete", "complete_reap"):
        assert "block completion reached no program (see drops)" in said[stage], said
    assert "complete_unseen=" in out, out


def test_counts_exact_past_the_per_cpu_keys(loopdev, no_bpf_leak):
    """One key fits the per-CPU histogram map (--hist-keys 1, as few as a host with many CPUs
    holds): the other processes' keys go to the shared spill map, counted there exactly."""
    def run():
        tracer = Tracer(["-l", "aio", "-P", "-O", "-j", "--hist-keys", "1"])
        for rw, n in (("randread", 300), ("randwrite", 120), ("randread", 200)):
            subprocess.run([str(LOAD), "--engine", "libaio", "--rw", rw, "--ios", str(n),
                            "--qd", "16", "--device", loopdev, "--force"], check=True,
                           capture_output=True)
        return tracer, records(tracer.stop())
    recs = run()[1]
    per = {}
    for rec in recs:
        schema_check(rec, SCHEMA_DOC)
        for h in rec["hists"]:
            if h["layer"] == "aio" and h["labels"].get("comm") == "iostrata-load":
                k = (h["labels"]["pid"], h["labels"]["opcode"], h["stage"])
                per[k] = per.get(k, 0) + h["count"] + h["unmeasured"]
    assert not drops_of(recs), drops_of(recs)
    for stage in ("total", "submit_complete", "complete_reap"):
        got = sorted((op, n) for (pid, op, s), n in per.items() if s == stage)
        assert got == [("pread", 200), ("pread", 300), ("pwrite", 120)], (stage, per)


@pytest.mark.parametrize("layers", ["block,aio", "aio"])
def test_reaped_in_user_space_is_not_observable(tmp_path, layers, no_bpf_leak):
    """20 reads reaped from the aio ring in user memory, never through io_getevents: the 19
    whose iocb was submitted again are counted as not observable; none gets a reap time. The
    20th, still in the table when tracing stops, is counted as unmeasured then: every read is
    in total, timed or not. With the block layer each read is linked: its submit_complete and
    its bios' stages (submit_bio, wait, device) were seen and are measured, all 20; without it
    none is linked, and those stages count each read as unmeasured, as they do a reaped one.
    (The 19 were in none of them but submit_complete, and there only when linked.)"""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 256)  # 64 KiB
    def run():
        tracer = Tracer(["-l", layers, "-P", "-O", "-j"])
        subprocess.run([str(REAPER), "aio-ring", "20", str(f)], check=True)
        return tracer, records(tracer.stop())
    # submit_complete ends at the block completion: one no program received would leave it 19
    st, events = aio_stages(without_unseen(run)[1], "reaper")
    assert events.get("aio_reap_unobserved") == 19, events
    assert st["total"]["count"] == 0 and st["total"]["unmeasured"] == 20, st
    linked = 20 if layers == "block,aio" else 0
    # complete_reap starts at the completion, seen only when linked: the 20th, in the table at
    # the stop, is in it only then (req_pending_final); the 19 ended, as a reaped read does
    assert (st["complete_reap"]["count"], st["complete_reap"]["unmeasured"]) == \
        (0, 20 if linked else 19), st
    for stage in ("submit_complete", "submit_bio", "wait", "device"):
        assert (st[stage]["count"], st[stage]["unmeasured"]) == (linked, 20 - linked), \
            (stage, st)
    if linked:
        assert sum(st[s]["sum_ns"] for s in ("submit_bio", "wait", "device")) == \
            st["submit_complete"]["sum_ns"], st


def test_one_iocb_submitted_again_while_in_flight(tmp_path, no_bpf_leak):
    """The kernel copies an iocb at io_submit, so an application may submit one struct iocb
    again before the first submission's event is reaped: every event then names the same
    address, and aio_data tells them apart. 20 reads so (aio_data 1..20), then all 20 reaped
    through io_getevents: each is its own request, timed from its own submission to its own
    reap, linked to its own bios, and none is taken for a reap that was not observed. (Keyed by
    the address alone, each resubmission counted the one before as reaped unobserved, and the
    first reap took the last submission's entry: 1 read timed from the wrong submission, 19
    not timed.)"""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 16 * 20)  # 80 KiB: each read at its own offset
    def run():
        tracer = Tracer(["-l", "block,aio", "-P", "-O", "-j"])
        subprocess.run([str(REAPER), "aio-reuse", "20", str(f)], check=True)
        return tracer, records(tracer.stop())
    st, events = aio_stages(without_unseen(run)[1], "reaper")
    assert not events.get("aio_reap_unobserved"), events
    for stage in ("total", "submit_complete", "complete_reap", "submit_bio", "wait", "device"):
        assert (st[stage]["count"], st[stage]["unmeasured"]) == (20, 0), (stage, st)
    # each request's stages from its own entry: they add up, to the nanosecond
    assert sum(st[s]["sum_ns"] for s in ("submit_bio", "wait", "device")) == \
        st["submit_complete"]["sum_ns"], st
    assert st["submit_complete"]["sum_ns"] + st["complete_reap"]["sum_ns"] == \
        st["total"]["sum_ns"], st


def test_partial_submit(tmp_path, no_bpf_leak):
    """io_submit takes 2 of 4 iocbs (the third has a bad fd): the 2 it refused leave no entry,
    so submitting them again later is not mistaken for a reap that was not observed."""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 256)
    tracer = Tracer(["-l", "block,aio", "-P", "-O", "-j"])
    subprocess.run([str(REAPER), "aio-partial", str(f)], check=True)
    recs = records(tracer.stop())
    st, events = aio_stages(recs, "reaper")
    assert st["total"]["count"] == 4 and st["total"]["unmeasured"] == 0, st
    assert not events.get("aio_reap_unobserved"), events
    # anywhere on the host (no -d) a block completion may reach no program: that one is said
    assert set(drops_of(recs)) <= {"complete_unseen"}, drops_of(recs)


def test_an_entry_left_behind_is_not_taken_for_a_later_submission(tmp_path, no_bpf_leak):
    """An iocb's entry is its latest submission's at any age (a read held for minutes is
    measured: tests/test_long.py) only while every submission since was followed. Here a read
    is reaped from the ring in user memory, so its entry stays; 1.5 s later the same iocb is
    submitted through an iocbpp array no program can read, and reaped by io_getevents. The
    entry found is the first read's, older than that unfollowed submission and than the 1 s
    bound: a leftover, counted, never a 1.5 s read."""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 16)
    tracer = Tracer(["-l", "aio", "-P", "-O", "-j", "--stale-after", "1"])
    subprocess.run([str(REAPER), "aio-leftover", "1500", str(f)], check=True)
    recs = records(tracer.stop())
    st, events = aio_stages(recs, "reaper")
    assert all(v["count"] == 0 for v in st.values()), st
    assert not any(events.values()), events
    assert drops_of(recs) == {"aio_unreadable": 1, "aio_inflight_stale": 1}, drops_of(recs)


def test_a_submission_outside_the_traced_cgroup_is_not_taken_for_its_entry(tmp_path, cgroups,
                                                                           no_bpf_leak):
    """-c: the same, but the second submission is made from outside the traced cgroup, so no
    program follows it, and the iocb is reaped back inside. The entry found is still the first
    read's, 1.5 s old: a leftover, counted, never a 1.5 s read."""
    inside, outside = cgroups("aio-in"), cgroups("aio-out")
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 16)
    tracer = Tracer(["-l", "aio", "-P", "-O", "-j", "--stale-after", "1", "-c", str(inside)])
    subprocess.run([str(REAPER), "aio-leftover", "1500", str(f), str(inside), str(outside)],
                   check=True)
    recs = records(tracer.stop())
    st, events = aio_stages(recs, "reaper")
    assert all(v["count"] == 0 for v in st.values()), st
    assert not any(events.values()), events
    assert drops_of(recs) == {"aio_inflight_stale": 1}, drops_of(recs)


@pytest.mark.parametrize("mode,timed", [("aio-unreadable", 10), ("aio-unread-tail", 0)])
def test_unreadable_iocbs_are_counted_once(tmp_path, mode, timed, no_bpf_leak):
    """aio-unreadable: 10 reads whose iocbpp array sits in a file mapping the process never
    touched: the kernel faults it in, a BPF program cannot, so none is followed, and
    drops.aio_unreadable counts each; then 10 with an ordinary array, each followed and reaped.
    aio-unread-tail: 10 io_submit calls of 10 iocbs each, the array straddling two untouched
    mappings: the kernel reads the first two iocbs (faulting their page in), takes the first and
    refuses the second (bad fd), and never reads the other 8, whose page stays absent. Only the
    one iocb taken per call was a request the programs could not follow: 10 in aio_unreadable,
    not the 100 unreadable at entry, nor 180 (the refused 8 counted again at exit)."""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 16)
    tracer = Tracer(["-l", "aio", "-P", "-O", "-j"])
    subprocess.run([str(REAPER), mode, "10", str(f)], check=True)
    recs = records(tracer.stop())
    st, events = aio_stages(recs, "reaper")
    total = st.get("total", {"count": 0, "unmeasured": 0})
    assert (total["count"], total["unmeasured"]) == (timed, 0), st
    assert not any(events.values()), events
    assert drops_of(recs) == {"aio_unreadable": 10}


@pytest.mark.parametrize("qd", [1, 4, 32])
def test_every_reap_is_timed_or_unmeasured(tmp_path, qd, no_bpf_leak):
    """count + unmeasured of complete_reap and total equals the iocbs submitted, at any depth
    (issue 11): io_getevents returns every one of the load's 100 reads here, so every total is
    timed; without the block layer no completion is seen, so every complete_reap is unmeasured."""
    tracer = Tracer(["-l", "aio", "-P", "-O", "-j", "0.2"])
    subprocess.run([str(LOAD), "--engine", "libaio", "--rw", "randread", "--ios", "100",
                    "--qd", str(qd), "--size", "1m", "--file", str(tmp_path / "f")],
                   check=True, capture_output=True)
    st, _ = aio_stages(records(tracer.stop()), "iostrata-load")
    assert (st["total"]["count"], st["total"]["unmeasured"]) == (100, 0), st
    assert (st["complete_reap"]["count"], st["complete_reap"]["unmeasured"]) == (0, 100), st


def test_iocbs_beyond_the_batch_limit_are_each_counted(tmp_path, no_bpf_leak):
    """One io_submit of 1,100 iocbs and one io_getevents of their 1,100 events: the programs
    follow 1,024 of each (AIO_BATCH_MAX), and drops.aio_batch_cut counts each of the 76 + 76
    they did not follow (it counted 1 per call)."""
    tracer = Tracer(["-l", "aio", "-j"])
    subprocess.run([str(LOAD), "--engine", "libaio", "--rw", "randread", "--ios", "1100",
                    "--qd", "1100", "--submit-batch", "1100", "--complete-batch", "1100",
                    "--size", "8m", "--file", str(tmp_path / "f")], check=True,
                   capture_output=True)
    recs = records(tracer.stop())
    assert sum(r["drops"]["aio_batch_cut"] for r in recs) == 2 * (1100 - 1024), \
        [r["drops"] for r in recs]


def test_a_reaper_waiting_as_tracing_begins_is_followed(no_bpf_leak):
    """A thread already waiting in io_getevents when tracing begins (as an application's reaper
    usually is): its call's entry was not seen, so the events it returned were not read, and
    each request it reaped was taken, when its iocb came back, for one reaped in user memory
    (aio_reap_unobserved), with no reap time. The events are now found through the call's saved
    registers: 5 POLLs, the first reaped by that call, all 5 timed."""
    p = subprocess.Popen([str(REAPER), "aio-waiting", "5"], stdin=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    tracer = None
    try:
        # its waiter thread in io_getevents (208 on x86_64, 4 on arm64) before the attach
        nr = {"x86_64": "208", "aarch64": "4"}[os.uname().machine]
        deadline = time.monotonic() + 30
        while not any(Path(f"/proc/{p.pid}/task/{t}/syscall").read_text().split()[0] == nr
                      for t in os.listdir(f"/proc/{p.pid}/task") if t != str(p.pid)):
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
            time.sleep(0.01)
        tracer = Tracer(["-l", "aio", "-P", "-O", "-j"])
        p.stdin.write(b"x")
        p.stdin.close()
        assert p.wait(timeout=30) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        recs = records(tracer.stop()) if tracer else []
    st, events = aio_stages(recs, "reaper", opcode="poll")
    assert not events.get("aio_reap_unobserved"), events
    assert (st["total"]["count"], st["total"]["unmeasured"]) == (5, 0), st
