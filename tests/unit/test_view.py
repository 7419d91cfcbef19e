"""`termcredit view` on hand-built run directories: pages, links, escaping, credit, serving."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

import termcredit.viewer.credit as credit_mod
import termcredit.viewer.site as site_mod
from termcredit.viewer import build_view
from termcredit.viewer.cli import add_view_parser, site_server
from termcredit.viewer.index import line_chart
from termcredit.viewer.load import find_trial_dirs
from termcredit.records import (CommandRecord, FileState, Step, Trajectory, TrialResult,
                                VerifierReport, save_json)
from termcredit.tracer import AccessSummary

EVIL = "<script>alert('x')</script>"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _traced_trial(d: Path, *, reward: float = 1.0) -> None:
    """Two traced commands: write /app/hello.txt (the verifier's resource), then read it."""
    content = "Hello, world!\n"
    (d / "content").mkdir(parents=True)
    (d / "content" / _sha(content)).write_text(content)
    w = CommandRecord(command=f"echo \"{EVIL}\"; echo 'Hello, world!' > /app/hello.txt",
                      stdout=EVIL + "\n", stderr="", exit_code=0, duration_s=0.05, seq=0,
                      accesses=AccessSummary(written={"/app/hello.txt"}),
                      files=[FileState(path="/app/hello.txt", kind="file", size=len(content),
                                       sha256=_sha(content), mode=0o644, text=True)])
    r = CommandRecord(command="cat /app/hello.txt", stdout=content, stderr="", exit_code=0,
                      duration_s=0.01, seq=1, accesses=AccessSummary(read={"/app/hello.txt"}))
    traj = Trajectory(
        task="hello-world", instruction="Write <b>Hello</b> & friends to /app/hello.txt",
        agent="replay", termination="done", trial_dir=str(d),
        steps=[Step(index=0, action=w.command, command=w), Step(index=1, action=r.command,
                                                                command=r)],
        verifier=VerifierReport(reward=reward, exit_code=0, stdout="PASSED test_hello\n",
                                resources=["/app/hello.txt"], trace_file="trace/verifier.strace"))
    save_json(traj, d / "trajectory.json")
    save_json(TrialResult(task="hello-world", reward=reward, trial_dir=str(d), n_steps=2),
              d / "result.json")
    (d / "verifier").mkdir()
    (d / "verifier" / "test-stdout.txt").write_text("collected 1 item\nPASSED test_hello\n")
    (d / "verifier" / "resources.json").write_text(json.dumps(
        {"raw_read": ["/app/hello.txt", "/tests/test.py"], "written_by_verifier": [],
         "cleaned": ["/app/hello.txt"]}))


def _untraced_trial(d: Path) -> None:
    """No accesses at all (e.g. an older trajectory): no credit column; long output folded."""
    long_out = "".join(f"line {i} {EVIL}\n" for i in range(200))
    c = CommandRecord(command="seq 200", stdout=long_out, stderr="warn: <b>", exit_code=3,
                      duration_s=0.2)
    traj = Trajectory(task="hello-world", instruction="say hi", agent="nop",
                      termination="max_turns",
                      steps=[Step(index=0, action="seq 200", command=c),
                             Step(index=1, action="<<nonsense>>", invalid=True,
                                  observation="invalid action: <<nonsense>>")],
                      verifier=VerifierReport(reward=0.0, error="tests <failed>"))
    save_json(traj, d / "trajectory.json")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "20250101-000000-replay"
    _traced_trial(run / "hello-world" / "attempt-0")
    _untraced_trial(run / "hello-world" / "attempt-1")
    _untraced_trial(run / "content" / "attempt-0")  # a task named like a trial's subfolder
    trials = [{"task": "hello-world", "reward": 1.0, "trial_dir": str(run / "hello-world" /
                                                                      "attempt-0"),
               "error": None, "attempt": 0, "n_steps": 2},
              {"task": "hello-world", "reward": 0.0, "trial_dir": str(run / "hello-world" /
                                                                      "attempt-1"),
               "error": "tests <failed>", "attempt": 1, "n_steps": 2},
              {"task": "broken", "reward": 0.0, "trial_dir": "runs/x/broken/attempt-0",
               "error": "image build failed: <nope>", "attempt": 0, "n_steps": 0}]
    (run / "result.json").write_text(json.dumps(
        {"run_id": "r1", "agent": "replay", "complete": True, "n_trials": 3, "n_planned": 3,
         "mean_reward": 1 / 3, "trials": trials}))
    (run / "config.toml").write_text('[run]\nagent = "replay"\n')
    return run


def _links(index_html: str) -> list[str]:
    return re.findall(r"href='(trials/[^']+)'", index_html)


def _page(out: Path, index: str, fragment: str) -> str:
    (link,) = [link for link in _links(index) if fragment in link]
    return (out / link).read_text()


def test_run_dir_index_and_trial_pages(run_dir: Path) -> None:
    index_path = build_view(run_dir)
    out = run_dir / "view"
    assert index_path == out / "index.html"
    index = index_path.read_text()
    assert "termcredit run" in index and "mean reward" in index
    links = _links(index)
    assert len(links) == 3 and all((out / link).is_file() for link in links)
    assert "content__attempt-0" in links[0]
    assert "broken/attempt-0" in index and "image build failed: &lt;nope&gt;" in index  # no page
    assert "tests &lt;failed&gt;" in index
    assert "<script" not in index

    good = _page(out, index, "hello-world__attempt-0")
    assert "<script" not in good and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in good
    assert "Write &lt;b&gt;Hello&lt;/b&gt; &amp; friends" in good
    assert "cat /app/hello.txt" in good and "<th>credit</th>" in good
    assert "<code>/app/hello.txt</code>" in good  # the cleaned verifier resource
    assert "PASSED test_hello" in good and "1.000" in good
    assert "href='../../hello-world/attempt-0/trajectory.json'" in good

    bad = _page(out, index, "hello-world__attempt-1")
    assert "<script" not in bad and "<th>credit</th>" not in bad
    assert "no DepGPO credit" in bad and "Dependency graph" not in bad
    assert "<details><summary>stdout (201 lines" in bad  # long output collapsed
    assert "invalid action" in bad and "&lt;&lt;nonsense&gt;&gt;" in bad
    assert "warn: &lt;b&gt;" in bad


def test_graph_inline_or_note(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = build_view(run_dir).read_text()
    good = _page(run_dir / "view", index, "hello-world__attempt-0")
    if shutil.which("dot"):
        graph = good.split("<h2>Dependency graph</h2>", 1)[1]
        assert graph.lstrip().startswith("<div class='graph'><svg") and "<?xml" not in good
    monkeypatch.setattr(site_mod.shutil, "which", lambda name: None)
    index = build_view(run_dir, run_dir / "v2").read_text()
    good = _page(run_dir / "v2", index, "hello-world__attempt-0")
    assert "not installed" in good and "<svg" not in good and "<th>credit</th>" in good
    index = build_view(run_dir, run_dir / "v3", graphs=False).read_text()
    assert "Dependency graph" not in _page(run_dir / "v3", index, "hello-world__attempt-0")


def test_credit_errors_are_caught(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a, **k):
        raise RuntimeError("graph <exploded>")

    monkeypatch.setattr(credit_mod, "analysis_of", boom)
    index = build_view(run_dir, run_dir / "v").read_text()
    good = _page(run_dir / "v", index, "hello-world__attempt-0")
    assert "<th>credit</th>" not in good and "graph &lt;exploded&gt;" in good
    assert "cat /app/hello.txt" in good


def _steps_section(page: str) -> str:
    return page.split("<h2>Steps</h2>", 1)[1].split("<h2>", 1)[0]


def test_credit_from_graph_json_or_one_analysis(run_dir: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A traced trial is analysed at most once; with its graph.json, not at all, and the page
    shows the same credit, weights, classes and graph."""
    from termcredit.depgpo.report import write_graph_json

    calls = []
    analyse = credit_mod.analysis_of
    monkeypatch.setattr(credit_mod, "analysis_of",
                        lambda *a, **k: calls.append(1) or analyse(*a, **k))
    index = build_view(run_dir, run_dir / "a").read_text()
    analysed = _page(run_dir / "a", index, "hello-world__attempt-0")
    assert len(calls) == 1  # the traced trial, once; the untraced ones need none
    trial = run_dir / "hello-world" / "attempt-0"
    write_graph_json(trial)
    calls.clear()
    index = build_view(run_dir, run_dir / "b").read_text()
    stored = _page(run_dir / "b", index, "hello-world__attempt-0")
    assert calls == [] and "graph.json</a>" in stored
    assert _steps_section(stored) == _steps_section(analysed)
    assert "<td class='credit'>" in _steps_section(stored)
    if shutil.which("dot"):
        assert "<div class='graph'><svg" in stored
    (trial / "graph.json").write_text('{"not": "a graph"}')  # unreadable: analysed again
    index = build_view(run_dir, run_dir / "c").read_text()
    assert len(calls) == 1
    assert _steps_section(_page(run_dir / "c", index, "hello-world__attempt-0")) == \
        _steps_section(analysed)


def test_step_table_shows_commands_verbatim(run_dir: Path) -> None:
    index = build_view(run_dir, graphs=False).read_text()
    good = _page(run_dir / "view", index, "hello-world__attempt-0")
    cmd = "echo &quot;&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&quot;; echo &#x27;Hello"
    assert f"<td class='cmd'><code>{cmd}, world!&#x27; &gt; /app/hello.txt</code></td>" in good


def test_training_run(tmp_path: Path) -> None:
    run = tmp_path / "train"
    for step in range(3):
        for g in range(2):
            _traced_trial(run / "rollouts" / f"step-{step:06d}" / "hello-world-i0" / f"g{g}",
                          reward=float(g))
    rows = [{"step": s, "task": "hello-world", "reward_mean": 0.5, "success_rate": 0.5,
             "loss": 0.1 * s} for s in range(3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows)
                                       + '{"step": 3, "rew')  # a crash mid-line
    nested = run / "rollouts" / "step-000000" / "hello-world-i0" / "g0" / "verifier" / "x"
    nested.mkdir(parents=True)
    (nested / "trajectory.json").write_text("{}")  # the task's verifier output: not a trial
    assert len(find_trial_dirs(run)) == 6
    index = build_view(run, tmp_path / "site", graphs=False).read_text()
    assert "training run" in index and "<polyline" in index and "success_rate" in index
    assert "<th>step</th>" in index and "<svg" in index
    links = _links(index)
    assert len(links) == 6 and "rollouts__step-000002__hello-world-i0__g1" in links[-1]
    page = (tmp_path / "site" / links[-1]).read_text()
    assert "href='../index.html'" in page and "cat /app/hello.txt" in page


def test_line_chart_edge_cases() -> None:
    assert "no per-step metrics" in line_chart([])
    one = line_chart([{"step": 0, "reward_mean": 0.25, "success_rate": float("nan")}])
    assert "<polyline" in one and "success_rate" not in one


def test_missing_or_empty_run_dir(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build_view(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        build_view(tmp_path)


def test_cli_verb(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser()
    add_view_parser(p.add_subparsers(dest="verb"))
    args = p.parse_args(["view", str(run_dir), "-o", str(run_dir / "site")])
    assert args.port == 8765 and not args.serve
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "site" / "index.html")


def test_serve_answers_get(run_dir: Path) -> None:
    index = build_view(run_dir)
    server, url = site_server(index, run_dir, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/view/index.html")
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.status == 200
            body = resp.read().decode()
        link = _links(body)[0]
        base = url.rsplit("/", 1)[0]
        with urllib.request.urlopen(f"{base}/{link}", timeout=10) as resp:
            assert resp.status == 200 and "hello-world" in resp.read().decode()
        raw = f"{base.rsplit('/', 1)[0]}/hello-world/attempt-0/trajectory.json"
        with urllib.request.urlopen(raw, timeout=10) as resp:  # raw files through the root
            assert json.loads(resp.read())["task"] == "hello-world"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert not thread.is_alive()
