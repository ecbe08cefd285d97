"""iostrata record: the trace options, a file of NDJSON records (meta, intervals, end) written
line by line; and the report of a real recording with known latencies in it.

- Known latency lands in the right rows: io_uring TIMEOUTs of 1 ms and 10 ms and a psync
  read load, recorded with real BPF, rendered with --svg: the cells (data-lo, data-hi, data-n)
  that hold those latencies count exactly what the load issued.
- Every record the recording holds validates against docs/interval.schema.json; -j prints the
  very same lines; .gz is gzip.
- SIGKILL mid-recording: the file reads up to its last whole line (plain and gzip), and the
  report shows it, said to be cut short.
- An existing file is refused unless --force; every exit path detaches (no_bpf_leak).
"""
import gzip
import json
import os
import select
import signal
import subprocess
import time
import zlib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (IOSTRATA, ROOT, SCHEMA, NotFiles, Tracer, assert_one_line_error,
                      schema_check, wait_no_bpf_programs)

pytestmark = pytest.mark.root

LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA_DOC = json.loads(SCHEMA.read_text())
SVG_NS = "{http://www.w3.org/2000/svg}"


class Recorder(Tracer):
    """bin/iostrata record -o OUT in the background, ready once it says it is tracing."""

    def __init__(self, out, *args, json_out=False):
        super().__init__(["-o", str(out), *args, *(["-j"] if json_out else [])],
                         command=("record",))

    def stop(self, sig=signal.SIGINT):
        return super().stop(sig, check=False)


