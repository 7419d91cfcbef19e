"""Property tests (#32): arbitrary bytes as file names, commands and output go through the
record round trip (trajectory.json, steps.jsonl, result.json), the tracer's parse of a strace
line, DepGPO credit and graph.json, the viewer and the policy's observation, and come back
the same (or, for display, as ``\\xNN``). The real-run version is
tests/integration/test_bytes_run.py."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import unicodedata
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from termcredit.depgpo import CommandFacts, EpisodeFacts, analyse, from_json, to_json
from termcredit.depgpo.render import render
from termcredit.harness.steplog import StepLog, load_steps
from termcredit.rawtext import from_bytes, json_dumps, printable, read_text, to_bytes, write_text
from termcredit.records import (CommandRecord, FileState, Step, Trajectory, TrialResult,
                                VerifierReport, to_dict)
from termcredit.tracer import AccessSets, summarize_segment
from termcredit.trainer.actions import format_observation
from termcredit.trialdir import load_result, load_trajectory, save_result, save_trajectory
from termcredit.viewer.site import build_view

SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
# one path component: any bytes but '/' and NUL, not . or ..
NAME = st.binary(min_size=1, max_size=16).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))
# bytes that are surely not UTF-8 somewhere (a lone continuation byte), and anything at all
OUTPUT = st.one_of(st.binary(max_size=48),
                   st.tuples(st.binary(max_size=16), st.binary(max_size=16)).map(
                       lambda t: t[0] + b"\x80" + t[1]))
SURROGATE = re.compile("[\ud800-\udfff]")


def strace_escape(data: bytes) -> str:
    """As strace prints a string argument: printable ASCII as is, \\" and \\\\, the rest as
    three-digit octal (inside a `-y` annotation `<` and `>` too)."""
    return "".join(f"\\{c:03o}" if c < 0x20 or c >= 0x7F or c in b"<>" else
                   "\\" + chr(c) if c in b'"\\' else chr(c) for c in data)


@SETTINGS
@given(OUTPUT)
def test_text_and_json_forms_round_trip(data: bytes) -> None:
    text = from_bytes(data)
    assert to_bytes(text) == data
    dumped = json_dumps({text: [text]})
    dumped.encode("utf-8")  # strict: the file is UTF-8
    assert json.loads(dumped) == {text: [text]}
    shown = printable(text)
    assert not SURROGATE.search(shown)
    shown.encode("utf-8")
    # each byte that is not UTF-8 shows as \xNN; the UTF-8 text around it stays as it is
    assert printable(from_bytes(b"a\xe9b\xc3\xa9")) == "a\\xe9bé"
    with tempfile.TemporaryDirectory() as tmp:
        write_text(Path(tmp) / "f", text)
        assert (Path(tmp) / "f").read_bytes() == data and read_text(Path(tmp) / "f") == text


def _traj(trial: Path, command: str, path: str, out: str, err: str) -> Trajectory:
    acc = AccessSets(read={path}, written={path, "/w/plain"}, derived_from={path: "/w/plain"})
    rec = CommandRecord(command=command, stdout=out, stderr=err, exit_code=0, duration_s=0.1,
                        seq=1, accesses=acc, cwd=path, trace_file="trace/step-000.strace",
                        files=[FileState(path, "symlink", target=path)])
    step = Step(index=0, action=command, command=rec, observation=format_observation(rec),
                info={path: out})
    return Trajectory(task="t", instruction="i", agent="replay:x", steps=[step],
                      verifier=VerifierReport(reward=1.0, stdout=out, resources=[path]),
                      termination="done", trial_dir=str(trial), info={"cwd": path})


@SETTINGS
@given(NAME, OUTPUT, OUTPUT, OUTPUT)
def test_records_round_trip_through_every_trial_file(name: bytes, cmd: bytes, out: bytes,
                                                      err: bytes) -> None:
    path, command = "/w/" + from_bytes(name), "cat " + from_bytes(cmd)
    with tempfile.TemporaryDirectory() as tmp:
        trial = Path(tmp) / "t" / "attempt-0"
        traj = _traj(trial, command, path, from_bytes(out), from_bytes(err))
        save_trajectory(traj)
        StepLog(trial).append(traj.steps[0])
        save_result(TrialResult(task="t", reward=1.0, trial_dir=str(trial),
                                error=f"failed on {path}"), trial)
        for f in ("trajectory.json", "steps.jsonl", "result.json"):
            (trial / f).read_bytes().decode("utf-8")  # strict UTF-8 on disk
        back = load_trajectory(trial)
        assert to_dict(back) == to_dict(traj)
        rec = back.steps[0].command
        assert rec is not None and to_bytes(rec.stdout) == out and to_bytes(rec.stderr) == err
        assert rec.accesses is not None and path in rec.accesses.written
        assert rec.cwd == path and back.steps[0].info == {path: from_bytes(out)}
        assert to_dict(load_steps(trial)[0]) == to_dict(traj.steps[0])
        assert load_result(trial).error == f"failed on {path}"
        # the viewer: the page is UTF-8, each byte that is not shows as \xNN
        (trial / "trace").mkdir()
        index = build_view(Path(tmp), Path(tmp) / "view", graphs=False)
        page = next((index.parent / "trials").glob("*.html")).read_bytes().decode("utf-8")
        assert index.read_bytes().decode("utf-8")
        assert _html_escaped(printable(path)) in page
        assert _html_escaped(printable(command)) in page


def _html_escaped(text: str) -> str:
    import html

    return html.escape(text, quote=True)


@SETTINGS
@given(NAME)
def test_tracer_reads_any_name_from_strace_escapes(name: bytes) -> None:
    esc = strace_escape(name)
    line = (f'7 1.0 openat(-100</w>, "{esc}", 0x241, 0666) = 3</w/{esc}>\n'
            f'7 1.1 openat(-100</w>, "/w/{esc}", 0, 0) = 4</w/{esc}>\n')
    s = summarize_segment(line)
    assert s.written == {"/w/" + from_bytes(name)}
    assert to_bytes(next(iter(s.written))) == b"/w/" + name


def _write(index: int, path: str, data: bytes, read: set[str] = frozenset()) -> CommandFacts:
    state = FileState(path, "file", sha256=hashlib.sha256(data).hexdigest())
    return CommandFacts(index=index, command=f"step {index} {path}", exit_code=0,
                        stdout=from_bytes(data), after={path: state}, traced=True,
                        accesses=AccessSets(read=set(read), written={path}))


@SETTINGS
@given(st.lists(NAME, min_size=2, max_size=2, unique=True), OUTPUT)
@example(names=[b"n\xff", b"n\xfe"], data=b"\xe9\n")  # one name under a lossy decoding
def test_credit_tells_apart_names_that_differ_in_a_byte(names: list[bytes], data: bytes) -> None:
    # a and b are different files even when both hold bytes that are not UTF-8 (a lossy
    # decoding would make them one, and credit the wrong writer)
    a, b = ("/w/" + from_bytes(n) for n in names)
    facts = EpisodeFacts(instruction="", resources=["/out/r"], commands=[
        _write(0, a, data), _write(1, b, data), _write(2, "/out/r", b"x", read={a})])
    res = analyse(facts)
    # by hand: step 2 writes the resource (1), step 0 wrote what it read (1), step 1 nothing
    assert res.credit.credit == (1.0, 0.0, 1.0)
    graph = from_json(to_json(res.graph.graph))  # graph.json
    assert graph.has_edge("cmd:0", f"file:{a}@1") and graph.has_edge(f"file:{a}@1", "cmd:2")
    dot = render(graph, "dot").decode("utf-8")  # strict: drawable by Graphviz
    assert not SURROGATE.search(dot)
    if "\udcff" in a and "\\" not in a:  # labels are escaped and cut, so only the plain case
        assert "\\xff" in dot


@lru_cache(maxsize=1)
def _layout():
    from termcredit.trainer.policy import load_policy

    return load_policy("micro", seed=0).chat()


@settings(max_examples=15, deadline=None, database=None)
@given(OUTPUT, OUTPUT)
@example(b"", b"\xef\xa4\x80")  # U+F900, which NFC maps to U+8C48
def test_observation_tokenises_and_names_the_bytes(out: bytes, err: bytes) -> None:
    rec = CommandRecord(command="x", stdout=from_bytes(out), stderr=from_bytes(err),
                        exit_code=0, duration_s=0.0)
    obs = format_observation(rec)
    assert not SURROGATE.search(obs)
    if out.rstrip(b"\n"):
        assert printable(from_bytes(out).rstrip("\n")) in obs
    layout = _layout()
    ids = layout.observation_ids(obs)
    # the tokenizer's NFC normaliser maps compatibility code points (U+F900 -> U+8C48): the
    # policy sees the canonical form of the same text, nothing dropped or garbled
    assert unicodedata.normalize("NFC", obs.strip()) in layout.tokenizer.decode(ids)
