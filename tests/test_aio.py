"""Live-kernel tests of the aio layer: native aio requests of the test's own processes, counted
exactly, linked to their bios, and never timed when their reap cannot be seen."""
import json
import subprocess

import jsonschema
import pytest

from conftest import ROOT, SCHEMA, Tracer, records

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
REAPER = ROOT / "bin" / "reaper"
SCHEMA_DOC = json.loads(SCHEMA.read_text())


def aio_stages(recs, comm):
    """{stage: {count, unmeasured, sum_ns}} over the aio records of one comm, and the events."""
    out, events = {}, {}
    for rec in recs:
        jsonschema.validate(rec, SCHEMA_DOC)
        for k, v in rec["events"].items():
            events[k] = events.get(k, 0) + v
        for h in rec["hists"]:
            if h["layer"] != "aio" or h["labels"].get("comm") != comm:
                continue
            assert h["labels"]["opcode"] == "pread", h["labels"]
            st = out.setdefault(h["stage"], {"count": 0, "unmeasured": 0, "sum_ns": 0})
            for f in st:
                st[f] += h[f]
    return out, events


@pytest.mark.parametrize("qd", [1, 32])
def test_libaio_direct_reads_counted_and_linked(loopdev, qd, no_bpf_leak):
    tracer = Tracer(["-l", "block,aio", "-P", "-O", "-j"])
    subprocess.run([str(LOAD), "--engine", "libaio", "--rw", "randread", "--ios", "300",
                    "--qd", str(qd), "--device", loopdev, "--force"], check=True,
                   capture_output=True)
    st, events = aio_stages(records(tracer.stop()), "iostrata-load")
    for stage in ("total", "submit_complete", "complete_reap", "submit_bio", "wait", "device"):
        assert st[stage]["count"] == 300, (stage, st)
        assert st[stage]["unmeasured"] == 0, (stage, st)
    # per request: submit_bio + wait + device == submit_complete, and + complete_reap == total
    assert sum(st[s]["sum_ns"] for s in ("submit_bio", "wait", "device")) == \
        st["submit_complete"]["sum_ns"]
    assert st["submit_complete"]["sum_ns"] + st["complete_reap"]["sum_ns"] == \
        st["total"]["sum_ns"]
    assert not events.get("aio_reap_unobserved")


def test_reaped_in_user_space_is_not_observable(tmp_path, no_bpf_leak):
    """20 reads reaped from the aio ring in user memory, never through io_getevents: the 19
    whose iocb was submitted again are counted as not observable, with their (linked)
    submit_complete still measured; none gets a reap time."""
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 256)  # 64 KiB
    tracer = Tracer(["-l", "block,aio", "-P", "-O", "-j"])
    subprocess.run([str(REAPER), "aio-ring", "20", str(f)], check=True)
    st, events = aio_stages(records(tracer.stop()), "reaper")
    assert events.get("aio_reap_unobserved") == 19, events
    assert st["total"]["count"] == 0 and st["total"]["unmeasured"] == 19, st
    assert st["complete_reap"]["count"] == 0 and st["complete_reap"]["unmeasured"] == 19
    assert st["submit_complete"]["count"] == 19, st


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
    assert not {k: v for rec in recs for k, v in rec["drops"].items() if v}