def lines_of(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def flushed_lines(path, tail=None):
    """The whole lines of a recording still being written, or cut: a gzip stream without its
    end reads up to what was flushed (gzip.open raises EOFError at the end of what is there).
    tail: a list given the text after the last newline."""
    lines = []
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            for line in f:
                lines.append(line)
    except (EOFError, OSError):
        pass
    if tail is not None:
        tail.append(lines.pop() if lines and not lines[-1].endswith("\n") else "")
    return [line.rstrip("\n") for line in lines if line.endswith("\n")]


def load(*args):
    r = subprocess.run([str(LOAD), *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def panels(svg_dir):
    """[(attributes, [(lo, hi, n)])] of every panel SVG."""
    out = []
    for f in sorted(Path(svg_dir).glob("*.svg")):
        root = ET.parse(f).getroot()
        cells = [(int(e.get("data-lo")), float("inf") if e.get("data-hi") == "inf" else
                  int(e.get("data-hi")), int(e.get("data-n")))
                 for e in root.iter(SVG_NS + "rect") if e.get("data-n")]
        out.append((root.attrib, cells))
    return out


def count_in(cells, lo, hi):
    """I/O in the cells whose range meets [lo, hi)."""
    return sum(n for a, b, n in cells if a < hi and b > lo)


def test_known_latency_lands_in_the_right_rows(tmp_path, no_bpf_leak):
    rec, svg = tmp_path / "rec.ndjson.gz", tmp_path / "svg"
    r = Recorder(rec, "-l", "uring,syscall", "-P", "-O")
    load("--engine", "io_uring", "--op", "timeout", "--latency", "1ms", "--ios", "200")
    load("--engine", "io_uring", "--op", "timeout", "--latency", "10ms", "--ios", "100")
    psync = load("--engine", "psync", "--rw", "randread", "--ios", "500", "--size", "1m",
                 "--file", str(tmp_path / "f"))
    r.stop()
    assert r.proc.returncode == 0, r.stderr
    out = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(tmp_path / "r.html"),
                          "--svg", str(svg), "--top", "50"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    ps = panels(svg)
    # io_uring TIMEOUT, submit -> CQE: the loads' label sets (one per process, opcode timeout)
    timeouts = [c for a, cells in ps for c in cells
                if a["data-layer"] == "uring" and a["data-stage"] == "submit_cqe" and
                "timeout" in a["data-labels"] and "iostrata-load" in a["data-labels"]]
    assert sum(n for _, _, n in timeouts) == 300, timeouts
    ms = 1_000_000
    # every probe in the rows from its latency up (a timer fires late, never early: on a
    # busy host one in a few hundred fires a millisecond late), none below it
    assert count_in(timeouts, 0.9 * ms, 5 * ms) == 200, timeouts
    assert count_in(timeouts, 9 * ms, 50 * ms) == 100, timeouts
    assert sum(n for lo, hi, n in timeouts if hi <= 0.9 * ms or 5 * ms <= lo < hi <= 9 * ms) == 0
    # and nearly all in the rows of the latency itself
    assert count_in(timeouts, 0.9 * ms, 1.5 * ms) >= 190, timeouts
    assert count_in(timeouts, 9 * ms, 13 * ms) >= 95, timeouts
    # the merged panel says the same
    merged = [cells for a, cells in ps if a["data-layer"] == "uring" and
              a["data-stage"] == "submit_cqe" and a["data-labels"].startswith("all ")]
    assert len(merged) == 1 and count_in(merged[0], 9 * ms, 50 * ms) == 100
    # psync: the load's pread64 calls, each in the row of its duration
    job = psync["jobs"][0]["read"]
    preads = [c for a, cells in ps for c in cells
              if a["data-layer"] == "syscall" and a["data-labels"].startswith("pread64") and
              "iostrata-load" in a["data-labels"]]
    assert sum(n for _, _, n in preads) == job["total_ios"] == 500
    # the tracer's median row against the load's own median (it times the call from user
    # space, so it can only be longer; the margin is the bucket error and a wake-up)
    cum, median_row = 0, None
    for lo, hi, n in sorted(preads):
        cum += n
        if cum >= 250:
            median_row = (lo, hi)
            break
    load_p50 = job["lat_ns"]["percentile"]["50.000000"]
    assert median_row[0] <= load_p50 * 1.04 and median_row[1] >= load_p50 / 4, \
        (median_row, load_p50)
    print(f"timeouts: 200 in 0.9-1.5 ms, 100 in 9-13 ms; pread64 500, median row "
          f"{median_row}, load p50 {load_p50}")
    # the real recording's SVGs are well formed and draw, like the synthetic one's
    files = sorted(svg.glob("*.svg"))
    x = subprocess.run(["xmllint", "--noout", *map(str, files)], capture_output=True, text=True)
    assert x.returncode == 0, x.stderr
    for f in files[:8]:
        d = subprocess.run(["rsvg-convert", str(f), "-o", str(tmp_path / "p.png")],
                           capture_output=True, text=True)
        assert d.returncode == 0, (f, d.stderr)


def test_records_validate_and_json_prints_the_same_lines(tmp_path, no_bpf_leak):
    rec = tmp_path / "rec.ndjson"
    r = Recorder(rec, "-D", "-F", "-P", "-O", "0.3", json_out=True)
    load("--engine", "io_uring", "--op", "nop", "--ios", "300")
    load("--engine", "libaio", "--rw", "randread", "--ios", "200", "--size", "1m",
         "--file", str(tmp_path / "f"))
    time.sleep(0.7)
    out = r.stop()
    assert r.proc.returncode == 0, r.stderr
    lines = lines_of(rec)
    assert out.splitlines() == lines, "-j printed other lines than the file holds"
    recs = [json.loads(l) for l in lines]
    for x in recs:
        schema_check(x, SCHEMA_DOC)
    assert recs[0]["type"] == "meta" and recs[-1]["type"] == "end"
    assert all(x["type"] == "interval" for x in recs[1:-1]) and len(recs) >= 4
    meta, end = recs[0], recs[-1]
    assert meta["format"] == 1 and meta["cpus"] == os.cpu_count()
    assert meta["buckets"] == {"scheme": "log-linear", "exact_below_ns": 16, "per_octave": 16,
                               "overflow_from_ns": 1 << 36, "slots": 529}
    assert {l["name"] for l in meta["layers"]} >= {"block", "uring"}
    assert all(l["attach"] for l in meta["layers"])
    assert {d["name"] for d in meta["disks"]} == set(os.listdir("/sys/block"))
    assert end["reason"] == "signal" and end["intervals"] == len(recs) - 2
    # the end's totals are the intervals' sums
    for t in end["totals"]:
        assert t["count"] == sum(h["count"] for x in recs[1:-1] for h in x["hists"]
                                 if h["layer"] == t["layer"] and h["stage"] == t["stage"])
    for name, n in end["drops"].items():
        assert n == sum(x["drops"].get(name, 0) for x in recs[1:-1])
    nops = sum(h["count"] for x in recs[1:-1] for h in x["hists"]
               if h["layer"] == "uring" and h["stage"] == "submit_cqe" and
               h["labels"].get("opcode") == "nop" and h["labels"].get("comm") == "iostrata-load")
    assert nops == 300


@pytest.mark.parametrize("name", ["rec.ndjson", "rec.ndjson.gz"])
def test_sigkill_leaves_a_readable_file(tmp_path, name, no_bpf_leak):
    rec = tmp_path / name
    r = Recorder(rec, "-l", "uring", "0.1")
    deadline = time.monotonic() + 30
    # a few intervals on disk (gzip: each line is sync-flushed; the stream has no end yet, and
    # read as a whole file it never had a line: the wait always ran its 30 s)
    while len(flushed_lines(rec)) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    r.stop(signal.SIGKILL)
    assert r.proc.returncode == -signal.SIGKILL
    tail = []
    lines = flushed_lines(rec, tail)    # gzip: the stream has no end, what was flushed reads
    assert len(lines) >= 6 and tail == [""], tail     # every write a whole line
    for l in lines:
        schema_check(json.loads(l), SCHEMA_DOC)
    assert json.loads(lines[-1])["type"] == "interval"
    out = tmp_path / "r.html"
    rep = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(out)],
                         capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    assert len(rep.stderr.splitlines()) <= 1      # gzip: one warning, the stream is cut
    assert "no end record" in out.read_text()


def test_existing_file_is_refused_unless_force(tmp_path, no_bpf_leak):
    rec = tmp_path / "rec.ndjson"
    rec.write_text("precious\n")
    r = subprocess.run([str(IOSTRATA), "record", "-o", str(rec), "--duration", "0.2"],
                       capture_output=True, text=True, timeout=60)
    assert_one_line_error(r, "exists", "--force")
    assert rec.read_text() == "precious\n"
    # a bare stage name with -l: the layers -l names have it (uring.device and aio.device were
    # in the meta too)
    r = subprocess.run([str(IOSTRATA), "record", "-o", str(rec), "--force", "-l", "block",
                        "--stages", "device", "--duration", "0.3", "-j"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(l) for l in lines_of(rec)]
    for x in recs:
        schema_check(x, SCHEMA_DOC)
    assert recs[0]["type"] == "meta" and recs[-1]["reason"] == "duration"
    assert recs[0]["options"]["stages"] == ["block.device"]


def test_force_keeps_a_file_until_the_recording_begins(tmp_path, no_bpf_leak):
    """--force replaces a regular file, but only once the session runs: a session that cannot
    start leaves it as it was. A device node, a FIFO or a symlink is refused even with --force
    (a FIFO without a reader once blocked the open for ever). A disk with no room for the meta
    record leaves no file."""
    for name in ("keep.ndjson.gz", "keep.ndjson"):  # .gz: zlib once wrote an empty stream
        keep = tmp_path / name
        keep.write_text("precious\n")
        r = subprocess.run([str(IOSTRATA), "record", "-o", str(keep), "--force", "--fail-probe",
                            "block_rq_complete", "-l", "block", "--duration", "1"],
                           capture_output=True, text=True, timeout=60)
        assert_one_line_error(r, "block_rq_complete", "unavailable")
        assert keep.read_text() == "precious\n", name
    nf = NotFiles(tmp_path, keep)
    for target in nf.all:
        # without --force too: the hint '--force to overwrite it' led to a refusal
        for force in (["--force"], []):
            r = subprocess.run([str(IOSTRATA), "record", "-o", str(target), *force, "-l",
                                "block", "--duration", "1"], capture_output=True, text=True,
                               timeout=60)
            line = assert_one_line_error(r, "not a regular file")
            assert "--force" not in line, line
    assert nf.untouched() and keep.read_text() == "precious\n"
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        (full / "fill").write_bytes(b"x" * 65536)
        r = subprocess.run([str(IOSTRATA), "record", "-o", str(full / "r.ndjson"), "-l", "block",
                            "--duration", "1"], capture_output=True, text=True, timeout=60)
        # the meta record did not fit: no file, and the line does not say otherwise
        assert_one_line_error(r, "No space left", "not one record written: no file is left")
        assert sorted(os.listdir(full)) == ["fill"]
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert wait_no_bpf_programs() == []


def whole_lines(path):
    """The lines of a recording, a cut gzip stream read as far as it goes; and whether the file
    ends at the end of a line."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = zlib.decompressobj(wbits=31).decompress(data)
    return data.decode().splitlines(), data.endswith(b"\n")


@pytest.mark.parametrize("name", ["rec.ndjson", "rec.ndjson.gz"])
def test_a_disk_filling_up_keeps_the_whole_records(tmp_path, name, no_bpf_leak):
    """The disk fills during the recording: one error line, exit 1, and the file keeps every
    record written whole, ending with the last of them (a cut line once stayed at the end)."""
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        # 16 KiB left: room for the meta record of a host with a few hundred disks; 12,000
        # intervals pass it, even gzipped (~25 bytes each when idle)
        (full / "fill").write_bytes(b"x" * (65536 - 16384))
        rec = full / name
        r = subprocess.run([str(IOSTRATA), "record", "-o", str(rec), "-l", "block", "-D", "-F",
                            "0.005", "--duration", "60"], capture_output=True, text=True,
                           timeout=120)
        # the intervals before it were shown as they came
        assert_one_line_error(r, "No space left", "last whole record", quiet_stdout=False)
        lines, whole = whole_lines(rec)
        assert whole and len(lines) >= 2, (whole, len(lines))
        recs = [json.loads(l) for l in lines]
        for x in recs:
            schema_check(x, SCHEMA_DOC)
        assert recs[0]["type"] == "meta" and {x["type"] for x in recs[1:]} == {"interval"}
        print(f"{name}: {len(recs)} whole records, {rec.stat().st_size} bytes")
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert wait_no_bpf_programs() == []


@pytest.mark.parametrize("args,needles", [
    (["--duration", "1"], ["record needs -o FILE"]),
    (["-o", "/nonexistent/dir/rec.ndjson"], ["cannot create /nonexistent/dir/rec.ndjson"]),
    (["-o", "{tmp}", "--force"], ["cannot create"]),
    (["-o", "{tmp}/r.ndjson", "-l", "nosuch"], ["unknown layer 'nosuch'"]),
    (["-o", "{tmp}/r.ndjson", "--fail-probe", "block_rq_complete", "-l", "block",
      "--duration", "1"], ["block_rq_complete", "unavailable"]),
])
def test_bad_record_input(tmp_path, args, needles, no_bpf_leak):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = subprocess.run([str(IOSTRATA), "record", *argv], capture_output=True, text=True,
                       timeout=60)
    assert_one_line_error(r, *needles)
    assert not (tmp_path / "r.ndjson").exists(), "a file left from a recording that never began"
    assert wait_no_bpf_programs() == []


def test_count_ends_the_recording_and_text_goes_to_stdout(tmp_path, no_bpf_leak):
    rec = tmp_path / "rec.ndjson.gz"
    r = subprocess.run([str(IOSTRATA), "record", "-o", str(rec), "-l", "block", "0.2", "3"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("interval 0.") == 3 and "drops:" in r.stdout
    recs = [json.loads(l) for l in lines_of(rec)]
    assert [x["type"] for x in recs] == ["meta", "interval", "interval", "interval", "end"]
    assert recs[-1]["reason"] == "count" and recs[-1]["intervals"] == 3


@pytest.mark.parametrize("closed", [">&-", "2>&-"])
def test_a_closed_stdout_or_stderr_writes_nothing_into_the_recording(tmp_path, closed,
                                                                     no_bpf_leak):
    """stdout (or stderr) closed: the recording took its descriptor, and the view (or -v's
    lines) went into the recording between its records."""
    rec = tmp_path / "rec.ndjson"
    r = subprocess.run(["bash", "-c", f"exec {IOSTRATA} record -v -o {rec} -l block 0.2 2 "
                        f"{closed}"], capture_output=True, text=True, timeout=60)
    # the view on a closed stdout is said to fail, the recording going on (exit 1)
    assert r.returncode == (1 if closed == ">&-" else 0), r.stderr
    recs = [json.loads(l) for l in lines_of(rec)]
    assert [x["type"] for x in recs] == ["meta", "interval", "interval", "end"]


@pytest.mark.parametrize("json_out", [False, True])
def test_a_view_that_cannot_be_written_is_said_and_the_recording_goes_on(tmp_path, json_out,
                                                                         no_bpf_leak):
    """stdout a full disk: the view (text, or -j's copy of the records) was lost and record
    exited 0 without a word. The recording is whole; one error line says the view failed, exit 1.
    A reader that goes away (a closed pipe) stays a way to stop reading, exit 0."""
    rec = tmp_path / "rec.ndjson"
    j = " -j" if json_out else ""
    r = subprocess.run(["bash", "-c", f"exec {IOSTRATA} record{j} -o {rec} -l block 0.2 2 "
                        ">/dev/full"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    line = r.stderr.strip()
    assert len(r.stderr.splitlines()) == 1 and "No space left on device" in line, r.stderr
    assert f"the recording {rec} is whole" in line, line
    recs = [json.loads(l) for l in lines_of(rec)]
    assert [x["type"] for x in recs] == ["meta", "interval", "interval", "end"]
    rec.unlink()
    r = subprocess.run(["bash", "-c", f"{IOSTRATA} record{j} -o {rec} -l block 0.2 2 | "
                        "head -c1 >/dev/null; exit ${PIPESTATUS[0]}"], capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stderr) == (0, ""), r
    assert [json.loads(l)["type"] for l in lines_of(rec)] == ["meta", "interval", "interval",
                                                             "end"]


@pytest.mark.parametrize("disk", [False, True], ids=["default", "disk"])
def test_report_says_what_a_default_runs_empty_lists_mean(tmp_path, loopdev, disk,
                                                           no_bpf_leak):
    """A run without -l or --stages records `layers: []` and `stages: []`: every available
    layer and every stage, or with -d the block layer alone. The report's Recording section
    showed them raw, `[]`, as if nothing had been traced; it says what they mean (and said
    "every available layer" of a -d run, beside its one layer)."""
    rec, page = tmp_path / "r.ndjson", tmp_path / "r.html"
    where = ["-d", loopdev] if disk else []
    r = subprocess.run([str(IOSTRATA), "record", "-o", str(rec), *where, "--duration", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    opts = json.loads(rec.read_text().splitlines()[0])["options"]
    assert opts["layers"] == [] and opts["stages"] == []
    r = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(page)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    section = html[html.index('<section id="recording">'):]
    said = "the block layer (-d without -l)" if disk else "every available layer (no -l)"
    assert f"<dt>layers</dt><dd>{said}</dd>" in section, section[:2000]
    assert "<dt>stages</dt><dd>every stage of those layers (no --stages)</dd>" in section
    assert "<dd>[]</dd>" not in section
