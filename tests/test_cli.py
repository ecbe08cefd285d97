"""Bad input: one line on stderr naming the problem, a non-zero exit, nothing left attached."""
import json
import os
import select
import signal
import subprocess
from pathlib import Path

import pytest

import conftest
from conftest import (IOSTRATA, ROOT, SCHEMA, cgroup2_root, full_pipe, schema_check,
                      wait_no_bpf_programs)

SCHEMA_DOC = json.loads(SCHEMA.read_text())


def run(*args, user=None):
    cmd = [str(IOSTRATA), *args]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
               "--inh-caps=-all", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def assert_one_line_error(r, *needles):
    line = conftest.assert_one_line_error(r, *needles)
    if os.geteuid() == 0:
        assert wait_no_bpf_programs() == [], "a failed run left BPF programs loaded"
    return line


def exited_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("args,needles", [
    (["--bogus"], ["unknown option '--bogus'"]),
    (["-Z"], ["unknown option '-Z'"]),
    (["abc"], ["unknown command 'abc'", "record, report"]),
    (["--json=1"], ["option '--json' takes no value"]),
    (["record", "--force=1"], ["option '--force' takes no value"]),
    # record's --output was taken by the trace command and ignored: it traced to stdout
    (["--output=x", "--duration", "1"], ["unknown option '--output'", "record -o FILE"]),
    (["--out", "x", "--duration", "1"], ["unknown option '--output'", "record -o FILE"]),
    (["--force", "--duration", "1"], ["unknown option '--force'"]),
    (["--nosuch=1"], ["unknown option '--nosuch'"]),
    # an abbreviation of two options was called unknown; a unique one is taken (--dur, below)
    (["--d", "vda"], ["ambiguous option '--d': --disk, --duration"]),
    (["--st=device"], ["ambiguous option '--st': --stages, --stale-after"]),
    (["snoop", "--s", "5ms"], ["ambiguous option '--s'", "--slower"]),
    (["--dur", "soon"], ["bad duration 'soon'"]),
    # a list longer than the parser's buffer is refused, not cut (",bogus" was dropped once)
    (["-l", "block," * 21 + "bogus"], ["unknown layer 'bogus'"]),
    (["-l", "block," * 100 + "bogus"], ["bad -l", "characters"]),
    (["--stages", "device," * 150], ["bad --stages", "characters"]),
    (["0"], ["bad interval '0'"]),
    (["-5"], ["unknown option"]),
    (["1", "x"], ["bad count 'x'"]),
    (["1", "2", "3"], ["unexpected argument '3'"]),
    (["--duration", "soon"], ["bad duration 'soon'"]),
    (["--duration", "0x1"], ["bad duration '0x1'", "from 0.001"]),
    (["--duration", " 5"], ["bad duration ' 5'"]),
    (["--duration", "1e-300"], ["bad duration '1e-300'"]),
    (["--duration", "1e0"], ["bad duration '1e0'"]),      # as written: it ran for 1 s
    (["-l", "block", "2E-1", "1"], ["bad interval '2E-1'"]),
    (["--duration", "inf"], ["bad duration 'inf'"]),
    (["--stages", ""], ["bad --stages ''", "at least one stage"]),
    (["-d", "nosuchdisk0"], ["unknown disk 'nosuchdisk0'"]),
    (["-p", "notapid"], ["bad pid 'notapid'"]),
    (["--inflight", "3000"], ["power of two"]),
    (["-d"], ["needs an argument"]),
    (["features", "extra"], ["features takes no argument 'extra'"]),
    (["snoop", "--slower", "soon"], ["bad --slower 'soon'"]),
    (["snoop", "--slower", "-1ms"], ["bad --slower '-1ms'"]),
    (["snoop", "--slower", "1e-2"], ["bad --slower '1e-2'"]),     # no exponents: as written
    (["snoop", "--ringbuf", "5000"], ["bad --ringbuf '5000': expected a power of two"]),
    (["snoop", "--ringbuf", "1024"], ["bad --ringbuf '1024'"]),
    (["snoop", "-l", "disk"], ["unknown layer 'disk'"]),
    (["snoop", "5"], ["unexpected argument '5'"]),
    (["snoop", "-W"], ["unknown option '-W'"]),
    (["snoop", "-j", "--slower", "x"], ['"type":"error"', "bad --slower 'x'"]),
    # report and serve have no -j: their error about it is text (it was JSON, from a pre-scan)
    (["report", "-j"], ["iostrata: error: unknown option '-j'"]),
    (["serve", "-j"], ["iostrata: error: unknown option '-j'"]),
    # numbers as written: strtol and strtod would take leading blanks and a '+'; a time that
    # rounds to 0 ns is not 0 (every request)
    (["1", " 5"], ["bad count ' 5'"]),
    (["-p", " 1"], ["bad pid ' 1'"]),
    (["-p", "+1"], ["bad pid '+1'"]),
    (["--inflight", "+4096"], ["bad --inflight '+4096'"]),
    (["--hist-keys", "0"], ["bad --hist-keys '0'", "N or N,M"]),
    (["--hist-keys", "4,"], ["bad --hist-keys '4,'"]),
    (["--hist-keys", "4,0"], ["bad --hist-keys '4,0'"]),
    (["--hist-keys", "4,2,1"], ["bad --hist-keys '4,2,1'"]),
    (["--hist-keys", "+4"], ["bad --hist-keys '+4'"]),
    (["--hist-keys", "1048577"], ["bad --hist-keys '1048577'"]),
    (["--hist-keys", "99999999999999999999999"], ["bad --hist-keys '99999999999999999999999'"]),
    (["serve", "--listen", "127.0.0.1: 80"], ["bad --listen '127.0.0.1: 80'"]),
    (["serve", "--listen", "127.0.0.1:+80"], ["bad --listen '127.0.0.1:+80'"]),
    (["snoop", "--slower", "0.5ns"], ["bad --slower '0.5ns'"]),
    (["snoop", "--slower", " 5ms"], ["bad --slower ' 5ms'"]),
    (["snoop", "--slower", "+5ms"], ["bad --slower '+5ms'"]),
    # a filter or breakdown no layer that runs applies was silently ignored (fuzzing)
    (["-d", "vda", "-l", "uring"], ["-d vda", "leave out"]),
    (["-l", "block", "--comm", "foo"], ["--comm foo", "leave out"]),
    (["--stages", "device", "--comm", "foo"], ["--comm foo", "(-l, --stages) leave out"]),
    (["-d", "vda", "--comm", "foo"], ["--comm foo", "block layer alone"]),
    (["-l", "block", "-P"], ["-P", "no per-process"]),
    (["-d", "vda", "-P"], ["-P", "no per-process"]),
    (["-l", "block,syscall", "-O"], ["-O", "opcodes"]),
    # a second filter replaced the first: its I/O went untraced, silently
    (["-d", "vda", "-d", "vda2"], ["-d given twice ('vda', 'vda2')"]),
    (["-p", "1", "--pid=2", "--duration", "1"], ["-p given twice ('1', '2')"]),
    (["snoop", "-c", "/a", "-c", "/b"], ["-c given twice ('/a', '/b')"]),
    (["record", "-o", "/nonexistent/r", "--comm", "a", "--comm", "b"],
     ["--comm given twice ('a', 'b')"]),
    # a second output replaced the first: the file asked for first was never written
    (["record", "-o", "/nonexistent/a", "-o", "/nonexistent/b"],
     ["-o given twice ('/nonexistent/a', '/nonexistent/b')", "the last alone would be written"]),
    (["report", "x.ndjson", "-o", "/nonexistent/a", "--output=/nonexistent/b"],
     ["-o given twice ('/nonexistent/a', '/nonexistent/b')"]),
    (["report", "x.ndjson", "-o", "/nonexistent/a", "--svg", "/n/1", "--svg", "/n/2"],
     ["--svg given twice ('/n/1', '/n/2')"]),
    (["compare", "a", "b", "--html", "/n/1", "--html", "/n/2"], ["--html given twice ('/n/1', '/n/2')"]),
    (["sched-ab", "-d", "loop0", "-d", "loop1", "-o", "/n/d", "none", "kyber"],
     ["-d given twice ('loop0', 'loop1')", "the last alone would be tested"]),
    (["sched-ab", "-d", "loop0", "-o", "/n/1", "-o", "/n/2", "none", "kyber"],
     ["-o given twice ('/n/1', '/n/2')"]),
    (["serve", "--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2"],
     ["--listen given twice ('127.0.0.1:1', '127.0.0.1:2')"]),
    (["serve", "--user", "nobody", "--user", "root"], ["--user given twice ('nobody', 'root')"]),
    # an empty name names nothing: found out only after the work, as "cannot create :" (exit 1)
    (["record", "-o", "", "--duration", "1"], ["bad -o '': expected a path"]),
    (["report", "x", "-o", ""], ["bad -o ''"]),
    (["report", "x", "-o", "y", "--svg", ""], ["bad --svg ''"]),
    (["compare", "a", "b", "--html", ""], ["bad --html ''"]),
    (["sched-ab", "-d", "loop0", "-o", "", "none", "kyber"], ["bad -o ''"]),
    # a stage of a layer -l leaves out was dropped, silently (and kept in the meta record)
    (["-l", "block", "--stages", "block.device,uring.total"],
     ["--stages uring.total: a stage of uring, which -l leaves out"]),
    (["record", "-o", "/n/x", "-l", "uring", "--stages", "device,block.wait"],
     ["--stages block.wait: a stage of block"]),
])
def test_bad_input(args, needles):
    assert_one_line_error(run(*args), *needles)


