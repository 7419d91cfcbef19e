"""tracing.md §5: the 41 tricky cases (plus extras), on traces recorded on a real host.

The fixtures come from tests/fixtures/strace/record.py: each case's setup, then its command
in a persistent `bash` under the sandbox's exact strace flags, between the sandbox's
marker chdirs; the case directory is rewritten to /w. Expected sets are relative to /w
and use the document's meaning of R: "depends on the pre-command version". The trace
alone cannot tell whether a file opened O_CREAT without O_TRUNC/O_EXCL existed (`touch`),
so `read` is compared after dropping paths that did not exist before the command, as the
graph does ("only if a version exists"); `raw_read` pins the trace-level set where they
differ.
"""

from __future__ import annotations

import importlib.util
from fnmatch import fnmatchcase
from typing import Any

import pytest
from tracer_testutil import FIXTURES, NONCE, load, outside, rel, segment

from termcredit.tracer import parse_session, summarize_segment

_spec = importlib.util.spec_from_file_location("tracer_fixture_recorder", FIXTURES / "record.py")
assert _spec is not None and _spec.loader is not None
_recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_recorder)
SETUPS: dict[str, dict[str, object]] = {name: setup for name, (setup, _) in _recorder.CASES.items()}


def existed(name: str) -> set[str]:
    """Paths under /w before the command: the setup entries and their parent dirs."""
    out: set[str] = set()
    for key in SETUPS[name]:
        parts = key.rstrip("@").split("/")
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


def S(*paths: str) -> set[str]:
    return set(paths)


# name -> expected sets (relative to /w). Keys: R W D T (T: fnmatch patterns), plus
# optional probed, meta, listed, derived, raw_read, tmp_outside (patterns outside /w).
CASES: dict[str, dict[str, Any]] = {
    "c01_echo_new": dict(W=S("a")),
    "c02_echo_overwrite": dict(W=S("a")),
    "c03_append": dict(R=S("a"), W=S("a"), derived={"a": "a"}),
    "c04_echo_mv_new": dict(W=S("b"), T=S("a")),
    "c05_mv": dict(R=S("a"), W=S("b"), D=S("a"), derived={"b": "a"}),
    "c06_cat_redirect": dict(R=S("a"), W=S("b")),
    "c07_cp": dict(R=S("a"), W=S("b"), derived={}),
    "c08_sed_inplace": dict(R=S("a"), W=S("a"), T=S("sed*"), derived={}),
    "c09_tee": dict(R=S("in"), W=S("o1", "o2")),
    "c10_pipeline": dict(R=S("a"), W=S("b")),
    "c11_cd_and": dict(R=S("sub/f"), W=S("sub/g")),
    "c12_subshell_cd": dict(W=S("sub/h", "h2")),
    "c13_python_write": dict(W=S("p.txt")),
    "c14_python_rename": dict(R=S("a"), W=S("c"), D=S("a"), derived={"c": "a"}),
    "c15_python_chdir": dict(W=S("d/q")),
    "c16_heredoc": dict(W=S("h.txt")),
    "c17_symlink_cat": dict(R=S("a"), W=S("l", "out")),
    "c18_hardlink": dict(R=S("a"), W=S("hard"), derived={"hard": "a"}),
    "c19_touch_new": dict(W=S("t"), raw_read=S("t"), meta=S("t")),
    "c20_touch_existing": dict(R=S("t"), W=S("t"), meta=S("t")),
    "c21_rm": dict(D=S("a")),
    "c22_rm_rf": dict(D=S("d", "d/e", "d/e/f"), listed=S("d", "d/e")),
    "c23_find_delete": dict(D=S("s/t/x.tmp"), listed=S("s", "s/t")),
    "c24_mkdir_p": dict(W=S("d", "d/e", "d/e/f")),
    "c25_exec_fd": dict(W=S("fd3.txt")),
    "c26_cat_self": dict(W=S("a"), raw_read=S()),
    "c27_sort_o": dict(R=S("a"), W=S("a")),
    "c28_dd_notrunc": dict(R=S("a", "b"), W=S("b"), derived={"b": "b"}),
    "c29_truncate": dict(R=S("a"), W=S("a")),
    "c31_nested_shells": dict(W=S("sub/nested")),
    "c32_cat_missing": dict(probed=S("nonexistent")),
    "c33_gcc": dict(R=S("m.c"), W=S("m"), meta=S("m"), tmp_outside=S("/tmp/cc*")),
    "c34_python_threads": dict(W=S("t0", "t1", "t2")),
    "c35_weird_names": dict(
        W=S('we"ird>n', "new\nline", "a,b) = 3", "x\udcff\udcfey", "<lt>(p)"),
        raw_read=S("<lt>(p)"),  # touch: O_CREAT without TRUNC, no prior version
    ),
    "c36_chmod_script": dict(R=S("s.sh"), W=S("o"), meta=S("s.sh")),
    "c37_mv_into_dir": dict(R=S("a"), W=S("d/a"), D=S("a"), derived={"d/a": "a"}),
    "c38_tar_x": dict(R=S("x.tar"), W=S("src", "src/f")),
    "c39_lockfile": dict(W=S("cfg"), T=S("cfg.lock"), derived={}),
    "c40_shutil_copy": dict(R=S("a"), W=S("b"), meta=S("b")),
    "c41_mmap_write": dict(R=S("m.bin"), W=S("m.bin")),
    "x_exchange": dict(R=S("a", "b"), W=S("a", "b"), derived={"a": "b", "b": "a"}),
    "x_tmpfile_linkat": dict(W=S("named"), derived={}),
    "x_symlinked_dir": dict(R=S("real/f"), W=S("real/g")),  # canonical paths via -y
    "x_ln_sf": dict(W=S("l"), T=S("*"), probed=S()),  # symlink to a temp name + rename
    "x_make_j": dict(R=S("Makefile", "x.in", "y.in"), W=S("x.out", "y.out")),
    "x_xargs_parallel": dict(R=S("a", "b"), W=S("a.out", "b.out")),
}
MULTI = {"c30_background", "x_kill", "x_session", "x_shim_restart"}  # test_tracer_session.py


