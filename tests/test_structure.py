"""The user side's shape, checked on the built objects: no file reads or writes another file's
mutable globals (state goes through the session and the configuration, passed explicitly)."""
import re
import subprocess

from conftest import ROOT

BUILD = ROOT / "build" / "user"
WRITABLE = (".data", ".bss", "*COM*")  # .data.rel.ro and .rodata are read-only once loaded


SYM = re.compile(r"^[0-9a-f]+ (.{7}) (\S+)\s+[0-9a-f]+ (\S+)$")


def symbols(obj):
    """(defined global data objects {name: section}, undefined names) of one object file."""
    out = subprocess.run(["objdump", "-t", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = {}, set()
    for line in out.splitlines():
        m = SYM.match(line)
        if not m:
            continue
        flags, section, name = m.groups()
        if section == "*UND*":
            undefined.add(name)
        elif flags[0] == "g" and flags[6] == "O":
            defined[name] = section
    return defined, undefined


def test_no_mutable_globals_shared_between_files():
    objs = sorted(BUILD.rglob("*.o"))
    assert objs, "build the tree first (make)"
    defined, used_by = {}, {}
    for o in objs:
        d, u = symbols(o)
        for name, sec in d.items():
            defined[name] = (o.relative_to(BUILD), sec)
        for name in u:
            used_by.setdefault(name, []).append(o.relative_to(BUILD))
    shared = {name: (str(where), sec, [str(u) for u in used_by[name]])
              for name, (where, sec) in defined.items()
              if name in used_by and sec.startswith(WRITABLE) and not sec.startswith(".data.rel.ro")}
    assert not shared, f"mutable globals used across files: {shared}"
    # and the ones shared are the layer tables, all read-only
    ro = {name for name, (_, sec) in defined.items() if name in used_by}
    assert ro >= {"layers", "block_layer", "uring_layer", "aio_layer", "syscall_layer"}, ro