def test_missing_pid():
    pid = exited_pid()
    assert_one_line_error(run("-p", str(pid)), f"no such process: {pid}")


@pytest.mark.root
def test_partition_is_refused(tmp_path):
    """-d names a whole disk (its stat is what iostrata's counts add up to); a partition is
    refused by name. One is made on a loop device with BLKPG (addpart): this kernel may have no
    partition table parser."""
    img = tmp_path / "parted.img"
    with open(img, "wb") as f:
        f.truncate(8 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", "-P", str(img)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        subprocess.run(["addpart", dev, "1", "2048", "8192"], check=True)
        part = Path(dev).name + "p1"
        assert os.path.exists(f"/sys/class/block/{part}/partition")
        assert_one_line_error(run("-d", part),
                              f"'{part}' is a partition: -d takes the whole disk it "
                              f"belongs to, {Path(dev).name}")
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def test_bio_based_disk_is_refused():
    """A bio-based disk (dm, md, zram) builds no requests: -d on it traced nothing and exited 0,
    an empty histogram set, while /sys/block/dm-0/stat counted 970 reads and 1,256 writes (the
    6.1 VM, dm-linear over a loop device, whose rows showed them). Refused, naming where its I/O
    shows (the disks below it: slaves/)."""
    bio_based = sorted(d for d in os.listdir("/sys/block")
                       if not os.path.exists(f"/sys/block/{d}/mq"))
    if not bio_based:
        pytest.skip("no bio-based disk (dm, md, zram) here")
    d = bio_based[0]
    slaves = " ".join(sorted(os.listdir(f"/sys/block/{d}/slaves")))
    for arg in (d, f"/dev/{d}"):
        r = run("-d", arg, "--duration", "1")
        assert r.returncode == 2, r
        assert_one_line_error(r, f"'{d}' is bio-based", "builds no block requests",
                              f"disks below it: {slaves}" if slaves else "no disk is below it")


def test_an_error_line_drives_no_terminal():
    """An error naming what it was given passes no control on: a C1 CSI (U+009B, as UTF-8)
    reached the terminal raw; ESC already did not."""
    r = run("-d", "x\u009b[31my\x1b[0mz")
    line = conftest.assert_one_line_error(r, "unknown disk 'x?[31my?[0mz'")
    assert "\u009b" not in r.stderr and "\x1b" not in r.stderr, line


def test_errors_are_json_under_json():
    r = run("-j", "--bogus")
    line = assert_one_line_error(r)
    rec = json.loads(line)
    schema_check(rec, SCHEMA_DOC)
    assert rec["type"] == "error" and "--bogus" in rec["message"]


@pytest.mark.root
def test_non_root_is_refused():
    line = assert_one_line_error(run("--duration", "1", user=65534), "must be run as root")
    assert "CAP_BPF" in line


@pytest.mark.root
def test_features_without_root_reports_from_btf():
    r = run("features", "-j", user=65534)
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["verified_by_attach"] is False
    assert {e["event"] for e in f["events"]} >= {"block_bio_queue", "block_rq_issue",
                                                 "block_rq_complete"}
    assert wait_no_bpf_programs() == []


@pytest.mark.root
def test_missing_required_tracepoint():
    line = assert_one_line_error(run("-l", "block", "--fail-probe", "block_rq_complete",
                                     "--duration", "1"), "block_rq_complete")
    assert "unavailable" in line


@pytest.mark.root
def test_missing_tracepoint_needed_by_a_filter():
    assert_one_line_error(run("-l", "block", "--fail-probe", "block_bio_queue", "-p",
                              str(os.getpid()), "--duration", "1"),
                          "-p needs tracepoint block:block_bio_queue")


def test_unknown_fail_probe_is_bad_input():
    """A misspelt --fail-probe would test nothing: refused, naming it, before anything loads."""
    r = run("-l", "block", "--fail-probe", "block_rq_compete", "--duration", "1")
    assert_one_line_error(r, "--fail-probe 'block_rq_compete'")
    assert r.returncode == 2, r


def cgroup2_file():
    """A file in the cgroup v2 hierarchy (its root's cgroup.procs), or None."""
    root = cgroup2_root()
    return str(root / "cgroup.procs") if root else None


@pytest.mark.root
def test_bad_cgroup():
    """Not a cgroup v2 directory is bad input (2), like a path that does not exist; a file in
    the hierarchy too (it passed as one, and the layers then failed to load: three lines)."""
    for path in ("/tmp", "/dev/null", "/nonexistent") + ((cgroup2_file(),) if cgroup2_file()
                                                          else ()):
        r = run("-c", path, "-l", "block", "--duration", "1")
        assert_one_line_error(r, f"-c {path}")
        assert r.returncode == 2, r


@pytest.mark.root
def test_missing_optional_tracepoint_still_traces(loopdev, no_bpf_leak):
    """Without block_rq_issue (as if the kernel lacked it) the block layer still runs: every
    read counted in total, timed; wait and device, which start or end at the issue, time
    nothing; and features says those two stages are unavailable, and why."""
    disk = os.path.basename(loopdev)
    tracer = conftest.Tracer(["-l", "block", "-d", disk, "-D", "-F", "-j",
                              "--fail-probe", "block_rq_issue"])
    p, _ = conftest.run_dio(loopdev, 50, 0)
    conftest.finish_dio(p)
    recs = conftest.records(tracer.stop())
    assert recs, "no interval printed"
    stages = {}
    for rec in recs:
        schema_check(rec, SCHEMA_DOC)
        for h in rec["hists"]:
            if h["labels"].get("disk") == disk and h["labels"].get("op") == "read":
                c = stages.setdefault(h["stage"], [0, 0])
                c[0] += h["count"]
                c[1] += h["unmeasured"]
    assert stages.get("total") == [50, 0], stages
    assert all(stages.get(s, [0, 0])[0] == 0 for s in ("wait", "device")), stages
    f = json.loads(run("features", "-j", "--fail-probe", "block_rq_issue").stdout)
    block = {s["stage"]: s for s in f["stages"] if s["layer"] == "block"}
    assert {k: v["available"] for k, v in block.items()} == \
        {"wait": False, "device": False, "total": True}, block
    assert "block_rq_issue" in block["device"]["how"], block


def test_help_synopsis_matches_man_page():
    r = run("--help")
    assert r.returncode == 0
    head = r.stdout.split("\n\n", 1)[0].splitlines()   # the synopsis: up to the first blank line
    usage = [l.replace("Usage:", "").strip() for l in head]
    man = (ROOT / "docs" / "iostrata.8").read_text()
    synopsis = man.split(".SH SYNOPSIS", 1)[1].split(".SH", 1)[0].replace("\\-", "-")
    lines = [l.strip() for l in synopsis.splitlines() if l.strip() and not l.startswith(".")]
    assert lines == usage, (lines, usage)


@pytest.mark.root
def test_closed_pipe_ends_cleanly():
    """`iostrata -j | head -1`: the reader closing the pipe ends the tracer, detached, exit 0."""
    p = subprocess.Popen([str(IOSTRATA), "-j", "0.1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stdout.readline()
    schema_check(json.loads(line), SCHEMA_DOC)
    p.stdout.close()
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert wait_no_bpf_programs() == []


def blocked_on_output(pid):
    """Waiting for room in its stdout: in write() (before stopout) or in stopout's poll() of
    two fds (stdout and its stop pipe; the interval's wait polls fewer: none, or the fd of a
    process it waits for). /proc/PID/syscall: the number, then the arguments (nfds second, in
    poll and ppoll alike)."""
    w = Path(f"/proc/{pid}/wchan").read_text()
    if "pipe_write" in w:
        return True
    sc = Path(f"/proc/{pid}/syscall").read_text().split()
    return "poll_schedule_timeout" in w and len(sc) > 2 and int(sc[2], 16) == 2


CUT = "stopped by SIGINT while stdout was full: the output is cut short"


@pytest.mark.root
def test_a_stop_cuts_a_record_written_to_a_reader_that_stopped_reading(tmp_path, no_bpf_leak):
    """stdout is a pipe nobody reads until the tracer blocks writing to it; then SIGINT. With
    SA_RESTART the write was restarted after the signal, for ever: only SIGKILL ended the
    tracer, its programs attached. Now the stop ends the write once stdout has taken nothing
    for a grace (stopout.h): the record it was writing is cut short (or not begun) and that is
    said, exit 1; every record before it arrived whole."""
    import time
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(os.urandom(1 << 16))
    p = subprocess.Popen([str(IOSTRATA), "-l", "syscall", "-P", "-j", "0.05"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        time.sleep(1)
        # new processes, new keys, big records: the 64 KiB pipe fills within seconds
        while not blocked_on_output(p.pid):
            assert time.monotonic() < deadline, "the tracer never blocked on its output"
            subprocess.run(["dd", f"if={src}", f"of={dst}", "bs=4k"], check=True,
                           stderr=subprocess.DEVNULL)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)     # nothing read until it has ended
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert (p.returncode, err.decode()) == (1, json.dumps({"type": "error", "message": CUT},
                                                         separators=(",", ":")) + "\n")
    lines = out.decode().split("\n")
    assert len(lines) > 1, "records arrived before the pipe filled"
    # stdout is written in PIPE_BUF pieces once poll() says there is room: the record it was
    # writing stops at a piece's end, which is its start when the pipe filled at a record's end
    # (then the last piece is empty). Either way no whole record follows the last newline.
    if lines[-1]:
        with pytest.raises(json.JSONDecodeError):
            json.loads(lines[-1])
    for line in lines[:-1]:
        assert json.loads(line)["type"], line[:200]


def start_on_full_pipe(args):
    """(process, read end): iostrata ARGS with stdout a pipe already full, once it has attached
    and is blocked writing to that pipe."""
    r, w = full_pipe()
    p = subprocess.Popen([str(IOSTRATA), *args], stdout=w, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    os.close(w)
    try:
        while not (conftest.our_bpf_programs() and blocked_on_output(p.pid)):
            assert p.poll() is None, p.communicate()
            select.select([], [], [], 0.05)
    except BaseException:
        p.kill()
        p.communicate()
        os.close(r)
        raise
    return p, r


@pytest.mark.root
@pytest.mark.parametrize("cmd", ["trace", "snoop", "record"])
def test_a_stop_ends_a_tracer_whose_stdout_nobody_reads(tmp_path, no_bpf_leak, cmd):
    """`iostrata ... | sleep 1000`: the tracer blocked writing to a full pipe could not be
    stopped but by SIGKILL (its programs left attached until then). SIGINT now ends it: every
    program detached, one line saying the output was cut short, exit 1. record's file is whole,
    its end record says why it stopped."""
    rec = tmp_path / "rec.ndjson"
    args = {"trace": ["-l", "block", "0.1"],
            "snoop": ["snoop", "-l", "block"],
            "record": ["record", "-o", str(rec), "-l", "block", "-j", "0.1"]}[cmd]
    p, r = start_on_full_pipe(args)
    try:
        try:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
    finally:
        os.close(r)
    if cmd == "record":     # -j: the error is JSON too
        want = json.dumps({"type": "error", "message": f"{CUT} (the recording {rec} is whole)"},
                          separators=(",", ":"))
    else:
        want = f"iostrata: error: {CUT}"
    assert (p.returncode, err) == (1, want + "\n")
    if cmd == "record":
        last = json.loads(rec.read_text().splitlines()[-1])
        assert (last["type"], last["reason"]) == ("end", "signal"), last


@pytest.mark.root
def test_a_reader_that_reads_only_after_the_stop_gets_every_record(no_bpf_leak):
    """A script's way: stdout read only once the tracer was told to stop (Popen, SIGINT,
    communicate). The tracer, blocked on the full pipe, waits for it after the stop (a grace
    that starts again whenever stdout takes something): every record whole, the final interval
    among them, exit 0."""
    p, r = start_on_full_pipe(["-l", "block", "-j", "0.1"])
    try:
        p.send_signal(signal.SIGINT)
        with os.fdopen(r, "rb") as f:
            out = f.read()
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert (p.returncode, err) == (0, "")
    assert out[:1 << 16] == b"x" * (1 << 16)
    recs = [json.loads(line) for line in out[1 << 16:].decode().splitlines()]
    assert recs and all(rec["type"] == "interval" for rec in recs)


def test_control_characters_in_a_name_keep_the_error_one_line():
    """A newline or an escape in an argument echoed into the error: two lines, and a terminal
    driven by whatever followed ESC (fuzzing found it). Each is shown as '?'; -j escapes."""
    r = run("-d", "foo\nbar\x1b[2J", "--duration", "1")
    line = assert_one_line_error(r, "unknown disk 'foo?bar?[2J'")
    assert "\x1b" not in line
    r = run("-d", "foo\nbar", "--duration", "1", "-j")
    assert json.loads(r.stderr)["message"].startswith("unknown disk 'foo\nbar'"), r.stderr


@pytest.mark.parametrize("tool,args", [
    ("iostrata", ["--help"]), ("iostrata", ["compare", "--help"]),
    ("iostrata-load", ["--help"]), ("iostrata-load", ["--version"])])
def test_help_that_cannot_be_written_is_an_error(tool, args):
    """--help or --version into a full disk or a closed stdout exited 0, printing nothing
    (fuzzing found it): one error line, exit 1. Into a pipe read in part, exit 0."""
    cmd = f"{ROOT / 'bin' / tool} {' '.join(args)}"
    for redirect in (">/dev/full", ">&-"):
        r = subprocess.run(["bash", "-c", f"{cmd} {redirect}"], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, (redirect, r)
        assert "writing the output" in r.stderr, r.stderr
    r = subprocess.run(["bash", "-c", f"{cmd} | head -c1 >/dev/null; exit ${{PIPESTATUS[0]}}"],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (0, ""), r
