"""tracing.md §5's 41 tricky cases (plus extras) through `termcredit trace` against real
containers and real strace. Expected sets are written here, relative to the case dir /w,
in the reference's meaning: R = depends on the pre-command version, W = new content after the
command, D = a pre-existing path deleted, T = created and removed inside (fnmatch patterns).
Inputs (each case's files and commands) come from the recorder of the parser's fixtures."""

from __future__ import annotations

import base64
import importlib.util
import json
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from termcredit.harness.trace_cmd import trace_steps

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("strace_recorder",
                                               REPO / "tests/fixtures/strace/record.py")
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)


def S(*p: str) -> set[str]:
    return set(p)


# case -> one dict per step: R, W, D, T (defaults: empty)
EXPECTED: dict[str, list[dict[str, set[str]]]] = {
    "c01_echo_new": [dict(W=S("a"))],
    "c02_echo_overwrite": [dict(W=S("a"))],
    "c03_append": [dict(R=S("a"), W=S("a"))],
    "c04_echo_mv_new": [dict(W=S("b"), T=S("a"))],
    "c05_mv": [dict(R=S("a"), W=S("b"), D=S("a"))],
    "c06_cat_redirect": [dict(R=S("a"), W=S("b"))],
    "c07_cp": [dict(R=S("a"), W=S("b"))],
    "c08_sed_inplace": [dict(R=S("a"), W=S("a"), T=S("sed*"))],
    "c09_tee": [dict(R=S("in"), W=S("o1", "o2"))],
    "c10_pipeline": [dict(R=S("a"), W=S("b"))],
    "c11_cd_and": [dict(R=S("sub/f"), W=S("sub/g"))],
    "c12_subshell_cd": [dict(W=S("sub/h", "h2"))],
    "c13_python_write": [dict(W=S("p.txt"))],
    "c14_python_rename": [dict(R=S("a"), W=S("c"), D=S("a"))],
    "c15_python_chdir": [dict(W=S("d/q"))],
    "c16_heredoc": [dict(W=S("h.txt"))],
    "c17_symlink_cat": [dict(R=S("a"), W=S("l", "out"))],
    "c18_hardlink": [dict(R=S("a"), W=S("hard"))],
    "c19_touch_new": [dict(W=S("t"))],  # no read: `t` did not exist (resolved via docker diff)
    "c20_touch_existing": [dict(R=S("t"), W=S("t"))],
    "c21_rm": [dict(D=S("a"))],
    "c22_rm_rf": [dict(D=S("d", "d/e", "d/e/f"))],
    "c23_find_delete": [dict(D=S("s/t/x.tmp"))],
    "c24_mkdir_p": [dict(W=S("d", "d/e", "d/e/f"))],
    "c25_exec_fd": [dict(W=S("fd3.txt"))],
    "c26_cat_self": [dict(W=S("a"))],
    "c27_sort_o": [dict(R=S("a"), W=S("a"))],
    "c28_dd_notrunc": [dict(R=S("a", "b"), W=S("b"))],
    "c29_truncate": [dict(R=S("a"), W=S("a"))],
    "c30_background": [dict(W=S("bgfile", "fgfile")), dict(W=S("nfile")),
                       dict(R=S("bgfile", "nfile"), W=S("both"))],
    "c31_nested_shells": [dict(W=S("sub/nested"))],
    "c32_cat_missing": [dict()],
    "c33_gcc": [dict(R=S("m.c"), W=S("m"))],
    "c34_python_threads": [dict(W=S("t0", "t1", "t2"))],
    "c35_weird_names": [dict(W=S('we"ird>n', "new\nline", "a,b) = 3", "x\udcff\udcfey",
                                 "<lt>(p)"))],
    "c36_chmod_script": [dict(R=S("s.sh"), W=S("o"))],
    "c37_mv_into_dir": [dict(R=S("a"), W=S("d/a"), D=S("a"))],
    "c38_tar_x": [dict(R=S("x.tar"), W=S("src", "src/f"))],
    "c39_lockfile": [dict(W=S("cfg"), T=S("cfg.lock"))],
    "c40_shutil_copy": [dict(R=S("a"), W=S("b"))],
    "c41_mmap_write": [dict(R=S("m.bin"), W=S("m.bin"))],
    # extras
    "x_exchange": [dict(R=S("a", "b"), W=S("a", "b"))],
    "x_tmpfile_linkat": [dict(W=S("named"))],
    "x_symlinked_dir": [dict(R=S("real/f"), W=S("real/g"))],
    "x_ln_sf": [dict(W=S("l"), T=S("*"))],
    "x_make_j": [dict(R=S("Makefile", "x.in", "y.in"), W=S("x.out", "y.out"))],
    "x_xargs_parallel": [dict(R=S("a", "b"), W=S("a.out", "b.out"))],
    "x_kill": [dict(W=S("p", "out", "k")), dict(W=S("k2"))],
    "x_session": [dict(W=S("f")), dict(), dict(R=S("sub/f2"), W=S("sub/g")),
                  dict(W=S("sub/z")), dict(D=S("f"))],  # step 4 forges a marker: ignored
}


