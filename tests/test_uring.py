"""Live-kernel tests of the io_uring layer: the test's own requests, per opcode and process."""
import json
import subprocess
import tempfile
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, SCHEMA, Tracer, merged_p50, records

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA_DOC = json.loads(SCHEMA.read_text())


@pytest.fixture(autouse=True)
def need_io_uring():
    p = Path("/proc/sys/kernel/io_uring_disabled")
    if p.exists() and p.read_text().strip() != "0":
        pytest.skip("io_uring is disabled on this kernel (kernel.io_uring_disabled)")


def uring_hists(recs, comm="iostrata-load"):
    out = {}
    for rec in recs:
        jsonschema.validate(rec, SCHEMA_DOC)
        for h in rec["hists"]:
            assert h["layer"] == "uring" and h["stage"] == "submit_cqe"
            if h["labels"].get("comm") != comm:
                continue
            key = (h["labels"]["opcode"], h["labels"].get("flags", ""))
            st = out.setdefault(key, {"count": 0, "buckets": [], "pids": set()})
            st["count"] += h["count"]
            st["buckets"] += h["buckets"]
            st["pids"].add(h["labels"]["pid"])
    return out


def load(*args):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        subprocess.run([str(LOAD), "--engine", "io_uring", *args,
                        *(["--size", "1m", "--file", f"{d}/f"] if "--op" not in args else [])],
                       check=True, capture_output=True)


def test_reads_counted_per_opcode(no_bpf_leak):
    tracer = Tracer(["-l", "uring", "-P", "-j"])
    load("--rw", "randread", "--ios", "300", "--qd", "8")
    load("--rw", "write", "--ios", "120", "--qd", "4")
    load("--op", "nop", "--ios", "500")
    recs = records(tracer.stop())
    h = uring_hists(recs)

    def count(op):  # inline and punted to io-wq together
        return sum(v["count"] for k, v in h.items() if k[0] == op)
    assert count("read") == 300, h.keys()
    assert count("write") == 120
    assert count("nop") == 500
    assert all(len(v["pids"]) == 1 for v in h.values())


@pytest.mark.parametrize("latency_ms", [1, 10])
def test_timeout_submit_cqe_is_the_known_latency(latency_ms, no_bpf_leak):
    """TIMEOUT requests of a known duration: submit -> CQE p50 within 5 % of it."""
    tracer = Tracer(["-l", "uring", "-P", "-j"])
    load("--op", "timeout", "--latency", f"{latency_ms}ms", "--ios", "60")
    recs = records(tracer.stop())
    t = uring_hists(recs)[("timeout", "")]
    assert t["count"] == 60
    p50 = merged_p50(t["buckets"])
    assert abs(p50 - latency_ms * 1e6) <= 0.05 * latency_ms * 1e6, p50


def test_io_wq_punts_are_counted_apart(no_bpf_leak):
    """Buffered writes on a regular file cannot complete inline: io_uring hands them to io-wq."""
    tracer = Tracer(["-l", "uring", "-P", "-j"])
    load("--rw", "write", "--buffered", "--ios", "200", "--qd", "4")
    recs = records(tracer.stop())
    h = uring_hists(recs)
    total = sum(v["count"] for k, v in h.items() if k[0] == "write")
    assert total == 200, h
    assert h.get(("write", "io-wq"), {"count": 0})["count"] > 0, h.keys()
