"""Docs that cannot drift: the man pages, README and --help are checked against each other and
against the binaries.

- every option a --help lists is documented in the binary's man page, and every option the man
  page names exists in a --help of that binary (subcommands found from the Usage: lines);
- every example command line of README.md and of the man pages' EXAMPLES runs and exits 0;
- the man page's layer table is what `iostrata features -j` reports.
"""
import json
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import IOSTRATA, ROOT, our_bpf_programs, wait_no_bpf_programs

LOAD = ROOT / "bin" / "iostrata-load"
README = ROOT / "README.md"
MAN = {"iostrata": ROOT / "docs" / "iostrata.8", "iostrata-load": ROOT / "docs" / "iostrata-load.1"}
BINARIES = {"iostrata": IOSTRATA, "iostrata-load": LOAD}

# An option token: --long-name or -x, not part of a word ("5-second", "-vv", "-5..0", "rw:50").
OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*|-[A-Za-z])(?![\w])")
# A short option and its long twin: "-d, --disk=DISK", "-d DISK, --disk=DISK", "-h, --help".
PAIR = re.compile(r"(?<![\w-])(-[A-Za-z])(?:[ =][A-Z][\w]*)?,\s+(--[A-Za-z0-9][\w-]*)")


def rel(p):
    return os.path.relpath(p, ROOT)


# ---------------------------------------------------------------------------------------------
# --help