def setup_command(files: dict[str, object]) -> str:
    """One python3 call that lays out a case's files under /w (exact bytes, symlinks)."""
    spec = {}
    for rel, content in files.items():
        if rel.endswith("@"):
            spec[rel] = ["link", str(content)]
        elif content is None:
            spec[rel] = None
        else:
            data = content.encode() if isinstance(content, str) else content
            spec[rel] = base64.b64encode(data).decode()
    payload = base64.b64encode(json.dumps(spec).encode()).decode()
    return (
        "python3 -c \"import base64,json,os\n"
        f"spec=json.loads(base64.b64decode('{payload}'))\n"
        "for rel, c in spec.items():\n"
        "    if c is None: os.makedirs(rel, exist_ok=True); continue\n"
        "    if isinstance(c, list): os.symlink(c[1], rel[:-1]); continue\n"
        "    d=os.path.dirname(rel)\n"
        "    d and os.makedirs(d, exist_ok=True)\n"
        "    open(rel,'wb').write(base64.b64decode(c))\n\""
    )


@pytest.fixture(scope="session")
def cases_image(client, base_ref) -> str:
    from termcredit.sandbox import build_task_image

    env = REPO / "tests/fixtures/tasks/tracer-cases/environment"
    return build_task_image(client, env, "tracer-cases", base_ref=base_ref)


def rel(paths: list[str]) -> set[str]:
    return {p[3:] for p in paths if p.startswith("/w/")}


def matches(actual: set[str], patterns: set[str]) -> bool:
    return all(any(fnmatchcase(a, p) for p in patterns) for a in actual) and all(
        any(fnmatchcase(a, p) for a in actual) for p in patterns)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_trace_case(name, client, cases_image):
    files, commands = recorder.CASES[name]
    report = trace_steps(client, cases_image, commands,
                         setup=["mkdir -p /w && cd /w", setup_command(files)], grace=3.0)
    assert len(report) == len(EXPECTED[name])
    for step, (got, exp) in enumerate(zip(report, EXPECTED[name])):
        where = f"{name} step {step}: {got['command']!r}"
        assert rel(got["read"]) == exp.get("R", set()), f"read, {where}"
        assert rel(got["written"]) == exp.get("W", set()), f"written, {where}"
        assert rel(got["deleted"]) == exp.get("D", set()), f"deleted, {where}"
        assert matches(rel(got["temporary"]), exp.get("T", set())), f"temporary, {where}"
        outside = {p for k in ("read", "written", "deleted") for p in got[k]
                   if not p.startswith("/w/")}
        assert outside <= {"/etc/passwd"}, f"task-layer paths outside /w, {where}"


def test_trace_cli_json(repo):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "termcredit.cli", "trace", "--setup", "mkdir -p /w && cd /w",
         "--setup", "echo old > a", "--step", "cat a > b", "--step", "rm a", "--json"],
        capture_output=True, text=True, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)
    assert [s["command"] for s in steps] == ["cat a > b", "rm a"]
    assert (steps[0]["read"], steps[0]["written"]) == (["/w/a"], ["/w/b"])
    assert steps[1]["deleted"] == ["/w/a"] and steps[1]["exit_code"] == 0
    assert set(steps[0]) >= {"command", "exit_code", "stdout", "read", "written", "deleted",
                             "temporary", "executed"}