def test_every_fixture_has_expectations() -> None:
    recorded = {p.stem for p in FIXTURES.glob("*.strace")}
    assert recorded == set(CASES) | MULTI
    assert set(_recorder.CASES) == recorded


def _match_patterns(actual: set[str], patterns: set[str]) -> bool:
    return all(any(fnmatchcase(a, p) for p in patterns) for a in actual) and all(
        any(fnmatchcase(a, p) for a in actual) for p in patterns
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    exp = CASES[name]
    text = load(name)
    trace = parse_session(text, NONCE)
    assert trace.stats.skipped == 0 and trace.stats.unfinished_dropped == 0
    assert list(trace.commands) == [1]
    s = trace.summary(1)
    before = existed(name)
    assert rel(s.read) & before == exp.get("R", set()), "read"
    if "raw_read" in exp:
        assert rel(s.read) == exp["raw_read"], "raw read"
    else:
        assert rel(s.read) <= before, "read of a path that did not exist"
    assert rel(s.written) == exp.get("W", set()), "written"
    assert rel(s.deleted) == exp.get("D", set()), "deleted"
    assert _match_patterns(rel(s.temporary), exp.get("T", set())), f"temporary {s.temporary}"
    assert _match_patterns(outside(s.temporary), exp.get("tmp_outside", set()))
    # Outside the case dir only bash's own getpwuid() read may show up in the task layer.
    assert outside(s.read | s.written | s.deleted) <= {"/etc/passwd"}
    for key, attr in (("probed", "probed"), ("meta", "meta"), ("listed", "listed")):
        if key in exp:
            assert rel(getattr(s, attr)) == exp[key], key
    if "derived" in exp:
        derived = {k[3:]: v[3:] for k, v in s.derived_from.items() if k.startswith("/w/")}
        assert derived == exp["derived"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_segment_alone_gives_the_same_summary(name: str) -> None:
    """What the sandbox stores per command is enough when nothing runs in the background."""
    text = load(name)
    assert summarize_segment(segment(text, 1)) == parse_session(text).summary(1)


def test_gcc_details() -> None:
    """§5 #33: vfork'd compiler passes, $PATH search for `as`, temps, chmod of the output."""
    trace = parse_session(load("c33_gcc"), NONCE)
    cmd = trace.commands[1]
    s = cmd.summary
    assert len(s.temporary) == 5 and all(p.startswith("/tmp/cc") for p in s.temporary)
    assert {"/usr/bin/gcc", "/usr/bin/as", "/usr/bin/ld"} <= s.environment.executed
    assert any(p.endswith("/as") for p in s.probed | s.environment.probed)  # PATH search
    assert "/usr/include/stdc-predef.h" in s.environment.read
    assert len(cmd.pids) == 5  # gcc, cc1, as, collect2, ld
    assert all(trace.attribution[p] == 1 for p in cmd.pids)
