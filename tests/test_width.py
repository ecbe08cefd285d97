"""Tables of names line up on a terminal: processes and cgroups named in Cyrillic, CJK, with an
emoji or a combining accent do io_uring reads on a loop device, and every row of every text view
that pads their names (snoop's COMM and CGROUP, compare's LABELS and its --aa table) keeps its
columns where the header has them, counted in display columns (Python's unicodedata), not
bytes. The trace's own views (-P -C -D, -W) print names in a row of their own: their table rows
line up too. The counts are the reads each process issued.
"""
import json
import os
import re
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest

from conftest import IOSTRATA, ROOT, Tracer

LOAD = ROOT / "bin" / "iostrata-load"
NAMES = ["fio", "тест", "测试", "\U0001f600x", "e\u0301z"]
IOS = 200


def cols(s):
    """Display columns of s: combining marks and format characters 0, East Asian Wide and
    Fullwidth 2, the rest 1."""
    n = 0
    for ch in s:
        cat = unicodedata.category(ch)
        if cat in ("Mn", "Me") or (cat == "Cf" and ch != "\u00ad"):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def spans(line):
    """(start, end) display columns of each run of non-blanks."""
    return [(cols(line[:m.start()]), cols(line[:m.end()])) for m in re.finditer(r"\S+", line)]


def cgroup2_mount():
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.startswith("cgroup2 "):
            return Path(pre.split()[4])
    pytest.skip("no cgroup2 hierarchy mounted")


@pytest.fixture
def named_cgroups():
    """A cgroup v2 directory with a short name at the top (snoop's CGROUP column is 20 wide)
    and one below it per name; all removed at the end."""
    top = cgroup2_mount() / f"w{os.getpid()}"
    top.mkdir()
    made = [top]
    try:
        for name in NAMES:
            made.append(top / name)
            made[-1].mkdir()
        yield top
    finally:
        for path in reversed(made):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            assert not path.exists(), f"cgroup {path} left behind"


def assert_rows_line_up(header, rows, left, right, what):
    """The columns named in left start, those in right end, where the header's do."""
    hs = dict(zip(header.split(), spans(header)))
    for row in rows:
        got = spans(row)
        for i, name in left:
            assert got[i][0] == hs[name][0], (what, name, header, row)
        for i, name in right:
            assert got[i][1] == hs[name][1], (what, name, header, row)


@pytest.mark.root
def test_names_in_any_script_keep_the_columns(tmp_path, loopdev, named_cgroups, no_bpf_leak):
    rel = "/" + str(named_cgroups.relative_to(cgroup2_mount()))
    rec = tmp_path / "rec.ndjson"
    common = ["-l", "uring", "-c", str(named_cgroups)]
    trace = Tracer(["-o", str(rec), *common, "-P", "-C", "-D", "0.2"], command=("record",))
    wf = Tracer([*common, "-P", "-W"])
    snoop = Tracer(["--slower", "0", *common], command=("snoop",))
    for name in NAMES:  # each runs the load through a symlink named so: that is its comm
        (tmp_path / name).symlink_to(LOAD)
    loads = [subprocess.Popen(
        ["sh", "-c", 'cg=$1 n=$2; shift 2; echo $$ > "$cg/cgroup.procs" && exec "./$n" "$@"', "sh",
         str(named_cgroups / name), name, "--engine", "io_uring", "--device", loopdev,
         "--force", "--rw", "randread", "--ios", str(IOS), "--qd", "4", "--size", "32m"],
        cwd=tmp_path, stdout=subprocess.DEVNULL) for name in NAMES]
    assert [p.wait(timeout=60) for p in loads] == [0] * len(NAMES)
    text, wf_text, snoop_text = trace.stop(), wf.stop(), snoop.stop()

    # every read was seen, under its process's name and cgroup
    seen = {}
    for line in rec.read_text().splitlines():
        r = json.loads(line)
        for h in r.get("hists", []) if r["type"] == "interval" else []:
            if h["stage"] == "submit_cqe" and h["labels"].get("opcode", "read") == "read":
                key = (h["labels"].get("comm"), h["labels"].get("cgroup"))
                seen[key] = seen.get(key, 0) + h["count"] + h["unmeasured"]
    assert seen == {(n, f"{rel}/{n}"): IOS for n in NAMES}, seen

    # snoop: one line per read, COMM and CGROUP padded to their columns
    lines = snoop_text.splitlines()
    header = next(ln for ln in lines if ln.startswith("TIME "))
    rows = [ln for ln in lines if " uring " in ln]
    assert sorted(r.split()[4] for r in rows) == sorted(n for n in NAMES for _ in range(IOS))
    assert_rows_line_up(header, rows, [(1, "LAYER"), (4, "COMM"), (5, "CGROUP")],
                        [(2, "PID"), (3, "TID"), (6, "TOTAL")], "snoop")

    # compare: the LABELS column as wide as its widest label, in columns; what follows it is
    # ASCII, so where Q starts decides the rest of the row
    r = subprocess.run([str(IOSTRATA), "compare", str(rec), str(rec)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("  STAGE "))
    rows = [(ln, m) for ln in lines if (m := re.search(r"^  .*?  (p50|p90|p99|p99\.9)  ", ln))]
    assert all(any(f"{rel}/{n}" in ln for ln, _ in rows) for n in NAMES), r.stdout
    for row, m in rows:
        assert cols(row[:m.start(1)]) == cols(header[:header.index("  Q  ") + 2]), (header, row)
        assert row[m.start(1):].isascii(), row

    # compare --aa: the four rates end where P50 .. P99.9 do
    r = subprocess.run([str(IOSTRATA), "compare", str(rec), "--aa", "5"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  STAGE "))
    rows = [ln for ln in lines[at + 1:] if ln.startswith("  ")]
    assert all(any(f"{rel}/{n}" in ln for ln in rows) for n in NAMES), r.stdout
    for row in rows:
        assert [e for _, e in spans(row)[-4:]] == [e for _, e in spans(lines[at])[-4:]], \
            (lines[at], row)

    # the trace's views: each name in a line of its own, the stage rows under the header's
    for out, what in ((text, "-P -C -D"), (wf_text, "-W")):
        for n in NAMES:
            assert f" {n}" in out, (what, n, out)
        nrows = 0
        for b in re.split(r"\n(?=  STAGE|STAGE)", out)[1:]:
            header, *rest = b.splitlines()
            rows = [ln for ln in rest if re.match(r"  [a-z_]+ +\d+ ", ln)]
            nrows += len(rows)
            names = header.split()[1:]
            assert_rows_line_up(header, rows, [], [(i + 1, n) for i, n in enumerate(names)],
                                what)
        assert nrows, (what, out)
