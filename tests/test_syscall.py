"""Live-kernel tests of the syscall layer: the test's own syscalls, counted exactly per process."""
import json
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, SCHEMA, Tracer, records

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA_DOC = json.loads(SCHEMA.read_text())


def syscalls_of(recs, comm):
    """{syscall: count} for one comm, per process."""
    by_pid = {}
    for rec in recs:
        jsonschema.validate(rec, SCHEMA_DOC)
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


def test_layers_option_and_features(no_bpf_leak):
    out = subprocess.run([str(ROOT / "bin" / "iostrata"), "features", "-j"], capture_output=True,
                         text=True, check=True).stdout
    st = {(s["layer"], s["stage"]): s for s in json.loads(out)["stages"]}
    assert st["syscall", "duration"]["available"], st
    r = subprocess.run([str(ROOT / "bin" / "iostrata"), "-l", "block,nosuch"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unknown layer 'nosuch'" in r.stderr