def run_help(binary, *args):
    r = subprocess.run([str(binary), *args, "--help"], capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    cmd = " ".join([rel(binary), *args, "--help"])
    assert r.returncode == 0, f"`{cmd}` exited {r.returncode}: {r.stderr}"
    assert r.stdout.strip(), f"`{cmd}` printed nothing"
    return r.stdout


def usage_block(text):
    """The Usage: lines at the top of a --help: up to the first blank line."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("Usage:")), None)
    if start is None:
        return []
    out = []
    for l in lines[start:]:
        if not l.strip():
            break
        out.append(l.replace("Usage:", "", 1).strip())
    return out


def subcommands(help_text, prog):
    """`prog NAME [...]` lines of the usage: NAME is a subcommand (features, calibrate, ...)."""
    names = []
    for line in usage_block(help_text):
        words = line.split()
        if len(words) > 1 and words[0] == prog and re.fullmatch(r"[a-z][a-z0-9-]*", words[1]):
            names.append(words[1])
    return names


def option_column(line):
    """The options of one option line of a --help, without its description: the text up to the
    first run of two or more spaces that is followed by a description (not by '-' or '[')."""
    s = line.strip()
    m = re.search(r"\s{2,}(?=[^\s\-\[])", s)
    return s[:m.start()] if m else s


def help_options(text):
    """Options one --help lists, each with the line listing it: the Usage: lines and every line
    of the option table (a line whose text starts with '-'). Descriptions are not read."""
    found = {}
    usage = usage_block(text)
    for line in usage:
        for o in OPTION.findall(line):
            found.setdefault(o, line)
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("-"):
            for o in OPTION.findall(option_column(s)):
                found.setdefault(o, s)
    return found


def help_pairs(text):
    pairs = {}
    for line in text.splitlines():
        if line.strip().startswith("-"):
            for short, long in PAIR.findall(option_column(line)):
                pairs[short] = long
    return pairs


def help_takes_argument(text):
    """Options that take a value: `--disk=DISK`, and the short twin of such a long option."""
    takes = set()
    for line in text.splitlines():
        if not line.strip().startswith("-"):
            continue
        col = option_column(line)
        takes.update(re.findall(r"(--[A-Za-z0-9][\w-]*)=", col))
        for short, long in PAIR.findall(col):
            if long + "=" in col or re.search(re.escape(short) + r"[ =][A-Z]", col):
                takes.update((short, long))
    return takes


class Helps(list):
    """[(where, text)], shown in a failure by where only."""

    def __repr__(self):
        return "Helps(" + ", ".join(w for w, _ in self) + ")"


def helps(name):
    """[(where, text)]: the binary's --help and the --help of each subcommand its usage names
    (a subcommand whose --help is the main one has no help of its own: its Usage: line in the
    main help is what lists its options)."""
    binary = BINARIES[name]
    main = run_help(binary)
    out = Helps([(f"{rel(binary)} --help", main)])
    for sub in subcommands(main, name):
        text = run_help(binary, sub)
        if text != main:
            out.append((f"{rel(binary)} {sub} --help", text))
    return out


# ---------------------------------------------------------------------------------------------
# roff

ROFF_CHARS = {"mu": "x", "->": "->", "<-": "<-", "em": "--", "en": "-", "aq": "'", "dq": '"',
              "lq": '"', "rq": '"', "bu": "*", "co": "(c)", "ti": "~", "ha": "^", "ga": "`",
              "rs": "\\", "at": "@", "sh": "#", "Do": "$", "pl": "+", "eq": "=", "<=": "<=",
              ">=": ">=", "+-": "+-", "de": "deg"}


def roff_text(s):
    """Roff escapes to plain text: \\- to -, fonts dropped, \\(xx to their characters."""
    s = re.sub(r'\\".*$', "", s)                       # comment
    s = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", s)       # font changes
    s = re.sub(r"\\s[+-]?\d", "", s)                   # size changes
    s = re.sub(r"\\\((..)", lambda m: ROFF_CHARS.get(m.group(1), ""), s)
    s = re.sub(r"\\\[([^\]]*)\]", lambda m: ROFF_CHARS.get(m.group(1), ""), s)
    s = s.replace("\\-", "-").replace("\\ ", " ").replace("\\~", " ").replace("\\e", "\\")
    s = re.sub(r"\\[&%|^,/:)]", "", s)
    return s


def roff_args(rest):
    """A macro's arguments: space-separated, double-quoted ones may hold spaces ("" is a ")."""
    args, i, n = [], 0, len(rest)
    while i < n:
        while i < n and rest[i] in " \t":
            i += 1
        if i >= n:
            break
        if rest[i] == '"':
            i += 1
            buf = []
            while i < n:
                if rest[i] == '"':
                    if i + 1 < n and rest[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(rest[i])
                i += 1
            args.append("".join(buf))
        else:
            j = i
            while j < n and rest[j] not in " \t":
                j += 1
            args.append(rest[i:j])
            i = j
    return args


FONT_MACROS = {"B", "I", "SM", "SB"}                       # arguments joined with spaces
ALT_MACROS = {"BR", "RB", "BI", "IB", "IR", "RI"}          # alternating fonts: no spaces


class ManLine:
    def __init__(self, lineno, section, kind, text, raw):
        self.lineno, self.section, self.kind, self.text, self.raw = lineno, section, kind, text, raw

    def __repr__(self):
        return f"{self.lineno}:{self.section}:{self.kind}:{self.text!r}"


def parse_man(src):
    """Every line of a man page that carries text, as plain text, with its section and kind:
    'tag' (the tag of a .TP or .IP: what a list item defines), 'macro' (a font macro line such
    as .B or .BR), 'nf' (a line of a .nf block) or 'text'."""
    out = []
    section, nofill, want_tag = "", False, False
    for lineno, raw in enumerate(src.splitlines(), 1):
        if raw.startswith((".", "'")):
            m = re.match(r"[.'][ \t]*(\S*)[ \t]*(.*)$", raw)
            name, rest = m.group(1), m.group(2)
            if name in ('\\"', "") or name.startswith('\\"'):
                continue
            if name in ("SH", "SS"):
                if name == "SH":
                    section = roff_text(" ".join(roff_args(rest))).strip().upper()
                want_tag = False
                continue
            if name == "nf":
                nofill = True
                continue
            if name == "fi":
                nofill = False
                continue
            if name == "TP":
                want_tag = True
                continue
            if name == "IP":
                args = roff_args(rest)
                if args and args[0].strip():
                    out.append(ManLine(lineno, section, "tag", roff_text(args[0]), raw))
                continue
            if name in FONT_MACROS or name in ALT_MACROS:
                args = [roff_text(a) for a in roff_args(rest)]
                text = (" " if name in FONT_MACROS else "").join(args)
                out.append(ManLine(lineno, section, "tag" if want_tag else "macro", text, raw))
                want_tag = False
                continue
            continue            # .PP, .TH, .RS, .RE, .br, .sp, ...: no text of ours
        kind = "tag" if want_tag else ("nf" if nofill else "text")
        want_tag = False
        out.append(ManLine(lineno, section, kind, roff_text(raw), raw))
    return out


def man_sections(lines):
    return {l.section for l in lines}


def man_documented(lines):
    """Options the man page documents: .TP/.IP tags and the SYNOPSIS. {option: [ManLine]}"""
    found = {}
    for l in lines:
        if l.kind == "tag" or l.section == "SYNOPSIS":
            for o in OPTION.findall(l.text):
                found.setdefault(o, []).append(l)
    return found


def man_named(lines):
    """Options the man page names anywhere it sets an option in type: tags, font macros
    (.B \\-\\-duration, .BR \\-D ...) and the SYNOPSIS. Prose and examples are left out (examples
    are run by test_example_runs)."""
    found = {}
    for l in lines:
        if l.kind in ("tag", "macro") or l.section == "SYNOPSIS":
            for o in OPTION.findall(l.text):
                found.setdefault(o, []).append(l)
    return found


def man_pairs(lines):
    """[(short, long, ManLine)]: each "-x, --long" of a .TP/.IP tag."""
    return [(short, long, l) for l in lines if l.kind == "tag"
            for short, long in PAIR.findall(l.text)]


def read_man(name):
    return parse_man(MAN[name].read_text())


# ---------------------------------------------------------------------------------------------
# the checks, as functions returning problems, so that test_checks_catch_drift can try them

def undocumented(help_list, man_lines, man_path):
    """Options a --help lists that the man page does not document."""
    documented = man_documented(man_lines)
    problems = []
    for where, text in help_list:
        for opt, line in help_options(text).items():
            if opt not in documented:
                problems.append(f"{opt}: listed by `{where}` ({line.strip()!r}) but not documented "
                                f"in {man_path} (no .TP/.IP tag or SYNOPSIS line names it)")
    return problems


def nonexistent(help_list, man_lines, man_path):
    """Options the man page names that no --help of the binary lists."""
    listed = set()
    for _, text in help_list:
        listed.update(help_options(text))
    wheres = ", ".join(f"`{w}`" for w, _ in help_list)
    problems = []
    for opt, where in sorted(man_named(man_lines).items()):
        if opt not in listed:
            at = "; ".join(f"{man_path}:{l.lineno} ({l.section}): {l.raw.strip()!r}"
                           for l in where)
            problems.append(f"{opt}: named in {at}, but not listed by {wheres}")
    return problems


def mispaired(help_list, man_lines, man_path):
    """Short options paired with another long option in the man page than in --help."""
    pairs = {}
    for where, text in help_list:
        for short, long in help_pairs(text).items():
            pairs.setdefault(short, (long, where))
    problems = []
    for short, long, l in man_pairs(man_lines):
        if short in pairs and pairs[short][0] != long:
            problems.append(f"{short}: {man_path}:{l.lineno} pairs it with {long}, "
                            f"`{pairs[short][1]}` with {pairs[short][0]}")
    return problems


@pytest.fixture(scope="module")
def help_texts():
    return {name: helps(name) for name in BINARIES}


@pytest.mark.parametrize("name", sorted(BINARIES))
def test_help_options_are_in_man_page(name, help_texts):
    problems = undocumented(help_texts[name], read_man(name), rel(MAN[name]))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(BINARIES))
def test_man_page_options_exist(name, help_texts):
    problems = nonexistent(help_texts[name], read_man(name), rel(MAN[name]))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(BINARIES))
def test_short_and_long_options_pair_alike(name, help_texts):
    problems = mispaired(help_texts[name], read_man(name), rel(MAN[name]))
    assert not problems, "\n".join(problems)


def test_every_subcommand_is_in_man_page(help_texts):
    """A subcommand the usage names has its SYNOPSIS line and its own section (FEATURES, ...)."""
    lines = read_man("iostrata")
    synopsis = [l.text.split() for l in lines if l.section == "SYNOPSIS" and l.text.strip()]
    missing = []
    for sub in subcommands(help_texts["iostrata"][0][1], "iostrata"):
        if not any(w[:2] == ["iostrata", sub] for w in synopsis):
            missing.append(f"{sub}: no `iostrata {sub} ...` line in the SYNOPSIS")
        if sub.upper() not in man_sections(lines):
            missing.append(f"{sub}: no .SH {sub.upper()} section")
    assert not missing, f"{rel(MAN['iostrata'])}: " + "; ".join(missing)


def test_checks_catch_drift(help_texts):
    """The checks above fail for real drift: a made-up option in a copy of the man page, an
    option's entry taken out of it, a short option paired with the wrong long one, and an
    option added to --help only."""
    src = MAN["iostrata"].read_text()
    h = help_texts["iostrata"]
    fake = src + (".SH MORE OPTIONS\n.TP\n.BR \\-\\-made\\-up\nNo such option.\n"
                  ".TP\n.BR \\-W \", \" \\-\\-per\\-disk\nWrong pair.\n")
    lines = parse_man(fake)
    assert any(p.startswith("--made-up:") for p in nonexistent(h, lines, "copy")), \
        "a made-up option in the man page was not caught"
    assert any(p.startswith("-W:") for p in mispaired(h, lines, "copy")), \
        "a short option paired with the wrong long option was not caught"
    # take out the tag of one long option documented once (the first such), keeping its text
    documented = man_documented(parse_man(src))
    victim, where = next((o, ls[0]) for o, ls in documented.items()
                         if o.startswith("--") and len(ls) == 1 and ls[0].kind == "tag")
    lines = src.splitlines()
    lines[where.lineno - 1] = "Untagged."
    missing = undocumented(h, parse_man("\n".join(lines)), "copy")
    assert any(p.startswith(victim + ":") for p in missing), \
        f"{victim} taken out of the man page was not caught"
    # and an option only --help lists
    extra = [(w, t + "\n  -Q, --quux            made up\n") for w, t in h]
    found = undocumented(extra, parse_man(src), "copy")
    assert any(p.startswith("-Q:") for p in found) and any(p.startswith("--quux:") for p in found)


def test_roff_parsing():
    lines = parse_man('.SH OPTIONS\n.TP\n.BI \\-d " DISK" "\\fR, \\fP\\-\\-disk=" DISK\n'
                      'Text \\-x in prose.\n.TP\n\\-\\-plain\\-tag\n.IP "\\-y" 4\n'
                      '.BR \\-\\-named ;\n.SH EXAMPLES\n.nf\n# iostrata \\-D 5 3\n.fi\n')
    assert man_documented(lines).keys() == {"-d", "--disk", "--plain-tag", "-y"}
    assert man_named(lines).keys() == {"-d", "--disk", "--plain-tag", "-y", "--named"}
    assert [(s, l) for s, l, _ in man_pairs(lines)] == [("-d", "--disk")]
    assert [l.text for l in lines if l.kind == "nf"] == ["# iostrata -D 5 3"]
    text = ("Usage: prog [OPTIONS]\n       prog sub [-j] [--dir DIR]\n\nSome -vv prose.\n"
            "  -a, --alpha=N   does -x things (-vv)\n  --beta, --gamma O_DIRECT\n"
            "  -h, --help   -V, --version\n")
    assert set(help_options(text)) == {"-j", "--dir", "-a", "--alpha", "--beta", "--gamma",
                                       "-h", "--help", "-V", "--version"}
    assert help_pairs(text) == {"-a": "--alpha", "-h": "--help", "-V": "--version"}
    assert help_takes_argument(text) == {"-a", "--alpha"}
    assert subcommands(text, "prog") == ["sub"]


# ---------------------------------------------------------------------------------------------
# examples

SAMPLE = ROOT / "docs" / "sample" / "recording.ndjson.gz"
PROGRAMS = {"iostrata": IOSTRATA, "bin/iostrata": IOSTRATA, "iostrata-load": LOAD,
            "bin/iostrata-load": LOAD}


def readme_examples():
    """Command lines of README.md's code (indented or fenced) that start with bin/."""
    out, fenced = [], False
    for lineno, line in enumerate(README.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not (fenced or line.startswith(("    ", "\t"))):
            continue
        cmd = re.sub(r"^[$#]\s+", "", line.strip())
        if cmd.startswith("bin/"):
            out.append((rel(README), lineno, cmd))
    return out


def man_examples(name):
    """Command lines in the .nf blocks of a man page's EXAMPLES, with or without a prompt."""
    out = []
    for l in read_man(name):
        if l.section != "EXAMPLES" or l.kind != "nf":
            continue
        cmd = re.sub(r"^[$#]\s+", "", l.text.strip())
        if cmd.split(" ", 1)[0] in PROGRAMS:
            out.append((rel(MAN[name]), l.lineno, cmd))
    return out


EXAMPLES = readme_examples() + man_examples("iostrata") + man_examples("iostrata-load")


def example_key(cmd):
    """What an example runs: without its comment, its spacing and the README's bin/."""
    return re.sub(r"^bin/", "", " ".join(re.sub(r"\s+#.*$", "", cmd).split()))


def distinct_examples(examples):
    """[(places, cmd)]: an example that README.md and a man page both give is run once, and a
    failure names every place it is in."""
    runs = {}
    for source, lineno, cmd in examples:
        places, _ = runs.setdefault(example_key(cmd), ([], cmd))
        places.append(f"{source}:{lineno}")
    return [(", ".join(places), cmd) for places, cmd in runs.values()]


DISTINCT = distinct_examples(EXAMPLES)


def first_disk():
    """The first whole disk of this machine that is not a loop, ram or zram device."""
    for d in sorted(os.listdir("/sys/block")):
        if not re.match(r"(loop|ram|zram|nbd|dm-|md)", d):
            return d
    pytest.skip("this machine has no disk other than loop/ram devices")


def seconds(t):
    """iostrata-load TIME (10s, 500ms, 250us, 1000ns; a bare number is seconds)."""
    m = re.fullmatch(r"([\d.]+)(ns|us|ms|s|m|h)?", t)
    assert m, f"cannot read the time {t!r}"
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600,
                                None: 1}[m.group(2)]


def num(x):
    return f"{x:g}"


def split_options(argv, takes):
    """[(option, value or None, is_positional)] for getopt-style argv (clusters, --a=b, --a b)."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += [(x, None, True) for x in argv[i + 1:]]
            break
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if not eq and name in takes and i + 1 < len(argv):
                i += 1
                val, eq = argv[i], "="
            out.append((name, val if eq else None, False))
        elif a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                opt = "-" + a[j]
                if opt in takes:
                    val = a[j + 1:]
                    if not val and i + 1 < len(argv):
                        i += 1
                        val = argv[i]
                    out.append((opt, val, False))
                    break
                out.append((opt, None, False))
                j += 1
        else:
            out.append((a, None, True))
        i += 1
    return out


def join_options(parts):
    argv = []
    for opt, val, positional in parts:
        if positional:
            argv.append(opt)
        elif val is None:
            argv.append(opt)
        else:
            argv += [opt, val]
    return argv


# subcommands that run until a signal, like trace mode: they get --duration 1 too
UNTIL_STOPPED = {"serve", "snoop"}


def rewrite_iostrata(args, takes, subs, pid, disk, tmpdir="/scratch"):
    """Examples made short and runnable here, every option kept: placeholder pids, disks and
    cgroups replaced, --duration capped at 1 s; in trace mode (and record) INTERVAL COUNT
    shortened, and --duration 1 added where the example would run until Ctrl-C. Files record,
    report and compare write (-o, --svg, --html) go to a scratch directory, recordings that
    report and compare read but nobody made are the sample's; serve, which runs until SIGTERM, gets
    --duration 1 too. Other subcommands (features, calibrate, ...) end by themselves: only their
    options are rewritten."""
    sub = args[:1] if args and args[0] in subs else []
    traces = not sub or sub == ["record"]
    writes = sub in (["record"], ["report"], ["compare"])
    parts, positional, duration = [], [], False
    for opt, val, pos in split_options(args[len(sub):], takes):
        if pos:
            positional.append(opt)
            continue
        if opt in ("-p", "--pid"):
            val = str(pid)
        elif opt in ("-d", "--disk") and not os.path.exists(
                f"/sys/block/{os.path.basename(val)}"):
            val = disk
        elif opt in ("-c", "--cgroup") and not os.path.isdir(val):
            val = "/sys/fs/cgroup"
        elif opt == "--duration":
            duration = True
            val = num(min(float(val), 1.0))
        elif writes and opt in ("-o", "--output", "--svg", "--html"):
            val = str(Path(tmpdir) / os.path.basename(val))
        parts.append((opt, val, False))
    if sub in (["report"], ["compare"]):   # recordings the example names but nobody made:
        positional = [p if (ROOT / p).exists() else str(SAMPLE) for p in positional]
    if traces:
        if len(positional) >= 2:            # INTERVAL COUNT: a few short intervals
            positional[0] = num(min(float(positional[0]), 0.5))
            positional[1] = str(min(int(positional[1]), 2))
        elif not duration:
            parts.append(("--duration", "1", False))
    elif sub[0] in UNTIL_STOPPED and not duration:
        parts.append(("--duration", "1", False))
    return sub + join_options(parts) + positional


def rewrite_sched_ab(args, takes, tmpdir, device):
    """sched-ab examples: on a loop device (-d and the load's --device), 2 rounds of 1 s each,
    the rounds recorded in the scratch directory, never in the working tree."""
    cut = args.index("--") if "--" in args else len(args)
    parts, have = [], set()
    for opt, val, pos in split_options(args[:cut], takes):
        if opt in ("-d", "--disk"):
            val = os.path.basename(device())
        elif opt == "--rounds":
            val = str(min(int(val), 2))
        elif opt == "--round-secs":
            val = num(min(float(val), 1.0))
        elif opt in ("-o", "--output"):
            val = str(Path(tmpdir) / os.path.basename(val.rstrip("/")))
        have.add(opt)
        parts.append((opt, val, pos))
    for opt, val in (("--rounds", "2"), ("--round-secs", "1")):
        if opt not in have:
            parts.append((opt, val, False))
    if not have & {"-o", "--output"}:
        parts.append(("-o", str(Path(tmpdir) / "sched-ab"), False))
    load = args[cut + 1:]
    load = [device() if i and load[i - 1] == "--device" else a for i, a in enumerate(load)]
    return ["sched-ab"] + join_options(parts) + ["--"] + load


def rewrite_load(args, takes, tmpdir, device):
    """iostrata-load examples: at most 1 s (--runtime 1s unless --ios), files in a scratch
    directory, a loop device in place of a real one."""
    parts, timed = [], False
    for opt, val, pos in split_options(args, takes):
        if opt == "--runtime":
            timed = True
            val = "1s" if seconds(val) > 1 else val
        elif opt == "--ios":
            timed = True
            val = str(min(int(val), 2000))
        elif opt == "--file":
            val = str(Path(tmpdir) / os.path.basename(val))
        elif opt == "--device":
            val = device()
        parts.append((opt, val, pos))
    if not timed:
        parts.append(("--runtime", "1s", False))
    return join_options(parts)


def command_line(cmd, pid):
    """The example as argv: $(pidof ...) becomes a live pid; anything else a shell would have
    to run is refused, so that an example the test cannot run says so."""
    cmd = re.sub(r"\$\((?:[^()]|\([^()]*\))*\bpid(?:of)?\b(?:[^()]|\([^()]*\))*\)", str(pid), cmd)
    cmd = re.sub(r"\$\(\s*pgrep\b[^)]*\)", str(pid), cmd)
    argv = shlex.split(cmd, comments=True)
    bad = [a for a in argv if re.search(r"^[|;&<>]|\$\(|`", a)]
    assert not bad, f"cannot run {cmd!r} without a shell ({bad}): teach tests/test_docs.py how"
    return argv


@pytest.fixture(scope="module")
def takes_argument():
    return {name: set().union(*(help_takes_argument(t) for _, t in helps(name)))
            for name in BINARIES}


@pytest.mark.root
@pytest.mark.parametrize("where,cmd", DISTINCT,
                         ids=[f"{w}: {example_key(c)}" for w, c in DISTINCT])
def test_example_runs(where, cmd, takes_argument, request):
    assert our_bpf_programs() == [], "iostrata programs loaded before the test started"
    pid = os.getpid()
    argv = command_line(cmd, pid)
    prog = PROGRAMS.get(argv[0])
    assert prog, f"{where}: {cmd!r}: unknown program {argv[0]!r}"
    with tempfile.TemporaryDirectory(prefix="iostrata-docs.", dir="/var/tmp") as tmp:
        if prog == IOSTRATA and argv[1:2] == ["sched-ab"]:
            args = rewrite_sched_ab(argv[2:], takes_argument["iostrata"], tmp,
                                    lambda: request.getfixturevalue("loopdev"))
        elif prog == IOSTRATA:
            subs = subcommands(run_help(IOSTRATA), "iostrata")
            args = rewrite_iostrata(argv[1:], takes_argument["iostrata"], subs, pid,
                                    first_disk(), tmp)
        else:
            args = rewrite_load(argv[1:], takes_argument["iostrata-load"], tmp,
                                lambda: request.getfixturevalue("loopdev"))
        run = [str(prog), *args]
        shown = " ".join(shlex.quote(a) for a in [rel(prog), *args])
        try:
            r = subprocess.run(run, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL, cwd=ROOT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: {cmd!r}, run as `{shown}`, did not end within "
                        f"120 s: teach tests/test_docs.py how to shorten it")
        # compare runs on the sample recording, against itself: too few intervals to judge any
        # quantile, so a gate on it is not decided (exit 4), and says why; so is the A/A rate
        undecided = (argv[1:2] == ["compare"] and r.returncode == 4
                     and ("not decided (not enough data)" in r.stdout
                          or "false-positive rate: undetermined" in r.stdout))
        assert r.returncode == 0 or undecided, (f"{where}: {cmd!r}, run as `{shown}`, "
                                                f"exited {r.returncode}:\n{r.stderr[-2000:]}")
        assert r.stdout.strip(), f"{where}: `{shown}` printed nothing"
    left = wait_no_bpf_programs()
    assert left == [], f"{where}: `{shown}` left BPF programs loaded: {left}"


def test_examples_found():
    """The example collector still finds what the docs hold (guards against a format change
    silently leaving nothing to run)."""
    sources = {s for s, _, _ in EXAMPLES}
    assert sources == {"README.md", "docs/iostrata.8", "docs/iostrata-load.1"}, sources
    assert len(EXAMPLES) >= 10, EXAMPLES
    assert distinct_examples([("a", 1, "bin/iostrata -D  5 # per disk"), ("b", 7, "iostrata -D 5"),
                              ("b", 9, "iostrata -F")]) == \
        [("a:1, b:7", "bin/iostrata -D  5 # per disk"), ("b:9", "iostrata -F")]


def test_example_rewriting():
    takes = {"-d", "--disk", "-p", "--pid", "-c", "--cgroup", "-l", "--layers", "--duration",
             "--comm", "--inflight"}
    subs = ["features", "calibrate", "serve", "record", "report", "compare"]
    takes |= {"-o", "--output", "--svg", "--top", "--gate", "--html", "--aa"}
    rw = lambda c: rewrite_iostrata(command_line(c, 42)[1:], takes, subs, 42, "vda")
    assert rw("bin/iostrata") == ["--duration", "1"]
    assert rw("bin/iostrata -D -F 5 3    # per disk") == ["-D", "-F", "0.5", "2"]
    assert rw("bin/iostrata -d nosuch0 -j --duration 10") == ["-d", "vda", "-j", "--duration", "1"]
    assert rw("bin/iostrata -p 1234 -D") == ["-p", "42", "-D", "--duration", "1"]
    assert rw("iostrata -DFp1234 2") == ["-D", "-F", "-p", "42", "--duration", "1", "2"]
    assert rw("iostrata -D -F -p $(pidof postgres | cut -d' ' -f1)") == \
        ["-D", "-F", "-p", "42", "--duration", "1"]
    assert rw("iostrata --pid=7 --duration=0.5") == ["--pid", "42", "--duration", "0.5"]
    assert rw("bin/iostrata features") == ["features"]
    assert rw("iostrata calibrate -j --dir /var/tmp") == ["calibrate", "-j", "--dir", "/var/tmp"]
    assert rw("iostrata features -p 1 --duration 30") == ["features", "-p", "42", "--duration", "1"]
    assert rw("iostrata serve -O") == ["serve", "-O", "--duration", "1"]
    assert rw("iostrata serve --duration=0.5") == ["serve", "--duration", "0.5"]
    assert rw("bin/iostrata record -o run.ndjson.gz -P") == \
        ["record", "-o", "/scratch/run.ndjson.gz", "-P", "--duration", "1"]
    assert rw("iostrata record -o /x/r.ndjson -D 5 3") == \
        ["record", "-o", "/scratch/r.ndjson", "-D", "0.5", "2"]
    assert rw("bin/iostrata report run.ndjson.gz -o r.html --svg panels --top 8") == \
        ["report", "-o", "/scratch/r.html", "--svg", "/scratch/panels", "--top", "8",
         str(SAMPLE)]
    sab = lambda c: rewrite_sched_ab(command_line(c, 42)[2:], takes | {"--rounds", "--round-secs"},
                                     "/scratch", lambda: "/dev/loop9")
    assert sab("bin/iostrata sched-ab -d sdb mq-deadline none -- --device /dev/sdb --force") == \
        ["sched-ab", "-d", "loop9", "mq-deadline", "none", "--rounds", "2", "--round-secs", "1",
         "-o", "/scratch/sched-ab", "--", "--device", "/dev/loop9", "--force"]
    assert sab("iostrata sched-ab -d sdb a b --rounds 8 --round-secs=30 -o ab/ -- fio j.fio") == \
        ["sched-ab", "-d", "loop9", "a", "b", "--rounds", "2", "--round-secs", "1", "-o",
         "/scratch/ab", "--", "fio", "j.fio"]
    assert rw("iostrata compare a.ndjson.gz b/ --gate block:device:p99 --html c.html") == \
        ["compare", "--gate", "block:device:p99", "--html", "/scratch/c.html", str(SAMPLE),
         str(SAMPLE)]
    assert rw("iostrata compare run.ndjson.gz --aa 200") == ["compare", "--aa", "200",
                                                             str(SAMPLE)]
    ltakes = {"--engine", "--runtime", "--ios", "--file", "--latency", "--op", "--qd", "--rw"}
    rl = lambda c: rewrite_load(command_line(c, 42)[1:], ltakes, "/scratch", lambda: "/dev/loop9")
    assert rl("bin/iostrata-load --engine io_uring # 10 s") == \
        ["--engine", "io_uring", "--runtime", "1s"]
    assert rl("iostrata-load --engine libaio --qd 32 --runtime 2s") == \
        ["--engine", "libaio", "--qd", "32", "--runtime", "1s"]
    assert rl("iostrata-load --rw write --ios 1000 --file /var/tmp/w --keep") == \
        ["--rw", "write", "--ios", "1000", "--file", "/scratch/w", "--keep"]
    with pytest.raises(AssertionError, match="without a shell"):
        command_line("bin/iostrata -j | head -1", 42)


# ---------------------------------------------------------------------------------------------
# layers

def man_layer_table(lines):
    """The LAYERS section's table: a .nf block headed `LAYER STAGES`, a row per layer."""
    rows, in_table = {}, False
    for l in lines:
        if l.section != "LAYERS" or l.kind != "nf":
            in_table = False
            continue
        words = l.text.split()
        if words == ["LAYER", "STAGES"]:
            in_table = True
        elif in_table and words:
            rows[words[0]] = (l.lineno, [w.strip(",") for w in words[1:]])
    return rows


@pytest.mark.root
def test_layer_table_matches_features():
    assert our_bpf_programs() == [], "iostrata programs loaded before the test started"
    r = subprocess.run([str(IOSTRATA), "features", "-j"], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert wait_no_bpf_programs() == [], "iostrata features left BPF programs loaded"
    feats = {(s["layer"], s["stage"]) for s in json.loads(r.stdout)["stages"]}
    man = rel(MAN["iostrata"])
    rows = man_layer_table(read_man("iostrata"))
    assert rows, f"{man}: no `LAYER STAGES` table in a .nf block of the LAYERS section"
    documented = {(layer, s) for layer, (_, stages) in rows.items() for s in stages}
    problems = [f"{l}/{s}: in `iostrata features -j` but not in {man}'s layer table"
                for l, s in sorted(feats - documented)]
    problems += [f"{l}/{s}: in {man}:{rows[l][0]} (layer table) but not in "
                 f"`iostrata features -j`" for l, s in sorted(documented - feats)]
    assert not problems, "\n".join(problems)


def test_layers_option_names_every_layer(help_texts):
    """-l in --help and in the man page lists every layer of the man page's layer table."""
    lines = read_man("iostrata")
    layers = set(man_layer_table(lines))
    assert layers, "the man page's layer table is empty"
    main = help_texts["iostrata"][0][1]
    m = re.search(r"^\s*-l, --layers=\S+\s+(.*(?:\n {8,}\S.*)*)", main, re.M)
    assert m, "bin/iostrata --help has no -l, --layers line"
    missing = [f"{x}: not in `bin/iostrata --help`'s -l entry" for x in sorted(layers)
               if not re.search(rf"\b{x}\b", m.group(1))]
    # the man page's -l entry: its tag and the text up to the next tag
    idx = next((i for i, l in enumerate(lines) if l.kind == "tag" and "--layers" in l.text), None)
    assert idx is not None, "the man page has no -l, --layers entry"
    body = []
    for l in lines[idx + 1:]:
        if l.kind == "tag" or l.section != lines[idx].section:
            break
        body.append(l.text)
    missing += [f"{x}: not in {rel(MAN['iostrata'])}:{lines[idx].lineno}'s -l entry"
                for x in sorted(layers) if not re.search(rf"\b{x}\b", " ".join(body))]
    assert not missing, "\n".join(missing)
