"""One DepGPO analysis per trajectory (depgpo/analysis.py): every reader takes the same one.

The episode, fed to the live builder a step at a time by the step hook (as ``AgentEnv.step``
runs it), verifier reads /app/answer.txt, reward 1:
  0 cat /app/input.txt (stdout 90417, reused by 1) | 1 echo 90417 > /tmp/stage.txt
  | 2 cat /etc/hostname (nothing uses it) | 3 sed /tmp/stage.txt > /app/answer.txt
By hand (β 0.5): 3 wrote the verified file (1), 1 wrote the only line 3 read while writing it
(indirect, 1), 0's stdout was reused by 1 (supporting: β·… = 0.75), 2 fed nothing (0); with
β = 0 the supporting read has 0. Tokens per step [1, 3, 1, 1] (the live builder was fed with
1 each: the graph must show the final counts).
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest

from termcredit import estimators
from termcredit.depgpo import DepGPOConfig, analyse, to_json
from termcredit.depgpo import analysis as an
from termcredit.depgpo.load import facts_from_trajectory
from termcredit.depgpo.trial_hook import default_hooks
from termcredit.estimators.opd import scope_steps
from termcredit.harness.hooks import run_step_hooks, run_trial_hooks
from termcredit.records import (CommandRecord, FileState, Step, TokenLayout, Trajectory,
                                VerifierReport)
from termcredit.refine.select import decide
from termcredit.tracer import AccessSummary
from termcredit.trainer.credit_metrics import credit_metrics
from termcredit.trialdir import TrialPaths
from termcredit.viewer.credit import trial_credit

CREDIT = (0.75, 1.0, 0.0, 1.0)


def _rec(seq: int, command: str, *, read=(), write: dict[str, str] | None = None,
         stdout: str = "") -> CommandRecord:
    write = write or {}
    files = [FileState(p, "file", size=len(t), sha256=hashlib.sha256(t.encode()).hexdigest(),
                       text=True, content=t) for p, t in write.items()]
    return CommandRecord(command=command, stdout=stdout, stderr="", exit_code=0,
                         duration_s=0.0, seq=seq, accesses=AccessSummary(read=set(read),
                                                                         written=set(write)),
                         files=files)


def episode() -> Trajectory:
    recs = [_rec(0, "cat /app/input.txt", read=("/app/input.txt",), stdout="code=90417\n"),
            _rec(1, "echo 90417 > /tmp/stage.txt", write={"/tmp/stage.txt": "90417\n"}),
            _rec(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n"),
            _rec(3, "sed 's/^/a: /' /tmp/stage.txt > /app/answer.txt", read=("/tmp/stage.txt",),
                 write={"/app/answer.txt": "a: 90417\n"})]
    traj = Trajectory(task="t", instruction="Write the code in /app/input.txt to the answer.",
                      agent="x")
    for i, rec in enumerate(recs):
        traj.steps.append(Step(index=i, action=rec.command, command=rec))
        run_step_hooks(default_hooks(), traj)
    ids, mask, spans = [0], [0], []
    for n in (1, 3, 1, 1):
        spans.append([len(ids), len(ids) + n])
        ids += [1] * n
        mask += [1] * n
    traj.tokens = TokenLayout(token_ids=ids, loss_mask=mask, logprobs=[0.0] * len(ids),
                              step_spans=spans)
    traj.verifier = VerifierReport(reward=1.0, resources=["/app/answer.txt"])
    return traj


def test_every_reader_takes_the_one_analysis(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    traj = episode()
    calls = []
    real = an.analyse_graph
    monkeypatch.setattr(an, "analyse_graph", lambda *a: calls.append(a) or real(*a))
    run_trial_hooks(default_hooks(), traj, TrialPaths(tmp_path))  # graph.json, end of trial
    assert (tmp_path / "graph.json").is_file() and "hook_errors" not in traj.info
    est = estimators.build("depgpo")
    est([traj])
    assert est.weights_of(traj).credit == CREDIT
    assert scope_steps(traj, "relevant") == [True, True, False, True]
    # one traced step of four has credit 0
    assert credit_metrics([traj])["credit/zero_credit_step_frac"] == 0.25
    assert [row["credit"] for row in trial_credit(traj).steps.values()] == list(CREDIT)
    assert [d.keep for d in decide(traj)] == [True, True, False, True]
    assert len(calls) == 1


def test_the_live_graph_json_is_the_one_built_from_scratch() -> None:
    """graph.json byte for byte as the full rebuild wrote it (the final token counts too)."""
    traj = episode()
    fresh = copy.deepcopy(traj)
    fresh.live.clear()
    live = to_json(an.analysis_of(traj).graph.graph)
    assert '"n_tokens": 3' in live
    assert live == to_json(analyse(facts_from_trajectory(fresh)).graph.graph)


def test_other_settings_get_their_own_analysis_and_leave_the_defaults() -> None:
    traj = episode()
    default = an.analysis_of(traj)
    zero = an.analysis_of(traj, DepGPOConfig(beta=0.0))
    assert default.weights.credit == CREDIT
    assert zero.weights.credit == (0.0, 1.0, 0.0, 1.0)
    assert default.graph.graph.nodes["cmd:0"]["credit"] == 0.75  # not annotated over
    assert zero.graph.graph.nodes["cmd:0"]["credit"] == 0.0
    assert an.analysis_of(traj) is default and an.kept_analysis(traj) is default


def test_a_trajectory_changed_in_memory_is_analysed_again() -> None:
    traj = episode()
    before = an.analysis_of(traj)
    assert before.weights.n_tokens == (1, 3, 1, 1)
    traj.tokens.step_spans[1] = [2, 3]  # step 1 now has 1 token
    after = an.analysis_of(traj)
    assert after is not before and after.weights.n_tokens == (1, 1, 1, 1)
    assert after.weights.credit == CREDIT
