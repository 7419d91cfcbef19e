"""The trace cases one bash cannot hold, in real sandbox sessions on both backends (#33).

tests/integration/test_ebpf_cases.py runs every one-session case of the parser's fixtures in
one bash per backend. Four cases need a session of their own: a background job that outlives
its step (c30_background), a killed job (x_kill), a forged marker and `cd ..` (x_session) and a
shell that exits and is restarted (x_shim_restart). Each runs here step by step in a sandbox
traced by strace and in one traced by the host's eBPF tracer; each step's reads, writes and
deletions under the case's directory, its exit code and its integrity flags must agree.
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

from termcredit.tracer import parse_session
from termcredit.tracer.ebpf import available

WHY = available()
pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "strace"
_spec = importlib.util.spec_from_file_location("ebpf_session_recorder", FIXTURES / "record.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)

CASES = ("c30_background", "x_kill", "x_session", "x_shim_restart")
SETS = ("read", "written", "deleted")


def _setup_command(work: str, spec: dict[str, object]) -> str:
    """The case's files made by one shell command in ``work``."""
    parts = [f"mkdir -p {shlex.quote(work)} && cd {shlex.quote(work)}"]
    for rel, content in spec.items():
        if rel.endswith("@"):
            parts.append(f"ln -s {shlex.quote(str(content))} {shlex.quote(rel[:-1])}")
        elif content is None:
            parts.append(f"mkdir -p {shlex.quote(rel)}")
        else:
            parts.append(f"mkdir -p \"$(dirname {shlex.quote(rel)})\" && "
                         f"printf %s {shlex.quote(str(content))} > {shlex.quote(rel)}")
    return " && ".join(parts)


def _run(sb, name: str) -> list[dict[str, object]]:
    setup, commands = recorder.CASES[name]
    work = f"/work/{name}"
    first = sb.run(_setup_command(work, setup))
    assert first.exit_code == 0, first.stderr
    records = [sb.run(c) for c in commands if not c.startswith("<restart")]
    sb.run("sleep 0.6")  # a background job's last write lands in a step of the session
    tokens = {r.seq: r.end_token for r in [first, *records]}
    parsed = parse_session("".join(sb.shell.session_trace), sb.shell.nonce, tokens=tokens)
    out = []
    for r in records:
        summary = parsed.summary(r.seq)
        out.append({"exit": r.exit_code, "restarted": r.shell_restarted,
                    "integrity": sorted(r.integrity),
                    **{k: sorted(p for p in getattr(summary, k) if p.startswith(work + "/"))
                       for k in SETS}})
    return out


@pytest.mark.parametrize("name", CASES)
def test_a_session_case_agrees_across_backends(name, sandbox):
    got = {tracer: _run(sandbox(tracer=tracer), name) for tracer in ("strace", "ebpf")}
    assert got["ebpf"] == got["strace"]
    steps = got["ebpf"]
    if name == "x_shim_restart":  # by hand: `cd sub; exit 3` restarts in sub, then ../f
        assert [s["exit"] for s in steps[:3]] == [0, 1, 3] and steps[2]["restarted"]
        assert steps[3]["read"] == ["/work/x_shim_restart/f"]
        assert steps[3]["written"] == ["/work/x_shim_restart/sub/g"]
    if name == "c30_background":  # the job's write after its step ended is still its step's
        assert "/work/c30_background/bgfile" in steps[0]["written"]
        assert steps[2]["read"] == ["/work/c30_background/bgfile", "/work/c30_background/nfile"]
