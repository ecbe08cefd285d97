"""iostrata report: recordings in, one HTML page (and one SVG per panel) out; no root needed.

- A real browser renders it: headless Chromium's DOM has every panel and the render marker,
  its screenshot is not blank; xmllint finds every SVG well formed, rsvg-convert draws each.
- Damaged input: a recording cut mid-line (plain and gzip), an older or a newer format give a
  report of what is there and one warning line; garbage, an empty file, a directory, a 2 GB
  line, a bucket outside the scheme give one error line and a non-zero exit, never a crash
  and never a partial file.
The known-latency check (real BPF, real loads) is in test_record.py.
"""
import gzip
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from conftest import IOSTRATA, ROOT, NotFiles, assert_one_line_error

sys.path.insert(0, str(ROOT / "tests" / "helpers"))
from synthrec import hist_hi, hist_index, hist_lo, synthesize  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def report(*args, check=False):
    r = subprocess.run([str(IOSTRATA), "report", *map(str, args)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Two minutes of every layer, 20 label sets, a few drops: the report and its SVGs."""
    d = tmp_path_factory.mktemp("synthetic")
    rec = d / "rec.ndjson.gz"
    synthesize(rec, 120)
    r = report(rec, "-o", d / "report.html", "--svg", d / "svg", check=True)
    assert r.stderr == "", r.stderr
    return d


def svg_cells(path):
    """(the panel's attributes, [(lo, hi, n)]) of one SVG file."""
    root = ET.parse(path).getroot()
    cells = [(int(e.get("data-lo")), None if e.get("data-hi") == "inf" else
              int(e.get("data-hi")), int(e.get("data-n")))
             for e in root.iter(SVG_NS + "rect") if e.get("data-n")]
    return root.attrib, cells


def test_cells_are_whole_buckets_and_add_up(synthetic):
    """Every cell's range is a run of whole buckets of bpf/hist.h, and a panel's cells add
    up to the I/O it says it shows (the panel's data-count)."""
    files = sorted((synthetic / "svg").glob("*.svg"))
    assert len(files) > 20
    for f in files:
        attrs, cells = svg_cells(f)
        assert cells, f
        for lo, hi, n in cells:
            assert hist_lo(hist_index(lo)) == lo, (f, lo)
            assert hi is None or hist_hi(hist_index(hi - 1)) == hi, (f, hi)
            assert n > 0
        assert sum(n for _, _, n in cells) == int(attrs["data-count"]), f


def png_pixels(path):
    """The rows of an 8-bit RGB(A) PNG as bytes (enough of PNG for a screenshot)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows, bpp


@pytest.mark.skipif(not CHROMIUM, reason="chromium-headless-shell not installed "
                    "(scripts/deps.sh installs it)")
@pytest.mark.parametrize("width", [1280, 390])
def test_a_browser_renders_every_panel(synthetic, width):
    page = synthetic / "report.html"
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "a network resource"
    panels = int(re.search(r'name="iostrata-panels" content="(\d+)"', html).group(1))
    ids = re.findall(r'<div class="panel" id="([^"]+)"', html)
    assert len(ids) == panels > 20
    flags = ["--no-sandbox", "--hide-scrollbars", f"--window-size={width},2400"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    assert f'data-rendered="{panels}"' in dom, "the render marker is missing: the page did " \
        "not load whole"
    for i in ids:
        assert f'id="{i}"' in dom and f'id="svg-{i}"' in dom, i
    shot = synthetic / f"shot-{width}.png"
    subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    rows, bpp = png_pixels(shot)
    assert len(rows) == 2400 and len(rows[0]) == width * bpp
    # not blank: the grey levels vary (a blank page has one value)
    values = [sum(r[i:i + 3]) for r in rows[::8] for i in range(0, len(r), 8 * bpp)]
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    print(f"{width} px: {len(values)} samples, mean {mean / 3:.0f}, sd {math.sqrt(var) / 3:.1f}")
    assert var > 100, "the screenshot is blank"
    # and colour: the heatmaps' cells are not grey
    assert any(abs(r[i] - r[i + 2]) > 60 for r in rows[::8] for i in range(0, len(r), 4 * bpp))


def test_every_svg_is_well_formed_and_renders(synthetic, tmp_path):
    files = sorted((synthetic / "svg").glob("*.svg"))
    r = subprocess.run(["xmllint", "--noout", *map(str, files)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for f in files:
        out = tmp_path / (f.stem + ".png")
        r = subprocess.run(["rsvg-convert", str(f), "-o", str(out)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0 and out.stat().st_size > 1000, (f, r.stderr)


def test_summary_and_drops_are_on_the_page(synthetic):
    html = (synthetic / "report.html").read_text()
    assert 'id="drops"' in html and "events were lost" in html
    # the synthetic recording's drops: 3 in each of 4 intervals
    assert re.search(r"<strong>12 events were lost</strong>", html)
    for layer in ("block", "uring", "aio", "syscall"):
        assert f'id="layer-{layer}"' in html
    assert "synthetic" in html and "6.1.0" in html  # the meta record's host and kernel
    assert 'id="waterfalls"' in html


def test_no_drops_no_banner(tmp_path):
    rec = tmp_path / "r.ndjson"
    synthesize(rec, 20)
    lines = rec.read_text().splitlines()
    rec.write_text("\n".join(re.sub(r'"inflight_full":\d+', '"inflight_full":0', l)
                             for l in lines) + "\n")
    report(rec, "-o", tmp_path / "r.html", check=True)
    assert 'id="drops"' not in (tmp_path / "r.html").read_text()


def test_a_name_of_the_longest_length_is_written(tmp_path):
    """A 250-byte name: its temporary file, NAME.XXXXXX, passed NAME_MAX (255), and the page
    could not be made (fuzzing found it). Nothing but the page is left beside it."""
    rec = small_rec(tmp_path / "r.ndjson", [([{}], {})] * 3)
    out = tmp_path / ("p" * 245 + ".html")
    report(rec, "-o", out, check=True)
    assert "<html" in out.read_text()
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted([rec.name, out.name])


def small_rec(path, intervals, n=20):
    """A recording of block/device histograms: intervals is a list of (hists' labels list,
    drops dict) per 1 s interval, each histogram n samples of 1 us."""
    start = 1_700_000_000 * 10**9
    lines = [{"type": "meta", "format": 1, "host": "h", "version": "test", "start_ns": start,
              "argv": ["record"]}]
    for t, (labels, drops) in enumerate(intervals):
        lines.append({"type": "interval", "ts": start + (t + 1) * 10**9, "interval_ns": 10**9,
                      "hists": [{"layer": "block", "stage": "device", "count": n,
                                 "sum_ns": 1000 * n, "min_ns": 1000, "max_ns": 1000,
                                 "unmeasured": 0, "buckets": [[992, 1024, n]], "labels": lb}
                                for lb in labels], "drops": drops, "events": {}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_what_the_meta_record_lacks_is_not_made_up(tmp_path):
    """A meta record without cpus or start_ns: the header said "0 CPUs" and the Recording
    section "started 1970-01-01". Neither is said now."""
    rec = small_rec(tmp_path / "r.ndjson", [([{}], {})] * 3)
    lines = [json.loads(l) for l in rec.read_text().splitlines()]
    del lines[0]["start_ns"]
    rec.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    assert "0 CPUs" not in html and "1970" not in html, html[:2000]
    assert "<dt>started</dt><dd>not recorded</dd>" in html
    lines[0]["cpus"] = 8
    rec.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report(rec, "-o", tmp_path / "s.html", check=True)
    assert "8 CPUs" in (tmp_path / "s.html").read_text()


def test_drops_beyond_the_named_ones_are_in_the_banner(tmp_path):
    """The banner's total was the sum of the first 48 drop names met, zeros among them (a
    recording names every counter): a drop under a 49th name had a red mark and no banner."""
    rec = small_rec(tmp_path / "r.ndjson", [
        ([{}], {f"zero_{i}": 0 for i in range(48)}),
        ([{}], {"inflight_full": 7, **{f"a_{i}": 1 for i in range(40)}}),
        ([{}], {f"b_{i}": 1 for i in range(40)})])     # 81 names with drops, 48 have room
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    assert "<strong>87 events were lost</strong>" in html, html[:3000]
    assert "inflight_full&nbsp;7" in html and "other&nbsp;33" in html
    assert "zero_" not in html and "(in 2 of 3 intervals" in html


@pytest.mark.parametrize("drops,said,unsaid", [
    # a completion the kernel ran no program for is no event the tracer saw, and no option
    # helps: the banner said "the tracer saw them" and sent everyone to --inflight
    ({"complete_unseen": 96}, ["complete_unseen</em>: block requests the kernel completed "
                               "without running a BPF program", "no option changes it"],
     ["--inflight", "hist_full</em>"]),
    ({"uring_inflight_full": 5, "block_inflight_stale": 1},
     ["<code>--inflight</code> makes it larger"], ["complete_unseen</em>", "hist_full</em>"]),
    ({"syscall_hist_full": 3, "complete_unseen": 1},
     ["hist_full</em>: more label sets", "complete_unseen</em>"], ["--inflight"]),
], ids=["unseen", "inflight", "hist-and-unseen"])
def test_the_drops_banner_says_what_each_reason_is(tmp_path, drops, said, unsaid):
    rec = small_rec(tmp_path / "r.ndjson", [([{}], drops)])
    report(rec, "-o", tmp_path / "r.html", check=True)
    banner = re.search(r'<div class="drops".*?</div>', (tmp_path / "r.html").read_text(), re.S)[0]
    assert f"<strong>{sum(drops.values())} events were lost</strong>" in banner, banner
    assert "the tracer saw them" not in banner, banner
    for s in said:
        assert s in banner, (s, banner)
    for s in unsaid:
        assert s not in banner, (s, banner)


def test_panel_ids_are_unique_after_renaming(tmp_path):
    """Ids are slugs of the labels; a clash was renamed once ("all" + "-2"), never checked
    again: a label set slugging to that new name ("all-2") gave two panels one id, one SVG
    file for both, and a page with duplicate ids."""
    rec = small_rec(tmp_path / "r.ndjson", [([{"comm": "all-2"}, {}], {})] * 4)
    r = report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    html = (tmp_path / "r.html").read_text()
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    n = int(re.search(r"(\d+) SVG files", r.stdout).group(1))
    assert len(list((tmp_path / "svg").glob("*.svg"))) == n == 3, r.stdout


def test_a_failed_page_replaces_no_svg(tmp_path):
    """--force over an earlier --svg directory, with a page that cannot be written (no such
    directory): the SVGs used to be put in place first, so the failed run had replaced them.
    Now the page is written before any SVG is touched."""
    rec = small_rec(tmp_path / "a.ndjson", [([{}], {})] * 4)
    report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    before = {f.name: f.read_bytes() for f in (tmp_path / "svg").iterdir()}
    other = small_rec(tmp_path / "b.ndjson", [([{}], {})] * 9, n=50)
    r = report(other, "-o", tmp_path / "nodir" / "r.html", "--svg", tmp_path / "svg", "--force")
    assert_one_line_error(r, "cannot create")
    assert r.returncode == 1
    assert {f.name: f.read_bytes() for f in (tmp_path / "svg").iterdir()} == before


def test_the_page_is_none_of_the_svgs(tmp_path):
    """-o naming one of the files --svg writes, or by another spelling of its directory: the
    page and the panel were the same file. With --force the run exited 0 with the page where
    the panel should be; without, it said what it had written, then failed. Refused before any
    file is written."""
    rec = small_rec(tmp_path / "a.ndjson", [([{}], {})] * 4)
    report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    (name,) = [f.name for f in (tmp_path / "svg").iterdir()]
    before = (tmp_path / "svg" / name).read_bytes()
    for args in (["--svg", tmp_path / "svg", "-o", tmp_path / "svg" / name, "--force"],
                 ["--svg", f"{tmp_path}/./svg/", "-o", f"{tmp_path}/svg//{name}", "--force"]):
        r = report(rec, *args)
        assert_one_line_error(r, "is also a file --svg writes", f"/{name})")
        assert r.returncode == 1 and not r.stdout, r.stdout
    assert [f.name for f in (tmp_path / "svg").iterdir()] == [name]
    assert (tmp_path / "svg" / name).read_bytes() == before


@pytest.mark.parametrize("nivs", [121, 180, 241])
def test_a_steady_load_has_no_stripes(tmp_path, nivs):
    """180 intervals in 120 columns put 1 and 2 intervals in turn in a column, and a cell's
    colour was its count: a steady load showed as stripes. Colours are now counts scaled to a
    column of as many intervals as the fullest (tooltips and data-n keep the count), at the
    full 120 columns."""
    rec = small_rec(tmp_path / "r.ndjson", [([{}], {})] * nivs, n=100)
    report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    (svg,) = (tmp_path / "svg").glob("*.svg")
    root = ET.parse(svg).getroot()
    cells = [(e.get("x"), int(e.get("data-n")), e.get("fill"))
             for e in root.iter(SVG_NS + "rect") if e.get("data-n")]
    per = -(-nivs // 120)
    assert len({x for x, _, _ in cells}) == 120, len(cells)
    assert {n for _, n, _ in cells} <= {100 * k for k in range(per - 1, per + 1)}, cells
    assert sum(n for _, n, _ in cells) == 100 * nivs
    assert len({f for _, _, f in cells}) == 1, sorted({f for _, _, f in cells})
    text = ET.tostring(root, encoding="unicode")
    assert "per column of as many intervals" in text


# ---------------------------------------------------------------------------------------------
# damaged and foreign input

def one_warning(r, *needles):
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "warning" in lines[0], r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize("gz", [False, True])
def test_cut_mid_line_reports_what_is_there(tmp_path, gz):
    whole = tmp_path / "whole.ndjson"
    synthesize(whole, 30)
    data = whole.read_bytes()
    lines = data.split(b"\n")
    cut = len(b"\n".join(lines[:21])) + 1 + len(lines[21]) // 2   # inside the 21st interval
    out = tmp_path / "r.html"
    if gz:
        rec = tmp_path / "cut.ndjson.gz"
        z = gzip.compress(data[:cut])
        rec.write_bytes(z[:len(z) - 9])   # and the gzip stream cut short too
        needles = []
    else:
        rec = tmp_path / "cut.ndjson"
        rec.write_bytes(data[:cut])
        needles = ["cut short"]
    r = report(rec, "-o", out)
    one_warning(r, *needles)
    html = out.read_text()
    # plain: every whole line before the cut; gzip cut short too may hold back the last
    # whole line it decoded (zlib returns nothing from the read that meets the cut)
    ok = ("20 intervals",) if not gz else ("20 intervals", "19 intervals")
    assert any(n in html for n in ok), re.findall(r"\d+ intervals", html)
    assert "no end record" in html


@pytest.mark.parametrize("cut", ["trailer", "half-trailer", "at-a-line"])
def test_a_gzip_stream_cut_short_at_a_line_is_said(tmp_path, cut):
    """A .gz whose writer died between two lines: its deflate data may end whole, its trailer
    (CRC-32 and length) missing, so nothing checked what was read; or it ends inside the deflate
    data exactly where a line ended. zlib's gzread returns no error for either (only gzerror
    says "unexpected end of file"): read as far as it goes, and said."""
    whole = tmp_path / "whole.ndjson"
    synthesize(whole, 30)
    data = whole.read_bytes()
    if cut == "at-a-line":
        lines = data.split(b"\n")
        part = b"\n".join(lines[:21]) + b"\n"             # the meta record, 20 intervals
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        raw = z.compress(part) + z.flush(zlib.Z_SYNC_FLUSH)   # no final block, no trailer
        want = "20 intervals"
    else:
        z = gzip.compress(data)
        raw = z[:len(z) - (8 if cut == "trailer" else 4)]
        want = "30 intervals"
    rec = tmp_path / "cut.ndjson.gz"
    rec.write_bytes(raw)
    r = report(rec, "-o", tmp_path / "r.html")
    one_warning(r, "the gzip stream is cut short")
    assert want in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("after", ["text", "zeros", "one-byte", "plain-records"])
def test_bytes_after_the_gzip_data_are_said(tmp_path, after):
    """What follows a whole gzip stream and is not gzip (a plain recording appended to a
    compressed one, padding, a stray byte): zlib's gzread ignores it without a word, so records
    there were lost unsaid (gzip -t: "trailing garbage ignored"). Read up to there, and said,
    with the byte it starts at."""
    whole = tmp_path / "whole.ndjson"
    synthesize(whole, 30)
    data = whole.read_bytes()
    lines = data.split(b"\n")
    head = b"\n".join(lines[:16]) + b"\n"      # the meta record and 15 intervals
    body, tail, want = {
        "text": (data, b"hello world\n", "30 intervals"),
        "zeros": (data, bytes(1000), "30 intervals"),
        "one-byte": (data, b"x", "30 intervals"),
        "plain-records": (head, b"\n".join(lines[16:]), "15 intervals"),
    }[after]
    z = gzip.compress(body)
    rec = tmp_path / "rec.ndjson.gz"
    rec.write_bytes(z + tail)
    r = report(rec, "-o", tmp_path / "r.html")
    lines = r.stderr.splitlines()
    assert r.returncode == 0 and lines, r.stderr
    assert f"rec.ndjson.gz: what follows the gzip data, from byte {len(z)}, is not gzip: read " \
        "up to there" in lines[0], r.stderr
    assert want in (tmp_path / "r.html").read_text()


def test_concatenated_gzip_members_are_read_whole(tmp_path):
    """gzip members one after another (a recording compressed in two runs, cat a.gz b.gz) are
    one stream: every record read, nothing said."""
    whole = tmp_path / "whole.ndjson"
    synthesize(whole, 30)
    lines = whole.read_bytes().split(b"\n")
    rec = tmp_path / "rec.ndjson.gz"
    rec.write_bytes(gzip.compress(b"\n".join(lines[:16]) + b"\n") +
                    gzip.compress(b"\n".join(lines[16:])))
    r = report(rec, "-o", tmp_path / "r.html")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert "30 intervals" in (tmp_path / "r.html").read_text()


def test_a_damaged_gzip_member_is_an_error(tmp_path):
    whole = tmp_path / "whole.ndjson"
    synthesize(whole, 30)
    z = bytearray(gzip.compress(whole.read_bytes()))
    z[-6] ^= 0xff                                   # its CRC-32
    rec = tmp_path / "rec.ndjson.gz"
    rec.write_bytes(bytes(z))
    r = report(rec, "-o", tmp_path / "r.html")
    assert_one_line_error(r, "rec.ndjson.gz: damaged gzip data")
    assert not (tmp_path / "r.html").exists()


def test_older_format_without_meta(tmp_path):
    """iostrata -j output, or a recording from before the meta record: read, and said."""
    rec = tmp_path / "old.ndjson"
    synthesize(rec, 10, meta_record=False, end_record=False)
    r = report(rec, "-o", tmp_path / "r.html")
    one_warning(r, "no meta record")
    assert "10 intervals" in (tmp_path / "r.html").read_text()


def test_newer_format_is_read_with_a_warning(tmp_path):
    """A newer format: fields this build does not know are skipped, one warning says so."""
    rec = tmp_path / "new.ndjson"
    synthesize(rec, 10, fmt=7, extra={"compression": "zstd-dict"})
    lines = rec.read_text().splitlines()
    lines[3] = lines[3].replace('"type":"interval"', '"type":"interval","cpu":{"busy":[3,4]}')
    rec.write_text("\n".join(lines) + "\n")
    r = report(rec, "-o", tmp_path / "r.html")
    one_warning(r, "format 7")
    assert "10 intervals" in (tmp_path / "r.html").read_text()


def test_unknown_record_types_are_skipped_with_a_warning(tmp_path):
    rec = tmp_path / "new.ndjson"
    synthesize(rec, 10)
    lines = rec.read_text().splitlines()
    for at in (3, 6):
        lines.insert(at, json.dumps({"type": "annotation", "ts": 1, "text": "deploy"}))
    rec.write_text("\n".join(lines) + "\n")
    r = report(rec, "-o", tmp_path / "r.html")
    one_warning(r, "annotation")
    assert "10 intervals" in (tmp_path / "r.html").read_text()


def make_2g_line(p):
    with open(p, "wb") as f:
        f.write(b'{"type":"interval","ts":1,"interval_ns":1,"hists":[],"x":"')
        f.truncate(2 << 30)        # sparse: a 2 GB line that takes no disk


@pytest.mark.parametrize("make,needles", [
    (lambda p: p.write_bytes(os.urandom(4096)), ["not an iostrata recording"]),
    (lambda p: p.write_bytes(b"hello world\nfoo\n"), ["not an iostrata recording"]),
    (lambda p: p.write_bytes(b'{"type":"meta","format":1}\n[1,2\n{"type":"end"}\n'),
     ["damaged"]),
    (lambda p: p.write_bytes(b""), ["empty"]),
    (lambda p: p.mkdir(), ["directory"]),
    (make_2g_line, ["longer than 64 MiB"]),
    (lambda p: p.write_bytes(gzip.compress(b"\x00garbage\xff" * 100)),
     ["not an iostrata recording"]),
    (lambda p: p.write_bytes(b'{"type":"meta"}\n'), ["no iostrata records"] and []),
    (lambda p: p.write_bytes(b'{"type":"interval","ts":1,"interval_ns":1,"hists":[{"layer":'
                             b'"block","stage":"total","labels":{},"count":1,"sum_ns":5,'
                             b'"min_ns":5,"max_ns":5,"unmeasured":0,"buckets":[[5,7,1]]}]}\n'),
     ["another bucket scheme"]),
    (lambda p: p.write_bytes(b'{"type":"interval","ts":1,"interval_ns":1,"hists":[{"layer":'
                             b'"block","stage":"total","labels":{},"count":99999999999999999999'
                             b'9,"sum_ns":5}]}\n'), ["without its count"]),
    # bucket counts whose sum wraps round 2^64 to the count
    (lambda p: p.write_bytes(b'{"type":"interval","ts":2000000000,"interval_ns":1000000000,'
                             b'"hists":[{"layer":"block","stage":"total","labels":{},"count":1,'
                             b'"sum_ns":5,"min_ns":640,"max_ns":700,"buckets":[[640,672,'
                             b'18446744073709551615],[672,704,2]]}]}\n'), ["overflow 64 bits"]),
    # a NUL byte mid-line: the tokenizer stopped there, the rest of the line unread, unsaid
    (lambda p: p.write_bytes(b'{"type":"interval","ts":1,"interval_ns":1,"hists":[],\x00'
                             b'"drops":{"x":1}}\n'), ["NUL byte"]),
    # an unmeasured that is not a count (once read as 0)
    (lambda p: p.write_bytes(b'{"type":"interval","ts":1,"interval_ns":1,"hists":[{"layer":'
                             b'"block","stage":"total","labels":{},"count":1,"sum_ns":5,'
                             b'"min_ns":5,"max_ns":5,"unmeasured":"lots","buckets":[[5,6,1]]}]}'
                             b'\n'), ["unmeasured is not a count"]),
    # a time at the end of the u64 range (report's columns once looped there, forever)
    (lambda p: p.write_bytes(b'{"type":"interval","ts":18446744073709551615,"interval_ns":1,'
                             b'"hists":[]}\n'), ["out of range"]),
    # an interval after the end record: two recordings run together
    (lambda p: p.write_bytes(b'{"type":"interval","ts":2000000000,"interval_ns":1,"hists":[]}\n'
                             b'{"type":"end","ts":2000000000,"reason":"duration"}\n'
                             b'{"type":"interval","ts":3000000000,"interval_ns":1,"hists":[]}\n'),
     ["after the end record"]),
    # 100,000 brackets deep (quadratic in the tokenizer): refused at once
    (lambda p: p.write_bytes(b'{"type":"interval","ts":2000000000,"interval_ns":1,"hists":[],'
                             b'"x":' + b"[" * 100000 + b"]" * 100000 + b"}\n"),
     ["nested deeper"]),
], ids=["random", "text", "damaged-middle", "empty", "directory", "2g-line", "gzip-garbage",
        "meta-only", "bucket-scheme", "overflow", "bucket-wrap", "nul", "unmeasured", "ts-range",
        "after-end", "depth"])
def test_bad_input_is_one_line_error(tmp_path, make, needles):
    rec = tmp_path / "bad.ndjson"
    make(rec)
    out = tmp_path / "r.html"
    r = report(rec, "-o", out)
    if not needles:    # a meta record and nothing else: an empty report, said as such
        assert r.returncode == 0 and "no intervals recorded" in out.read_text()
        return
    assert_one_line_error(r, *needles)
    assert sorted(os.listdir(tmp_path)) == ["bad.ndjson"], "a partial report"


def test_a_proc_file_is_read_not_called_empty(tmp_path):
    """/proc files report a size of 0 and have content: /proc/version was refused as 'empty
    file'. It is read, and refused for what it is."""
    r = report("/proc/version", "-o", tmp_path / "r.html")
    assert_one_line_error(r, "/proc/version: not an iostrata recording (line 1: not JSON)")
    assert not (tmp_path / "r.html").exists()


def test_torn_histograms_are_mended_with_a_warning(tmp_path):
    """A histogram whose count, min, max or sum disagrees with its buckets (a write torn by the
    loader's read, which builds before this one wrote as it was) is taken from its buckets, with
    one warning: the whole recording was once refused for it."""
    def h(count, sum_ns, lo, hi, buckets):
        return {"layer": "block", "stage": "device", "labels": {"disk": "vda", "op": "read"},
                "count": count, "sum_ns": sum_ns, "min_ns": lo, "max_ns": hi,
                "unmeasured": 0, "buckets": [[hist_lo(hist_index(v)), hist_hi(hist_index(v)),
                                              n] for v, n in buckets]}
    torn = [h(1, 100_000, 100_000, 100_000, [(100_000, 1)]),
            h(1, 0, 100_000, 100_000, [(100_000, 1)]),             # the sum left behind
            h(2, 200_000, 100_000, 100_000, [(100_000, 1)]),       # the count ahead
            h(1, 100_000, 100_000, 10**12, [(100_000, 1)]),        # a max from nowhere
            h(0, 0, None, None, [(100_000, 1)])]                   # the bucket alone
    rec = tmp_path / "torn.ndjson"
    rec.write_text("".join(json.dumps({"type": "interval", "ts": (t + 2) * 10**9,
                                       "interval_ns": 10**9, "hists": [x], "drops": {},
                                       "events": {}}) + "\n" for t, x in enumerate(torn)))
    r = report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg")
    assert r.returncode == 0, r.stderr
    warns = [line for line in r.stderr.splitlines() if "taken from its buckets" in line]
    assert len(warns) == 1 and "torn.ndjson:2:" in warns[0], r.stderr
    attrs, cells = svg_cells(tmp_path / "svg" / "block-device-vda-read.svg")
    assert int(attrs["data-count"]) == 5 == sum(n for _, _, n in cells), (attrs, cells)
    html = (tmp_path / "r.html").read_text()
    row = re.search(r'<a href="#block-device-vda-read">device</a></td>.*?</tr>', html).group(0)
    assert re.findall(r"<td>([^<]*)</td>", row)[0] == "5" and "1000" not in row, row


@pytest.mark.parametrize("args,needles", [
    ([], ["at least one recording"]),
    (["x.ndjson"], ["needs -o"]),
    (["/nonexistent/x.ndjson", "-o", "r.html"], ["cannot open /nonexistent/x.ndjson"]),
    (["--top", "x", "a", "-o", "r.html"], ["bad --top"]),
    (["--top", " 5", "a", "-o", "r.html"], ["bad --top"]),
    (["--top", "+5", "a", "-o", "r.html"], ["bad --top"]),
    (["--scale", "cubic", "a", "-o", "r.html"], ["bad --scale"]),
    (["--bogus"], ["unknown option '--bogus'"]),
])
def test_bad_arguments(args, needles, tmp_path):
    r = subprocess.run([str(IOSTRATA), "report", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=30)
    assert_one_line_error(r, *needles)


def test_unwritable_output_leaves_nothing(tmp_path):
    rec = tmp_path / "r.ndjson"
    synthesize(rec, 5)
    r = report(rec, "-o", tmp_path / "nodir" / "r.html")
    assert_one_line_error(r, "cannot create")
    r = report(rec, "-o", tmp_path / "r.html", "--svg", rec)   # --svg names a file
    assert_one_line_error(r, "not a directory")
    assert not (tmp_path / "r.html").exists()


def test_a_summary_stdout_cannot_take_leaves_no_page(tmp_path):
    """stdout a full disk or closed: the line saying what was written could not be, and the run
    failed (exit 1) with the page and its SVGs left in place, so that the same command again
    was refused ("exists"). Now nothing is left, and the retry writes the report. A reader gone
    (a closed pipe) is a way to stop: the page is written, exit 0."""
    rec = tmp_path / "r.ndjson"
    synthesize(rec, 5)
    out, svg = tmp_path / "r.html", tmp_path / "svg"
    cmd = f"{IOSTRATA} report {rec} -o {out} --svg {svg}"
    for redirect, why in ((">/dev/full", "No space left on device"),
                          (">&-", "Bad file descriptor")):
        r = subprocess.run(["bash", "-c", f"{cmd} {redirect}"], capture_output=True, text=True,
                           timeout=120)
        assert_one_line_error(r, f"writing the output: {why} (no report written)")
        assert r.returncode == 1
        assert sorted(os.listdir(tmp_path)) == ["r.ndjson"], redirect
    r = subprocess.run(["bash", "-c", f"{cmd} | head -c1 >/dev/null; exit ${{PIPESTATUS[0]}}"],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, ""), r
    assert out.exists() and list(svg.glob("*.svg"))
    out.unlink()
    shutil.rmtree(svg)
    report(rec, "-o", out, "--svg", svg, check=True)


def test_two_files_make_one_timeline(tmp_path):
    a, b = tmp_path / "a.ndjson", tmp_path / "b.ndjson.gz"
    synthesize(a, 10, seed=1)
    synthesize(b, 10, seed=2)
    r = report(a, b, "-o", tmp_path / "ab.html", "--svg", tmp_path / "svg", check=True)
    assert r.stderr == ""
    html = (tmp_path / "ab.html").read_text()
    assert html.count("<dt>file</dt>") == 2
    # the same ten seconds twice: twenty intervals, each panel's I/O counted from both
    assert "20 intervals" in r.stdout
    want = {}
    for f in (a, b):
        raw = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        for line in raw.decode().splitlines():
            rec = json.loads(line)
            for h in rec.get("hists", []) if rec["type"] == "interval" else []:
                key = (h["layer"], h["stage"])
                want[key] = want.get(key, 0) + h["count"]
    got = {}
    for f in (tmp_path / "svg").glob("*-all.svg"):
        attrs, cells = svg_cells(f)
        got[(attrs["data-layer"], attrs["data-stage"])] = int(attrs["data-count"])
        assert sum(n for _, _, n in cells) == int(attrs["data-count"]), f
    assert got == {k: v for k, v in want.items() if v}, (got, want)
    # one file named twice would count each I/O twice: refused
    assert_one_line_error(report(a, tmp_path / "." / "a.ndjson", "-o", tmp_path / "aa.html"),
                          "same recording", "twice")
    assert not (tmp_path / "aa.html").exists()
    # a copy of it under another name (another inode): its meta record's host and start
    shutil.copy(a, tmp_path / "copy.ndjson")
    assert_one_line_error(report(b, a, tmp_path / "copy.ndjson", "-o", tmp_path / "aa.html"),
                          "a.ndjson and ", "copy.ndjson hold the same recording (host synthetic,",
                          "counted twice")
    # iostrata -j output has no meta record: its first interval tells the run, also against
    # a recording of it (b, another host recording the same seconds to the ns, which hosts do
    # not, would be taken for one too)
    lines = a.read_text().splitlines(True)
    (tmp_path / "j.ndjson").write_text("".join(lines[1:]))
    (tmp_path / "j2.ndjson").write_text("".join(lines[1:6]))
    for pair in (["j.ndjson", "j2.ndjson"], ["a.ndjson", "j.ndjson"], ["j.ndjson", "a.ndjson"]):
        r = report(*(tmp_path / f for f in pair), "-o", tmp_path / "aa.html")
        assert_one_line_error(r, f"{pair[0]} and ", f"{pair[1]} begin with the same interval",
                              "counted twice")
    assert not (tmp_path / "aa.html").exists()


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_standard_input_is_a_recording_named_dash(tmp_path, gz):
    """'-' reads standard input (zcat ... | iostrata report -): the same page as from the file;
    said as 'stdin'; named twice, refused like any recording given twice."""
    rec = tmp_path / ("r.ndjson.gz" if gz else "r.ndjson")
    synthesize(rec, 10, seed=4)
    from_file = report(rec, "-o", tmp_path / "f.html", "--svg", tmp_path / "fsvg", check=True)
    with open(rec, "rb") as f:
        r = subprocess.run([str(IOSTRATA), "report", "-", "-o", str(tmp_path / "s.html"),
                            "--svg", str(tmp_path / "ssvg")], stdin=f, capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    def shown(out):     # the panels and intervals (not the size: the page names its file)
        return re.sub(r"[\d.]+ KiB", "", out.splitlines()[0].split(":", 1)[1])
    assert shown(r.stdout) == shown(from_file.stdout), (r.stdout, from_file.stdout)
    assert sorted(p.name for p in (tmp_path / "ssvg").iterdir()) == \
        sorted(p.name for p in (tmp_path / "fsvg").iterdir())
    for p in (tmp_path / "fsvg").iterdir():
        assert (tmp_path / "ssvg" / p.name).read_bytes() == p.read_bytes(), p.name
    with open(rec, "rb") as f:
        r = subprocess.run([str(IOSTRATA), "report", "-", "-", "-o", str(tmp_path / "t.html")],
                           stdin=f, capture_output=True, text=True, timeout=120)
    assert_one_line_error(r, "standard input ('-') is named twice")
    assert not (tmp_path / "t.html").exists()



def test_standard_input_closed_is_not_called_a_directory(tmp_path):
    """'-' with standard input closed (`<&-`): main() holds fd 0 with an O_PATH descriptor of
    "/", and the reader said "stdin: is a directory, not a recording". It is a descriptor
    that cannot be read: said so, by report and by compare; a directory on stdin still is
    one."""
    rec = tmp_path / "r.ndjson"
    synthesize(rec, 3, seed=4)
    out = tmp_path / "r.html"
    for args in (["report", "-", "-o", str(out)], ["compare", str(rec), "-"]):
        r = subprocess.run(["sh", "-c", '"$@" <&-', "sh", str(IOSTRATA), *args],
                           capture_output=True, text=True, timeout=120)
        line = assert_one_line_error(r, "stdin", "Bad file descriptor")
        assert "directory" not in line, line
    assert not out.exists()
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        r = subprocess.run([str(IOSTRATA), "report", "-", "-o", str(out)], stdin=root,
                           capture_output=True, text=True, timeout=120)
    finally:
        os.close(root)
    assert_one_line_error(r, "stdin: is a directory")

def test_the_open_ended_bucket_is_a_bound_and_has_its_cells(tmp_path):
    """Latencies of 68.7 s and more share one open-ended bucket: a percentile there is shown as
    at least its lower bound (once the exact max, 200 s, for a p50 of 70 s), and its samples
    are in the heatmap however narrow the panel's span (once 100 of 600 left out)."""
    def hist(call, samples):
        counts = {}
        for v in samples:
            counts[hist_index(v)] = counts.get(hist_index(v), 0) + 1
        return {"layer": "syscall", "stage": "duration", "labels": {"syscall": call},
                "count": len(samples), "sum_ns": sum(samples), "min_ns": min(samples),
                "max_ns": max(samples), "unmeasured": 0,
                "buckets": [[hist_lo(i), hist_hi(i), counts[i]] for i in sorted(counts)]}
    rec = tmp_path / "x.ndjson"
    ivs = [{"type": "interval", "ts": (t + 2) * 10**9, "interval_ns": 10**9, "drops": {},
            "events": {}, "hists": [hist("io_getevents", [70_050_000_000] * 9 + [200 * 10**9]),
                                    hist("io_uring_enter", [50 * 10**9] * 50 + [80 * 10**9] * 10)]}
           for t in range(10)]
    rec.write_text("".join(json.dumps(iv) + "\n" for iv in ivs))
    report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    html = (tmp_path / "r.html").read_text()
    row = re.search(r'<tr><td class="l ls">syscall io_getevents</td>.*?</tr>', html).group(0)
    assert re.findall(r"<td>([^<]*)</td>", row) == ["100"] + ["&ge;70.0s"] * 4 + \
        ["200s", "0"], row
    # 50 x 50 s, 10 x 80 s: p90 and up between 68.7 s (the bucket's bound) and 80 s
    row = re.search(r'<tr><td class="l ls">syscall io_uring_enter</td>.*?</tr>', html).group(0)
    assert re.findall(r"<td>([^<]*)</td>", row) == ["600", "50.5s"] + ["&ge;68.7s"] * 3 + \
        ["80.0s", "0"], row
    for f in (tmp_path / "svg").glob("*.svg"):
        attrs, cells = svg_cells(f)
        assert sum(n for _, _, n in cells) == int(attrs["data-count"]), (f, cells)
        assert any(hi is None for _, hi, _ in cells), (f, cells)
        # the latency axis: one label for the open-ended row, no tick inside it (100 s, 200 s
        # and 500 s were once drawn there on one line), labels apart
        ticks = sorted((int(e.get("data-ns")), float(e.get("y")), e.text)
                       for e in ET.parse(f).getroot().iter(SVG_NS + "text") if e.get("data-ns"))
        assert ticks[-1][0] == 1 << 36 and ticks[-1][2] == "\u226568.7s", (f, ticks)
        assert all(v < 1 << 36 for v, _, _ in ticks[:-1]) and len(ticks) >= 3, (f, ticks)
        ys = [y for _, y, _ in ticks]
        assert all(a - b >= 12 for a, b in zip(ys, ys[1:])), (f, ticks)


def test_names_from_the_file_are_escaped(tmp_path):
    """A process name, a layer, stage or drop name in a recording is text, never markup."""
    rec = tmp_path / "x.ndjson"
    evil = "<script>alert(1)</script>"
    h = {"layer": "uring", "stage": "submit_cqe", "labels": {"comm": evil, "pid": 7,
                                                             "opcode": "read\"'&"},
         "count": 1, "sum_ns": 5000, "min_ns": 5000, "max_ns": 5000, "p50_ns": 5000,
         "p90_ns": 5000, "p99_ns": 5000, "p999_ns": 5000, "unmeasured": 0,
         "buckets": [[hist_lo(hist_index(5000)), hist_hi(hist_index(5000)), 1]]}
    other = dict(h, layer=evil, stage=evil, labels={})
    iv = {"type": "interval", "ts": 2_000_000_000, "interval_ns": 1_000_000_000,
          "hists": [h, other], "drops": {evil: 1}, "events": {evil: 2}}
    rec.write_text(json.dumps(iv) + "\n")
    r = report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg")
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    files = sorted((tmp_path / "svg").glob("*.svg"))
    assert files and all(re.fullmatch(r"[a-z0-9_-]+\.svg", f.name) for f in files), files
    x = subprocess.run(["xmllint", "--noout", *map(str, files)], capture_output=True, text=True)
    assert x.returncode == 0, x.stderr


def test_names_in_utf8_stay_apart_and_controls_do_not_pass(tmp_path):
    """Two processes named in Cyrillic that differ in one letter were both '??????' (one row,
    their counts summed): every non-ASCII byte was '?'. Well-formed UTF-8, raw or escaped (a
    surrogate pair too), is kept; controls (C1 too, raw or escaped) and bytes of no
    well-formed sequence are '?'."""
    def h(comm, pid, n):
        return {"layer": "uring", "stage": "submit_cqe",
                "labels": {"comm": comm, "pid": pid, "opcode": "read"}, "count": n,
                "sum_ns": 5000 * n, "min_ns": 5000, "max_ns": 5000, "unmeasured": 0,
                "buckets": [[hist_lo(hist_index(5000)), hist_hi(hist_index(5000)), n]]}
    iv = {"type": "interval", "ts": 2_000_000_000, "interval_ns": 1_000_000_000,
          "hists": [h("Жиз", 1, 3), h("Жиж", 1, 5), h("\U0001f600\u009b[31m", 3, 7),
                    h("a\uffffb\ufffe", 4, 9)],
          "drops": {}, "events": {}}
    line = json.dumps(iv, ensure_ascii=False).encode()
    # one name raw, with a raw C1 (U+0085 as UTF-8) and a byte of no sequence (0xff)
    line = line.replace(b'"comm": "\xd0\x96\xd0\xb8\xd0\xb7"',
                        b'"comm": "\xd0\x96\xd0\xb8\xd0\xb7\xc2\x85\xff"')
    rec = tmp_path / "x.ndjson"
    rec.write_bytes(line + b"\n")
    r = report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg")
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    rows = dict(re.findall(r'<tr><td class="l ls">uring read pid \d+ ([^<]*)</td><td class="l">'
                           r'<a [^>]*>submit_cqe</a></td><td>(\d+)</td>', html))
    # U+FFFE and U+FFFF are not XML 1.0 characters: '?' too (the SVGs must parse)
    assert rows == {"Жиз??": "3", "Жиж": "5", "\U0001f600?[31m": "7", "a?b?": "9"}, rows
    assert "\u0085" not in html and "\u009b" not in html and "\x1b" not in html
    files = sorted((tmp_path / "svg").glob("*.svg"))
    x = subprocess.run(["xmllint", "--noout", *map(str, files)], capture_output=True, text=True)
    assert x.returncode == 0, x.stderr


def test_variation_selectors_where_they_draw_something(tmp_path):
    """A process named with an emoji heart, U+2764 U+FE0F, was "\u2764?": every variation
    selector was '?'. Kept where it picks how the character before it is drawn; '?' where it
    draws nothing (after ASCII, at the start), so "fio" + U+FE00 cannot pass for "fio"."""
    def h(comm, pid):
        return {"layer": "uring", "stage": "submit_cqe",
                "labels": {"comm": comm, "pid": pid, "opcode": "read"}, "count": 2,
                "sum_ns": 10000, "min_ns": 5000, "max_ns": 5000, "unmeasured": 0,
                "buckets": [[hist_lo(hist_index(5000)), hist_hi(hist_index(5000)), 2]]}
    iv = {"type": "interval", "ts": 2_000_000_000, "interval_ns": 1_000_000_000,
          "hists": [h("\u2764\ufe0f", 1), h("fio\ufe00", 2), h("\ufe0fx", 3),
                    h("\u845b\U000e0100", 4)], "drops": {}, "events": {}}
    rec = tmp_path / "x.ndjson"
    rec.write_text(json.dumps(iv) + "\n")
    r = report(rec, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    rows = re.findall(r'<tr><td class="l ls">uring read pid \d+ ([^<]*)</td>',
                      (tmp_path / "r.html").read_text())
    assert sorted(rows) == sorted(["\u2764\ufe0f", "fio?", "?x", "\u845b\U000e0100"]), rows


def test_a_comm_cut_inside_a_character_keeps_its_tail(tmp_path):
    """The kernel cuts a comm at 15 bytes: "\u00e9" x 8 is "\u00e9" x 7 and the first byte of
    the eighth, which -j and recordings write as U+FFFD (3 bytes). Read back into 16 bytes it
    did not fit and was dropped: the process was reported as "\u00e9" x 7, one row with a
    process of that name, their counts summed. Each keeps its row and count."""
    def h(comm, n):
        return {"layer": "syscall", "stage": "syscall", "labels": {"comm": comm}, "count": n,
                "sum_ns": 5000 * n, "min_ns": 5000, "max_ns": 5000, "unmeasured": 0,
                "buckets": [[hist_lo(hist_index(5000)), hist_hi(hist_index(5000)), n]]}
    cut = "\u00e9" * 7 + "\ufffd"  # as the writer gives b"\xc3\xa9" * 7 + b"\xc3"
    worst = "\ufffd" * 15           # 15 bytes of no character
    iv = {"type": "interval", "ts": 2_000_000_000, "interval_ns": 1_000_000_000,
          "hists": [h("\u00e9" * 7, 3), h(cut, 5), h(worst, 7)], "drops": {}, "events": {}}
    rec = tmp_path / "x.ndjson"
    rec.write_text(json.dumps(iv) + "\n")
    r = report(rec, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    rows = dict(re.findall(r'<tr><td class="l ls">syscall ([^<]*)</td><td class="l">'
                           r'<a [^>]*>syscall</a></td><td>(\d+)</td>',
                           (tmp_path / "r.html").read_text()))
    assert rows == {"\u00e9" * 7: "3", cut: "5", worst: "7"}, rows


def test_latency_axis_has_labels_at_every_range(tmp_path):
    """Every heatmap's latency axis carries at least two labels, in order and inside the panel,
    whatever latency its I/O had: one bucket's I/O from 100 ns to 30 s, each a recording of its
    own (a panel spans two octaves at least; 2.1 to 8.4 ms holds one 1-2-5 value alone)."""
    for i in range(60):
        v = int(100 * 10 ** (i / 10))
        b = [hist_lo(hist_index(v)), hist_hi(hist_index(v)), 3]
        h = {"layer": "block", "stage": "device", "labels": {}, "count": 3,
             "sum_ns": 3 * b[0], "min_ns": b[0], "max_ns": b[0], "p50_ns": b[0],
             "p90_ns": b[0], "p99_ns": b[0], "p999_ns": b[0], "unmeasured": 0, "buckets": [b]}
        rec = tmp_path / f"r{i}.ndjson"
        rec.write_text(json.dumps({"type": "interval", "ts": 2_000_000_000,
                                   "interval_ns": 1_000_000_000, "hists": [h], "drops": {},
                                   "events": {}}) + "\n")
        svg = tmp_path / f"svg{i}"
        report(rec, "-o", tmp_path / f"r{i}.html", "--svg", svg, check=True)
        for f in svg.glob("*.svg"):
            root = ET.parse(f).getroot()
            _, cells = svg_cells(f)
            ticks = [(int(e.get("data-ns")), float(e.get("y")), e.text)
                     for e in root.iter(SVG_NS + "text") if e.get("data-ns")]
            assert len(ticks) >= 2, (v, f.name, ticks)
            # higher latency higher up, each label its own value, no two closer than a line
            ys = [y for _, y, _ in sorted(ticks)]
            assert all(a - b >= 12 for a, b in zip(ys, ys[1:])), (v, f.name, ticks)
            assert len({t for _, _, t in ticks}) == len(ticks), ticks
            frame = next(e for e in root.iter(SVG_NS + "rect") if e.get("class") == "frame")
            top, bottom = float(frame.get("y")), float(frame.get("y")) + float(frame.get("height"))
            # a label's baseline sits 4 px below its tick
            assert cells and all(top <= y - 4 <= bottom for _, y, _ in ticks), (v, ticks)


def test_escapes_are_read_in_linear_time(tmp_path):
    """A meta record of 2,000,000 \\u escapes in one string is read at once (each escape once
    cost a scan of the rest of the line)."""
    rec = tmp_path / "esc.ndjson"
    rec.write_text('{"type":"meta","options":{"k":"' + "\\u0041" * 2_000_000 + '"}}\n')
    r = report(rec, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr   # no interval: an empty report, said so; no timeout


def test_output_is_never_a_file_it_did_not_create(tmp_path):
    """-o and --svg: a file that exists is replaced only with --force, and never when it is an
    input or not a regular file (a device, a FIFO, a symlink); a stale NAME.tmp is not ours; a
    failure at the SVGs leaves every file as it was and nothing new."""
    rec = tmp_path / "rec.ndjson"
    synthesize(rec, 5)
    before = rec.read_bytes()
    old = tmp_path / "old.html"
    old.write_text("an older report")
    assert_one_line_error(report(rec, "-o", old), "old.html exists", "--force")
    assert old.read_text() == "an older report"
    for args in ([rec, "-o", rec], [rec, "-o", rec, "--force"]):
        assert_one_line_error(report(*args), "is also an input")
        assert rec.read_bytes() == before
    nf = NotFiles(tmp_path, old)
    for target in nf.all:
        assert_one_line_error(report(rec, "-o", target, "--force"), "not a regular file")
    assert nf.untouched() and old.read_text() == "an older report"
    stale = tmp_path / "new.html.tmp"
    stale.write_text("not the tool's")
    # the SVGs fail (--svg names a file): the page it would replace is kept, nothing is made
    listing = sorted(os.listdir(tmp_path))
    assert_one_line_error(report(rec, "-o", old, "--force", "--svg", old), "not a directory")
    assert_one_line_error(report(rec, "-o", tmp_path / "new.html", "--svg", tmp_path / "sub" /
                                 "deeper"), "cannot create")
    assert sorted(os.listdir(tmp_path)) == listing and old.read_text() == "an older report"
    # written: a new page and its SVGs; again, each SVG exists: refused; --force replaces all
    report(rec, "-o", tmp_path / "new.html", "--svg", tmp_path / "svg", check=True)
    assert stale.read_text() == "not the tool's"
    nsvg = len(list((tmp_path / "svg").glob("*.svg")))
    assert nsvg > 20
    assert_one_line_error(report(rec, "-o", tmp_path / "new2.html", "--svg", tmp_path / "svg"),
                          ".svg exists", "--force")
    assert not (tmp_path / "new2.html").exists()
    report(rec, "-o", old, "--svg", tmp_path / "svg", "--force", check=True)
    assert old.read_text().startswith("<!DOCTYPE html>")
    assert len(list((tmp_path / "svg").glob("*.svg"))) == nsvg
    # no temporary file left: only the stale one, which was never the tool's
    assert [f for f in os.listdir(tmp_path) if ".html." in f] == ["new.html.tmp"]


def test_a_long_label_set_is_cut_to_fit_its_panel_title_and_whole_in_its_tooltip(tmp_path):
    """A Kubernetes container's cgroup path in the label set: a small panel's title is cut
    with an ellipsis where it would run into the panel's count (it did), and the whole title
    is its tooltip; a title that fits is not cut."""
    cg = ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
          "0123456789abcdef" * 2 + ".slice/cri-containerd-" + "fedcba9876543210" * 4 + ".scope")
    html = cgroup_labelled_report(tmp_path, "long", cg)
    titles = re.findall(r'<text x="[\d.]+" y="16" style="font-weight:bold">'
                        r'(?:<title>([^<]*)</title>)?([^<]*)</text>', html.read_text())
    cut = [(whole, shown) for whole, shown in titles if whole]
    assert cut and all(shown.endswith("&#8230;") and whole.startswith(shown[:-len("&#8230;")])
                       for whole, shown in cut), cut[:3]
    assert all(cg in whole for whole, _ in cut if whole.startswith("uring ") and "[all " not in
               whole), cut[:3]
    assert ("", "uring submit_cqe [all opcodes and processes]") in titles, titles[:5]
    # as Chromium lays them out, no title reaches its count (bold text measured wider than the
    # cut allowed for, a small panel's cut title ran into it); the same path under twelve
    # components of wide (CJK) characters too
    wide = cgroup_labelled_report(tmp_path, "wide", "/\u30b7\u30b9\u30c6\u30e0" * 12 + cg)
    for html in (html, wide):
        measured = tmp_path / ("m-" + html.name)
        measured.write_text(html.read_text().replace("</body>", TITLE_BOXES + "</body>"))
        dom = subprocess.run([CHROMIUM, "--no-sandbox", "--dump-dom", measured.as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        boxes = [list(map(float, b.split())) for b in re.findall(r'data-tb="([^"]*)"', dom)]
        assert len(boxes) >= 4, dom[-500:]
        assert all(t_right + 4 <= c_left for _, t_right, c_left, _ in boxes), boxes
        # the label sets' table wraps the path: at 1200 px its figures need no scrolling (the
        # path on one line made the table 2,586 px wide in a 1,145 px box)
        width = re.search(r'data-ls="(\d+) (\d+)"', subprocess.run(
            [CHROMIUM, "--no-sandbox", "--window-size=1200,1000", "--dump-dom",
             measured.as_uri()], capture_output=True, text=True, timeout=120).stdout)
        assert width and int(width[1]) <= int(width[2]), width


# each panel's title (the first text on its top line) and count (the second): left and right;
# the label sets table's scroll box: its content's width and its own
TITLE_BOXES = """<script>for (const svg of document.querySelectorAll('svg')) {
const ts = [...svg.querySelectorAll('text')].filter(t => t.getAttribute('y') === '16');
if (ts.length < 2) continue;
const a = ts[0].getBBox(), b = ts[1].getBBox();
svg.setAttribute('data-tb', [a.x, a.x + a.width, b.x, b.x + b.width].join(' ')); }
const ls = document.querySelector('#labelsets .scroll');
document.documentElement.setAttribute('data-ls', ls.scrollWidth + ' ' + ls.clientWidth);
</script>"""


def cgroup_labelled_report(tmp_path, name, cg):
    """The sample recording with its io_uring records labelled by cgroup path cg, rendered."""
    rec = tmp_path / f"{name}.ndjson"
    with gzip.open(ROOT / "docs" / "sample" / "recording.ndjson.gz", "rt") as f, \
            open(rec, "w") as out:
        for line in f:
            r = json.loads(line)
            for h in r.get("hists", []) if r.get("type") == "interval" else []:
                if h["layer"] == "uring":
                    h["labels"]["cgroup"] = cg
            out.write(json.dumps(r) + "\n")
    html = tmp_path / f"{name}.html"
    report(rec, "-o", html, check=True)
    return html


def uring_hist(stage, pid, n, flags="", ns=1000):
    """n io_uring reads of process pid (comm "p<pid>"), each ns long (a 1 us bucket)."""
    lo = hist_lo(hist_index(ns))
    labels = {"opcode": "read", "pid": pid, "comm": f"p{pid}"}
    if flags:
        labels["flags"] = flags
    return {"layer": "uring", "stage": stage, "labels": labels, "count": n, "sum_ns": ns * n,
            "min_ns": ns, "max_ns": ns, "unmeasured": 0,
            "buckets": [[lo, hist_hi(hist_index(ns)), n]]}


def write_rec(path, intervals, host="h", kernel="6.1.0", cpus=2, argv=("record",),
              start=1_700_000_000 * 10**9):
    """A recording: intervals is a list of each 1 s interval's hists."""
    lines = [{"type": "meta", "format": 1, "host": host, "version": "test", "start_ns": start,
              "kernel": {"release": kernel, "version": "#1", "machine": "x86_64"},
              "cpus": cpus, "argv": list(argv)}]
    for t, hists in enumerate(intervals):
        lines.append({"type": "interval", "ts": start + (t + 1) * 10**9, "interval_ns": 10**9,
                      "hists": hists, "drops": {}, "events": {}})
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return path


def waterfall_heads(html):
    """The waterfalls' headings in page order: "uring [read 4000 p4000]"."""
    sec = html.split('id="waterfalls"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<div class="wfbox"><h3>([^<]*)</h3>', sec)


def wf_rows(html, head):
    """One waterfall's table rows: stage -> count (in the Waterfalls section: a layer of one
    label set has a summary table under the same heading)."""
    sec = html.split('id="waterfalls"', 1)[1].split("</section>", 1)[0]
    box = sec.split(f'<h3>{head}</h3>', 1)[1].split('<div class="wfbox">', 1)[0]
    return {m[0]: int(m[1]) for m in re.findall(
        r'<tr(?: class="sep")?><td class="l">(?:<span[^>]*></span>)?(\w+)(?: \(upper bound\))?'
        r'</td><td>(\d+)</td>',
        box)}


def test_waterfalls_rank_processes_by_their_requests_with_paths_merged(tmp_path):
    """Each process's paths (flags) merge into its one waterfall, ranked by its requests over
    the whole recording; --top of them are shown."""
    ivs = []
    for t in range(3):
        ivs.append([uring_hist("total", 1, 10), uring_hist("submit_cqe", 1, 10),
                    # process 2: 120 + 90 a second over two paths, the most in all
                    uring_hist("total", 2, 120), uring_hist("submit_cqe", 2, 120),
                    uring_hist("total", 2, 90, "sqpoll"), uring_hist("submit_cqe", 2, 90, "sqpoll"),
                    uring_hist("total", 3, 150), uring_hist("submit_cqe", 3, 150)])
    rec = write_rec(tmp_path / "r.ndjson", ivs)
    report(rec, "-o", tmp_path / "r.html", "--top", "2", check=True)
    html = (tmp_path / "r.html").read_text()
    heads = waterfall_heads(html)
    assert [h.split("[")[1] for h in heads] == ["read pid 2 p2]", "read pid 3 p3]"], heads
    assert wf_rows(html, heads[0]) == {"submit_cqe": 630, "total": 630}
    assert wf_rows(html, heads[1]) == {"submit_cqe": 450, "total": 450}


def test_waterfalls_mark_io_uring_s_reap_bounds(tmp_path):
    """io_uring's reap is read at the ring's next event, so its cqe_reap and its total are
    upper bounds, and both say so (total was shown as a plain figure); aio's total is not."""
    def aio(stage, n):
        h = uring_hist(stage, 5, n)
        h["layer"] = "aio"
        return h
    ivs = [[uring_hist(st, 4, 20) for st in ("submit_cqe", "cqe_reap", "total")] +
           [aio(st, 20) for st in ("submit_complete", "complete_reap", "total")]]
    rec = write_rec(tmp_path / "r.ndjson", ivs)
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    sec = html.split('id="waterfalls"', 1)[1].split("</section>", 1)[0]
    marked = {}
    for head in waterfall_heads(html):
        box = sec.split(f"<h3>{head}</h3>", 1)[1].split('<div class="wfbox">', 1)[0]
        marked[head.split()[0]] = re.findall(r'(\w+) \(upper bound\)</td>', box)
    assert marked == {"uring": ["cqe_reap", "total"], "aio": []}, marked


def limit_memory(nbytes):
    import resource
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))


def test_a_recording_of_many_processes_is_reported_in_bounded_memory(tmp_path):
    """20,000 processes (a 60 KB file): each waterfall once held nine whole histograms and was
    looked for among all the others, each series and label set a whole histogram: 100,000 took
    5.8 GB and 290 s (now 148 MB and 0.5 s). The report is made within 400 MB of address space
    (the old one ran out of memory), with the busiest process first."""
    rng = __import__("random").Random(7)
    pids = list(range(1000, 21000))
    rng.shuffle(pids)
    ivs = [[uring_hist(st, p, 3 if p == 17077 else 1) for p in pids[k:k + 1000]
            for st in ("submit_cqe", "total")] for k in range(0, len(pids), 1000)]
    rec = write_rec(tmp_path / "many.ndjson.gz", ivs)
    out = tmp_path / "r.html"
    r = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(out)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL,
                       preexec_fn=limit_memory(400 << 20))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    heads = waterfall_heads(html)
    assert len(heads) == 4 and heads[0].endswith("[read pid 17077 p17077]"), heads
    assert wf_rows(html, heads[0]) == {"submit_cqe": 3, "total": 3}


def test_counts_summed_past_2_64_are_refused(tmp_path):
    """Two intervals of 2^63 requests each: every histogram whole, but their sum wrapped to 0
    on the page. Now one line naming the file, and no page."""
    big = 1 << 63
    h = {"layer": "block", "stage": "device", "labels": {}, "count": big, "sum_ns": big,
         "min_ns": 1, "max_ns": 1, "unmeasured": 0, "buckets": [[1, 2, big]]}
    rec = write_rec(tmp_path / "wrap.ndjson", [[h], [h]])
    out = tmp_path / "r.html"
    r = report(rec, "-o", out)
    assert_one_line_error(r, "wrap.ndjson", "pass 2^64")
    assert not out.exists()
    # one interval of them is a page
    report(write_rec(tmp_path / "one.ndjson", [[h]]), "-o", out, check=True)

    # latency sums: 2^40 requests of 2^23 ns (8.4 ms) are 2^63 ns; twice in one stage wrap,
    # once in each of two stages do not (no sum on the page spans two stages)
    def stage(name):
        ns, n = 1 << 23, 1 << 40
        return {"layer": "block", "stage": name, "labels": {}, "count": n, "sum_ns": ns * n,
                "min_ns": ns, "max_ns": ns, "unmeasured": 0,
                "buckets": [[hist_lo(hist_index(ns)), hist_hi(hist_index(ns)), n]]}
    assert_one_line_error(report(write_rec(tmp_path / "sum.ndjson",
                                           [[stage("device")], [stage("device")]]),
                                 "-o", tmp_path / "s.html"), "sum.ndjson", "pass 2^64")
    report(write_rec(tmp_path / "two.ndjson", [[stage("wait")], [stage("device")]]),
           "-o", tmp_path / "t.html", check=True)


def test_recordings_of_two_hosts_name_both(tmp_path):
    """The header named the first file's host, kernel and command, as if every file were of
    it. Two hosts: both named; one host rebooted into another kernel: said to differ."""
    ivs = [[uring_hist("total", 5, 10)]]
    a = write_rec(tmp_path / "a.ndjson", ivs, host="alpha", kernel="6.1.0", argv=["record", "-P"])
    b = write_rec(tmp_path / "b.ndjson", ivs, host="beta", kernel="6.18.0", argv=["record"])
    c = write_rec(tmp_path / "c.ndjson", ivs, host="alpha", kernel="6.18.0", argv=["record", "-P"],
                  start=1_700_086_400 * 10**9)   # a day later, rebooted
    head = lambda html: html.split("<header>", 1)[1].split("</header>", 1)[0]  # noqa: E731
    title = lambda html: re.search(r"<title>([^<]*)</title>", html)[1]  # noqa: E731
    report(a, b, c, "-o", tmp_path / "abc.html", check=True)
    html = (tmp_path / "abc.html").read_text()
    assert "<strong>2 hosts</strong>: alpha, beta" in head(html), head(html)
    assert "Linux" not in head(html) and "record -P" not in head(html)
    assert title(html).startswith("I/O latency: 2 hosts")
    report(a, c, "-o", tmp_path / "ac.html", check=True)
    html = (tmp_path / "ac.html").read_text()
    assert "<strong>alpha</strong>" in head(html) and "kernels or CPUs differ" in head(html)
    assert "Linux" not in head(html) and "<code>record -P</code>" in head(html)
    report(a, "-o", tmp_path / "a.html", check=True)
    html = (tmp_path / "a.html").read_text()
    assert "<strong>alpha</strong> &middot; Linux 6.1.0 x86_64 &middot; 2 CPUs" in head(html)
    assert title(html).startswith("I/O latency: alpha")


def test_a_recording_repeated_is_refused(tmp_path):
    """`iostrata -j` output has no meta record, so `cat a a` (or a copy appended to itself)
    was read whole with only the no-meta warning: every interval, and its I/O, counted twice
    by report and by compare. No run ends two intervals at the same ns: an interval whose ts
    and interval_ns were read before is one error line naming both lines, for both."""
    once = "".join(json.dumps({"type": "interval", "ts": (t + 2) * 10**9, "interval_ns": 10**9,
                               "hists": [uring_hist("total", 5, 10)], "drops": {},
                               "events": {}}) + "\n" for t in range(3))
    rec = tmp_path / "once.ndjson"
    rec.write_text(once)
    r = report(rec, "-o", tmp_path / "once.html", check=True)
    assert "no meta record" in r.stderr
    twice = tmp_path / "twice.ndjson"
    twice.write_text(once + once)
    out = tmp_path / "twice.html"
    assert_one_line_error(report(twice, "-o", out), "twice.ndjson:4:", "line 1 again",
                          "counted twice")
    assert not out.exists()
    r = subprocess.run([str(IOSTRATA), "compare", str(rec), str(twice)], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert_one_line_error(r, "twice.ndjson:4:", "line 1 again")
    # a repeat of any interval, not only of the first: the last line again
    tail = tmp_path / "tail.ndjson.gz"
    tail.write_bytes(gzip.compress((once + once.splitlines(True)[-1]).encode()))
    assert_one_line_error(report(tail, "-o", out), "tail.ndjson.gz:4:", "line 3 again")


# every heatmap's legend: its texts' boxes as Chromium lays them out, and the picture's width
LEGEND_BOXES = """<script>for (const svg of document.querySelectorAll('svg.heatmap')) {
const b = [...svg.querySelectorAll('.legend text')].map(t => t.getBBox())
  .map(r => [r.x, r.y, r.x + r.width, r.y + r.height].map(v => v.toFixed(1)).join(' '));
svg.setAttribute('data-lb', svg.viewBox.baseVal.width + ';' + b.join(';')); }
</script>"""


@pytest.mark.skipif(not CHROMIUM, reason="chromium-headless-shell not installed")
def test_a_heatmap_s_legend_texts_do_not_overlap(tmp_path):
    """A busy recording (six-digit counts a cell) over columns of uneven intervals: the colour
    note ("colour: log of the count (per column of as many intervals); 4 rows per octave"),
    right-aligned on the legend's line, was drawn over the p50, p99 and max keys."""
    rec = small_rec(tmp_path / "r.ndjson", [([{}], {})] * 180, n=200000)
    html = tmp_path / "r.html"
    report(rec, "-o", html, check=True)
    measured = tmp_path / "m.html"
    measured.write_text(html.read_text().replace("</body>", LEGEND_BOXES + "</body>"))
    dom = subprocess.run([CHROMIUM, "--no-sandbox", "--dump-dom", measured.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    legends = re.findall(r'data-lb="([^"]*)"', dom)
    assert legends, dom[-500:]
    assert any("per column of as many intervals" in t for t in
               re.findall(r'<text[^>]*>([^<]*)</text>', html.read_text()))
    for lb in legends:
        width, *boxes = lb.split(";")
        boxes = [list(map(float, b.split())) for b in boxes]
        assert len(boxes) >= 5, lb
        for i, a in enumerate(boxes):
            assert 0 <= a[0] and a[2] <= float(width), (a, width)
            for b in boxes[i + 1:]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), \
                    (a, b, lb)


def test_time_no_recording_covers_is_not_drawn_as_no_io(tmp_path):
    """Two recordings a minute apart on one timeline: the minute between them was hatched like
    a time in which no I/O completed, though nothing was recorded then. Columns that no
    interval covers are marked "not recorded" (and said so on the page); a column of a
    recording never is, nor is one of a single recording."""
    ivs = [[uring_hist("total", 5, 10)]] * 5
    a = write_rec(tmp_path / "a.ndjson", ivs)
    b = write_rec(tmp_path / "b.ndjson", ivs, start=1_700_000_065 * 10**9)
    report(a, b, "-o", tmp_path / "ab.html", "--svg", tmp_path / "svg", check=True)
    html = (tmp_path / "ab.html").read_text()
    assert "not recorded" in html.split('id="heatmaps"', 1)[1].split("</p>", 1)[0]
    (svg,) = (tmp_path / "svg").glob("uring-total-*.svg")
    root = ET.parse(svg).getroot()
    plot = [e for e in root.iter(SVG_NS + "rect") if (e.get("fill") or "").startswith("url(")
            and float(e.get("width")) > 100][0]
    x0, x1 = float(plot.get("x")), float(plot.get("x")) + float(plot.get("width"))
    at = lambda t: x0 + t / 70 * (x1 - x0)  # noqa: E731   (s after a's start; b ends at 70)
    cells = [(float(e.get("x")), float(e.get("x")) + float(e.get("width")))
             for e in root.iter(SVG_NS + "rect") if e.get("data-n")]
    gaps = [(float(e.get("x")), float(e.get("x")) + float(e.get("width")))
            for e in root.iter(SVG_NS + "rect") if e.get("class") == "unrec"]
    assert cells and gaps, (cells, gaps)
    # every cell is of a recorded time, outside the gaps; the gaps lie between a's end (5 s)
    # and b's start (65 s), and cover all of it but a column's width at either side
    for c in cells:
        assert all(c[1] <= g[0] + 0.1 or g[1] <= c[0] + 0.1 for g in gaps), (c, gaps)
    col = cells[0][1] - cells[0][0]
    assert all(at(5) - 0.1 <= g[0] and g[1] <= at(65) + 0.1 for g in gaps), (gaps, at(5), at(65))
    assert sum(g[1] - g[0] for g in gaps) >= at(65) - at(5) - 2 * col - 0.1, (gaps, col)
    assert any("not recorded" in (t.text or "") for t in root.iter(SVG_NS + "title"))
    # one recording: no gaps marked
    report(a, "-o", tmp_path / "a.html", "--svg", tmp_path / "asvg", check=True)
    svgs = list((tmp_path / "asvg").glob("*.svg"))
    assert svgs
    for f in svgs:
        assert 'class="unrec"' not in f.read_text(), f


def test_a_recording_of_no_io_says_so(tmp_path):
    """A recording in which nothing was traced (iostrata record -l uring on a host with no
    io_uring I/O), or cut short before its first interval: the page had an empty Summary and
    an empty Heatmaps section, nothing saying why. Now it says no I/O was recorded, in how
    many intervals, and shows no empty section."""
    rec = write_rec(tmp_path / "none.ndjson", [[]] * 3)
    report(rec, "-o", tmp_path / "none.html", "--svg", tmp_path / "svg", check=True)
    html = (tmp_path / "none.html").read_text()
    summary = html.split('id="summary"', 1)[1].split("</section>", 1)[0]
    assert re.search(r"No I/O was recorded</strong>[^<]*3 intervals", summary), summary
    assert 'id="heatmaps"' not in html
    lines = rec.read_text().splitlines(True)
    cut = tmp_path / "cut.ndjson"
    cut.write_text(lines[0] + lines[1][:40])
    r = report(cut, "-o", tmp_path / "cut.html", check=True)
    assert "cut short" in r.stderr
    summary = (tmp_path / "cut.html").read_text().split('id="summary"', 1)[1]
    assert re.search(r"No I/O was recorded</strong>[^<]*no interval", summary), summary[:800]


def test_every_link_of_the_page_leads_somewhere(tmp_path):
    """The page's navigation linked "Waterfalls" and "Label sets" whatever the recording held:
    a block-only recording (no io_uring or aio, one label set) had both links going nowhere.
    Every in-page link now names an id on the page."""
    pages = [small_rec(tmp_path / "block.ndjson", [([{}], {})] * 3),
             write_rec(tmp_path / "none.ndjson", [[]] * 3),
             write_rec(tmp_path / "uring.ndjson", [[uring_hist("total", p, 5) for p in (1, 2)]])]
    synthesize(tmp_path / "all.ndjson", 5)
    pages.append(tmp_path / "all.ndjson")
    for rec in pages:
        out = rec.with_suffix(".html")
        report(rec, "-o", out, check=True)
        html = out.read_text()
        ids = set(re.findall(r' id="([^"]+)"', html))
        links = re.findall(r'href="#([^"]+)"', html)
        assert links and [a for a in links if a not in ids] == [], (rec.name, links, ids)
    nav = lambda f: re.search(r"<nav>(.*?)</nav>", f.read_text())[1]  # noqa: E731
    assert "Waterfalls" not in nav(tmp_path / "block.html")
    assert "Waterfalls" in nav(tmp_path / "all.html") and "Label sets" in nav(tmp_path / "all.html")


def test_a_panel_of_nothing_measured_says_so(tmp_path):
    """A stage whose every I/O was unmeasured (block wait of flushes, their queueing not
    seen): its panel was a hatched plot over a latency axis of 500ns to 2us that no value
    set, nothing saying why. It now says nothing was measured and how much was not, with no
    latency ticks."""
    h = {"layer": "block", "stage": "wait", "labels": {}, "count": 0, "sum_ns": 0,
         "min_ns": 0, "max_ns": 0, "unmeasured": 23, "buckets": []}
    d = {"layer": "block", "stage": "device", "labels": {}, "count": 5, "sum_ns": 5000,
         "min_ns": 1000, "max_ns": 1000, "unmeasured": 0, "buckets": [[992, 1024, 5]]}
    rec = write_rec(tmp_path / "r.ndjson", [[h, d]] * 3)
    report(rec, "-o", tmp_path / "r.html", "--svg", tmp_path / "svg", check=True)
    root = ET.parse(tmp_path / "svg" / "block-wait-all.svg").getroot()
    texts = [t.text or "" for t in root.iter(SVG_NS + "text")]
    assert any("nothing measured" in t and "69 unmeasured" in t for t in texts), texts
    assert not [t for t in root.iter(SVG_NS + "text") if t.get("data-ns")], texts
    # a panel with values keeps its ticks
    root = ET.parse(tmp_path / "svg" / "block-device-all.svg").getroot()
    assert [t for t in root.iter(SVG_NS + "text") if t.get("data-ns")]
    assert not any("nothing measured" in (t.text or "") for t in root.iter(SVG_NS + "text"))


def test_a_waterfall_without_its_whole_shows_no_share(tmp_path):
    """A waterfall of stages without the whole they are shares of (recorded with --stages
    uring.wait,uring.device: no submit_cqe, no total): every share was "0.0%", a figure the
    recording cannot give. It is "-" now; with the whole, shares are its parts."""
    rec = write_rec(tmp_path / "r.ndjson", [[uring_hist("wait", 4, 20, ns=1000),
                                             uring_hist("device", 4, 20, ns=3000)]])
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    (head,) = waterfall_heads(html)
    sec = html.split('id="waterfalls"', 1)[1]
    box = sec.split(f"<h3>{head}</h3>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr><td class="l">(?:<span[^>]*></span>)?(\w+)</td>((?:<td[^>]*>[^<]*</td>)+)'
                      r'</tr>', box)
    assert [r[0] for r in rows] == ["wait", "device"], rows
    for _, cells in rows:
        assert re.findall(r"<td[^>]*>([^<]*)</td>", cells)[4] == "-", cells
    rec = write_rec(tmp_path / "w.ndjson", [[uring_hist("wait", 4, 20, ns=1000),
                                             uring_hist("total", 4, 20, ns=4000)]])
    report(rec, "-o", tmp_path / "w.html", check=True)
    html = (tmp_path / "w.html").read_text()
    assert re.search(r">wait</td><td>20</td>(<td>[^<]*</td>){3}<td>25\.0%</td>", html), html


def wf_box(html, head):
    """One waterfall: its bar's segments [(stage, x, width)], its labels {stage: text under
    it}, its dashed line's x (None), its notes, and its table rows {stage: share}."""
    sec = html.split('id="waterfalls"', 1)[1].split("</section>", 1)[0]
    box = sec.split(f"<h3>{head}</h3>", 1)[1].split('<div class="wfbox">', 1)[0]
    svg = box.split("</svg>", 1)[0] if "<svg" in box else ""
    segs = [(m[2], float(m[0]), float(m[1])) for m in re.findall(
        r'<rect x="([\d.]+)" y="4" width="([\d.]+)"[^>]*><title>(\w+):', svg)]
    texts = re.findall(r'<text x="([\d.]+)" y="(\d+)">([^<]*)</text>', svg)
    labels = {}
    for (x, y, name), (x2, y2, value) in zip(texts[::2], texts[1::2]):
        assert (x, y, y2) == (x2, "48", "60"), texts
        labels[name] = value
    line = re.search(r'<line class="whole" x1="([\d.]+)"', svg)
    notes = re.findall(r'<p class="help">(.*?)</p>', box)
    rows = {m[0]: re.findall(r"<td[^>]*>([^<]*)</td>", m[1])[4] for m in re.findall(
        r'<tr(?: class="sep")?><td class="l"[^>]*>(?:<span[^>]*></span>)?(\w+)'
        r'(?: \(upper bound\))?</td>'
        r'((?:<td[^>]*>[^<]*</td>)+)</tr>', box)}
    return segs, labels, line and float(line[1]), notes, rows


def test_a_waterfall_s_rows_go_in_the_order_stages_end(tmp_path):
    """Rows not in the bar came by slot: complete_reap above submit_complete, a reap above the
    completion it follows (an aio POLL: nothing linked, both unmeasured). They go in the order
    their stages end, under a rule that sets them apart from the bar's rows."""
    def aio(stage, n, ns, unmeasured=0):
        h = uring_hist(stage, 5, n, ns=ns)
        h["layer"], h["labels"]["opcode"] = "aio", "poll"
        if unmeasured:
            h.update(count=0, sum_ns=0, min_ns=0, max_ns=0, buckets=[], unmeasured=unmeasured)
        return h
    ivs = [[aio("complete_reap", 0, 1000, 10), aio("submit_complete", 0, 1000, 10),
            aio("total", 10, 5000000),
            uring_hist("submit_cqe", 1, 20, ns=40000), uring_hist("cqe_reap", 1, 20, ns=4000),
            uring_hist("total", 1, 20, ns=44000)]] * 2
    rec = write_rec(tmp_path / "r.ndjson", ivs)
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    heads = waterfall_heads(html)
    poll = next(h for h in heads if h.startswith("aio"))
    assert list(wf_rows(html, poll)) == ["submit_complete", "complete_reap", "total"]
    read = next(h for h in heads if h.startswith("uring"))
    assert list(wf_rows(html, read)) == ["submit_cqe", "cqe_reap", "total"]
    sec = html.split('id="waterfalls"', 1)[1].split("</section>", 1)[0]
    box = sec.split(f"<h3>{read}</h3>", 1)[1].split('<div class="wfbox">', 1)[0]
    # the bar's two rows, then the rule over the first that is not in it
    assert re.findall(r'<tr( class="sep")?><td class="l"', box) == ["", "", ' class="sep"'], box


def test_a_bar_past_its_whole_blames_only_stages_it_holds(tmp_path):
    """A bar of submit_cqe and cqe_reap past its total (a request whose reap was not measured
    is in submit_cqe alone) was said to pass it for the bio stages' sake, none of them in it."""
    ivs = [[uring_hist("submit_cqe", 1, 20, ns=100000), uring_hist("cqe_reap", 1, 20, ns=50000),
            uring_hist("total", 1, 20, ns=120000)]] * 2
    rec = write_rec(tmp_path / "r.ndjson", ivs)
    report(rec, "-o", tmp_path / "r.html", check=True)
    html = (tmp_path / "r.html").read_text()
    segs, labels, line, notes, rows = wf_box(html, waterfall_heads(html)[0])
    assert [s for s, _, _ in segs] == ["submit_cqe", "cqe_reap"] and line is not None, segs
    over = [n for n in notes if "add up to" in n]
    assert len(over) == 1 and "reap was not measured" in over[0], notes
    assert "submit_bio" not in over[0], over


def test_a_waterfall_s_bar_and_table_give_one_share(tmp_path):
    """The bar's labels were shares of the sum of its segments' means, the table's of the
    mean whole (total): wait showed 25% on the bar and 12.5% in the table, and without a
    whole the bar still printed percentages of nothing recorded. The bar is now drawn to the
    whole's scale, every label the table's share of that stage; what the stages do not cover
    is a labelled "unattributed" end, stages that pass the whole are said to and a dashed line
    marks it, and without a whole the labels are the stages' means, no percentages."""
    def aio(stage, n, ns):
        h = uring_hist(stage, 5, n, ns=ns)
        h["layer"] = "aio"
        return h
    ivs = [[uring_hist("wait", 1, 20, ns=1000), uring_hist("device", 1, 20, ns=3000),
            uring_hist("total", 1, 20, ns=8000),     # the stages cover half the whole
            uring_hist("wait", 2, 19, ns=1000), uring_hist("device", 2, 19, ns=3000),
            uring_hist("total", 2, 19, ns=3000),     # they add up to 4/3 of it
            uring_hist("wait", 3, 18, ns=1000), uring_hist("device", 3, 18, ns=3000),
            uring_hist("submit_cqe", 4, 17, ns=40000), uring_hist("cqe_reap", 4, 17, ns=4000),
            uring_hist("total", 4, 17, ns=44000)] +   # the parts are the whole
           [aio(st, 10, ns) for st, ns in (("submit_bio", 2000), ("wait", 1000),
                                           ("device", 20000), ("complete_reap", 5000),
                                           ("total", 30000))]] * 3
    rec = write_rec(tmp_path / "r.ndjson", ivs)
    report(rec, "-o", tmp_path / "r.html", "--top", "8", check=True)
    html = (tmp_path / "r.html").read_text()
    boxes = {h.split("[")[1].split()[2]: wf_box(html, h) for h in waterfall_heads(html)}
    assert sorted(boxes) == ["1", "2", "3", "4", "5"], boxes.keys()
    for pid, (segs, labels, line, notes, rows) in boxes.items():
        assert segs and labels, pid
        for stage, text in labels.items():   # every label on the bar is the table's share
            assert text == rows[stage] or pid == "3", (pid, stage, text, rows)
        assert abs(segs[0][1] - 10) < 0.05 and all(   # one run of segments, 700 px long
            abs(a[1] + a[2] - b[1]) < 0.15 for a, b in zip(segs, segs[1:])), (pid, segs)
        assert abs(sum(w for _, _, w in segs) - 700) < 0.3, (pid, segs)
    # half the whole: the segments its shares of 700 px, the other half unattributed
    segs, labels, line, notes, rows = boxes["1"]
    assert [(s, round(w, 1)) for s, _, w in segs] == [("wait", 87.5), ("device", 262.5),
                                                      ("unattributed", 350.0)], segs
    assert rows == {"wait": "12.5%", "device": "37.5%", "unattributed": "50.0%",
                    "total": "100.0%"}, rows
    assert labels == {"wait": "12.5%", "device": "37.5%", "unattributed": "50.0%"}
    assert line is None and notes == []
    # past the whole: not rescaled to look whole; the whole marked, the excess said
    segs, labels, line, notes, rows = boxes["2"]
    assert [(s, round(w, 1)) for s, _, w in segs] == [("wait", 175.0), ("device", 525.0)], segs
    assert labels == {"wait": "33.3%", "device": "100.0%"}
    assert line is not None and abs(line - (10 + 525)) < 0.1, line
    assert len(notes) == 1 and "add up to 133.3% of the mean total" in notes[0], notes
    # no whole: no share anywhere, the bar's labels are the means
    segs, labels, line, notes, rows = boxes["3"]
    assert rows == {"wait": "-", "device": "-"}, rows
    assert labels == {"wait": "1.00us", "device": "3.00us"}, labels
    svg = html.split("<h3>uring [read pid 3 p3]</h3>", 1)[1].split("</svg>", 1)[0]
    assert "%" not in re.sub(r"<title>.*?</title>", "", svg), svg
    assert len(notes) == 1 and "No whole was recorded" in notes[0], notes
    # parts that are the whole: nothing unattributed, nothing marked
    segs, labels, line, notes, rows = boxes["4"]
    assert [s for s, _, _ in segs] == ["submit_cqe", "cqe_reap"] and line is None, segs
    assert labels == {"submit_cqe": "90.9%", "cqe_reap": "9.1%"}, labels
    assert boxes["5"][1]["device"] == "66.7%" and boxes["5"][4]["unattributed"] == "6.7%"


def heatmap_columns(svg):
    """A heatmap SVG's plot (x0, x1), its cells' columns [(x, width)] and its "not recorded"
    runs [(x, width)]."""
    root = ET.parse(svg).getroot()
    plot = [e for e in root.iter(SVG_NS + "rect") if (e.get("fill") or "").startswith("url(")
            and float(e.get("width")) > 100][0]
    x0 = float(plot.get("x"))
    cells = sorted({(float(e.get("x")), float(e.get("width")))
                    for e in root.iter(SVG_NS + "rect") if e.get("data-n")})
    gaps = [(float(e.get("x")), float(e.get("width")))
            for e in root.iter(SVG_NS + "rect") if e.get("class") == "unrec"]
    return (x0, x0 + float(plot.get("width"))), cells, gaps


def test_a_gap_between_recordings_keeps_a_column_per_interval(tmp_path):
    """Recordings given together: the columns were capped at the number of intervals, not at
    the intervals the timeline holds. Two recordings of 5 s a minute apart got 10 columns of
    7 s: each recording drawn in one column, a column of it marked as if it were the gap's.
    Two of the same 10 s (two hosts) got 20 columns of 0.5 s: every other one empty, hatched
    as a time of no I/O. A column is now an interval's length: 70 over the 70 s, the 60 of the
    gap "not recorded"; 10 over the same 10 s, each holding I/O."""
    ivs = [[uring_hist("total", 5, 10)]] * 5
    a = write_rec(tmp_path / "a.ndjson", ivs)
    b = write_rec(tmp_path / "b.ndjson", ivs, start=1_700_000_065 * 10**9)
    report(a, b, "-o", tmp_path / "ab.html", "--svg", tmp_path / "svg", check=True)
    (svg,) = (tmp_path / "svg").glob("uring-total-*.svg")
    (x0, x1), cells, gaps = heatmap_columns(svg)
    at = lambda t: x0 + t / 70 * (x1 - x0)  # noqa: E731   (s after a's start; b ends at 70)
    # one column a second, each second of a recording in its own, at its time
    assert [round(x, 1) for x, _ in cells] == [round(at(t), 1) for t in
                                              (0, 1, 2, 3, 4, 65, 66, 67, 68, 69)], cells
    assert all(abs(w - (at(1) - at(0))) < 0.1 for _, w in cells), cells
    # the gap is the minute between them, exactly
    assert len(gaps) == 1 and abs(gaps[0][0] - at(5)) < 0.1 and \
        abs(gaps[0][0] + gaps[0][1] - at(65)) < 0.1, (gaps, at(5), at(65))
    # the same ten seconds from two hosts: ten columns, none empty
    c = write_rec(tmp_path / "c.ndjson", [[uring_hist("total", 5, 10)]] * 10, host="alpha")
    d = write_rec(tmp_path / "d.ndjson", [[uring_hist("total", 5, 10)]] * 10, host="beta")
    report(c, d, "-o", tmp_path / "cd.html", "--svg", tmp_path / "cd", check=True)
    (svg,) = (tmp_path / "cd").glob("uring-total-*.svg")
    (x0, x1), cells, gaps = heatmap_columns(svg)
    assert len(cells) == 10 and not gaps, (cells, gaps)
    assert all(abs(w - (x1 - x0) / 10) < 0.1 for _, w in cells), cells
    # one recording: one column an interval, as before
    report(c, "-o", tmp_path / "c.html", "--svg", tmp_path / "c", check=True)
    (svg,) = (tmp_path / "c").glob("uring-total-*.svg")
    assert len(heatmap_columns(svg)[1]) == 10


def test_a_merged_panel_is_titled_by_what_it_merges(tmp_path):
    """A recording without -D (its block I/O one unlabelled label set) given with one of -D:
    the panel of every label set merged and the unlabelled set's own were both titled "block
    device [all]". The merged one now says what it merges ("[all disks]"), the unlabelled one
    is "[all]" as the text output calls it, each disk its name: no two panels one title."""
    def blk(n, **labels):
        return {"layer": "block", "stage": "device", "labels": labels, "count": n,
                "sum_ns": 1000 * n, "min_ns": 1000, "max_ns": 1000, "unmeasured": 0,
                "buckets": [[992, 1024, n]]}
    plain = write_rec(tmp_path / "plain.ndjson", [[blk(30)]] * 5)
    per_disk = write_rec(tmp_path / "d.ndjson", [[blk(20, disk="vda"), blk(10, disk="vdb")]] * 5,
                         start=1_700_000_005 * 10**9, argv=["record", "-D"])
    titles = lambda html: re.findall(  # noqa: E731
        r'<text x="[\d.]+" y="16" style="font-weight:bold">([^<]*)</text>', html.read_text())
    report(plain, per_disk, "-o", tmp_path / "both.html", "--svg", tmp_path / "svg", check=True)
    got = titles(tmp_path / "both.html")
    assert got == ["block device [all disks]", "block device [all]", "block device [vda]",
                   "block device [vdb]"], got
    attrs, _ = svg_cells(tmp_path / "svg" / "block-device-all.svg")   # the id stays "all"
    assert (attrs["data-labels"], attrs["data-count"]) == ("all disks", "300"), attrs
    # -D alone: the merged panel is of all disks; without -D the one set is "[all]"
    report(per_disk, "-o", tmp_path / "d.html", check=True)
    assert titles(tmp_path / "d.html")[0] == "block device [all disks]"
    report(plain, "-o", tmp_path / "plain.html", check=True)
    assert titles(tmp_path / "plain.html") == ["block device [all]"]
    # what differs between the label sets, each said once: disks, ops and flags
    rec = write_rec(tmp_path / "f.ndjson", [[blk(5, disk="vda", op="read"),
                                            blk(5, disk="vda", op="write", flags="sync"),
                                            blk(5, disk="vdb", op="read")]])
    report(rec, "-o", tmp_path / "f.html", check=True)
    assert titles(tmp_path / "f.html")[0] == "block device [all disks, ops and flags]"


def test_top_0_leaves_no_empty_section(tmp_path):
    """--top 0 (the merged heatmaps only) left a "Waterfalls" heading over nothing, linked
    from the navigation. No section is empty now, whatever --top: each has more than its
    heading and help, and every link leads to one."""
    rec = tmp_path / "r.ndjson"
    synthesize(rec, 10)
    for top in ("0", "1", "4"):
        out = tmp_path / f"top{top}.html"
        report(rec, "-o", out, "--top", top, check=True)
        html = out.read_text()
        sections = re.findall(r'<section id="([^"]+)">(.*?)</section>', html, re.S)
        assert sections, html[:500]
        for sid, body in sections:
            rest = re.sub(r'<h2>.*?</h2>|<p class="help">.*?</p>', "", body, flags=re.S)
            assert re.search(r"<(table|svg|dl|p)\b", rest), (top, sid, body[:300])
        ids = set(re.findall(r' id="([^"]+)"', html))
        links = re.findall(r'href="#([^"]+)"', html)
        assert [a for a in links if a not in ids] == [], (top, links)
        nav = re.search(r"<nav>(.*?)</nav>", html)[1]
        assert ("Waterfalls" in nav) == ('id="waterfalls"' in html) == (top != "0"), (top, nav)
        assert ("Label sets" in nav) == ('id="labelsets"' in html) == (top != "0"), (top, nav)
        # five processes per layer: what --top leaves out is said under the layer's last shown
        boxes = re.findall(r'class="wfbox"><h3>(uring|aio)|(\d+) more (io_uring|aio) '
                           r'waterfalls?, of fewer requests each, not shown \(--top (\d+)\)',
                           html)
        # and of the heatmaps: the label sets --top gives no panels, per layer
        k = int(top)
        notes = re.findall(r"<p class=\"help\">(\d+) (more )?label sets? of (\w+)(, of less I/O"
                           r"(?: each)?)?: in the merged panel only \(--top (\d+)\)", html)
        less = ", of less I/O" + (" each" if k < 4 else "") if k else ""
        assert notes == [(str(5 - k), "more " if k else "", layer, less, top)
                         for layer in ("block", "uring", "aio", "syscall")], \
            (top, notes)
        if top != "0":
            assert boxes == [("uring", "", "", "")] * k + [("", str(5 - k), "io_uring", top)] + \
                [("aio", "", "", "")] * k + [("", str(5 - k), "aio", top)], (top, boxes)
