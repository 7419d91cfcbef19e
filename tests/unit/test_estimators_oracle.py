"""The `oracle` estimator (issue #34): ground-truth step credit applied as DepGPO applies its
graph's. Every expected advantage is worked out by hand below.

Task patterns: necessary ['^tar -xzf ', '> /app/answer'], breaking ['rm -rf /app/data'].
Group (rewards [1, 0, 0]: mean 1/3, population std √2/3 -> Â = [√2, −1/√2, −1/√2]):
  A (R=1): find (look-around) | tar -xzf | cat > /app/answer | `done` (no command)
           loss tokens [2, 3, 1, 1]; credits [0, 1, 1, None] (untraced weight 1)
           K 3, min 0, Σ 2 -> f = [0, 1.5, 1.5, 1]; Σn = 7, Σ n·f = 0 + 4.5 + 1.5 + 1 = 7
           -> w = f = [0, 1.5, 1.5, 1]
  B (R=0): tar -xzf | rm -rf /app/data (breaking) | cat > /app/answer (exit 1)
           tokens [1, 2, 1]; blame on {1 (breaking), 2 (failed)}: credits [0, 1, 1]
           f = [0, 1.5, 1.5]; Σn = 4, Σ n·f = 3 + 1.5 = 4.5 -> w = f·4/4.5 = [0, 4/3, 4/3]
  C (R=0): tar -xzf | echo hi — nothing broke, nothing failed: an omission -> unit weights
"""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.estimators.oracle import INFO_KEY, OracleSpec, label_steps
from termcredit.records import CommandRecord, Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.providers import OracleSteps, providers_for
from task_testutil import make_task

R2 = math.sqrt(2.0)
SPEC = OracleSpec.from_metadata({"oracle": {
    "necessary": ["^tar -xzf ", "> /app/answer"], "breaking": ["rm -rf /app/data"]}}, "t")


def step(i: int, command: str | None, exit_code: int = 0) -> Step:
    if command is None:
        return Step(index=i, action="done")
    rec = CommandRecord(command=command, stdout="", stderr="", exit_code=exit_code,
                        duration_s=0.0, seq=i)
    return Step(index=i, action=command, command=rec)


def traj(reward: float, steps: list[Step], n_tokens: list[int]) -> Trajectory:
    """[prompt] then per step its n sampled tokens and one observation token (mask 0)."""
    ids, mask, spans = [0], [0], []
    for n in n_tokens:
        spans.append([len(ids), len(ids) + n])
        ids += [1] * n + [2]
        mask += [1] * n + [0]
    tok = TokenLayout(token_ids=ids, loss_mask=mask, logprobs=[0.0] * len(ids), step_spans=spans)
    return Trajectory(task="t", instruction="", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward), tokens=tok)


def group() -> list[Trajectory]:
    a = traj(1.0, [step(0, "find /app -maxdepth 2"), step(1, "tar -xzf /app/in.tgz"),
                   step(2, "cat /tmp/x > /app/answer"), step(3, None)], [2, 3, 1, 1])
    b = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "rm -rf /app/data"),
                   step(2, "cat /tmp/x > /app/answer", exit_code=1)], [1, 2, 1])
    c = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "echo hi")], [1, 1])
    OracleSteps({"t": SPEC})(g := [a, b, c])
    return g


def close(got: list[float], want: list[float]) -> None:
    assert len(got) == len(want)
    assert all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-9) for x, y in zip(got, want)), (got, want)


def test_labels_need_a_clean_run_for_necessary_and_none_for_breaking() -> None:
    a, b, c = group()
    assert a.info[INFO_KEY] == {"necessary": [1, 2], "breaking": [], "untried": 0,
                                "references": []}
    # B's answer step matches but exited 1: not necessary work done, but tried; its rm
    # matches breaking. C never tried '> /app/answer'
    assert b.info[INFO_KEY] == {"necessary": [0], "breaking": [1], "untried": 0,
                                "references": []}
    assert label_steps(c, SPEC) == {"necessary": [0], "breaking": [], "untried": 1,
                                    "references": []}


def test_step_advantages_by_hand() -> None:
    out = estimators.build("oracle")(group())
    a, b, c = out.step_advantages
    close(a, [0.0, 1.5 * R2, 1.5 * R2, R2])
    close(b, [0.0, -4 / 3 / R2, -4 / 3 / R2])
    close(c, [-1 / R2, -1 / R2])
    # per token: prompt and observation tokens 0, each sampled token its step's value
    close(out.advantages[1], [0.0, 0.0, 0.0, *[-4 / 3 / R2] * 2, 0.0, -4 / 3 / R2, 0.0])
    # the token-weighted mean of each trajectory stays its Â (Σ n_t w_t = Σ n_t)
    assert math.isclose(sum(out.advantages[0]) / 7, R2, rel_tol=1e-5)
    assert out.stats["fallback_rate"] == pytest.approx(1 / 3)
    assert out.stats["fallback/omission"] == pytest.approx(1 / 3)
    # traced steps with credit 0: A's find, B's tar (blame weights), over 6 traced steps
    assert out.stats["zero_credit_step_frac"] == pytest.approx(2 / 6)
    assert out.stats["zero_advantage_group"] == 0.0


def test_every_command_necessary_ties_and_falls_back_to_grpo() -> None:
    t = traj(1.0, [step(0, "tar -xzf a"), step(1, "cat b > /app/answer")], [2, 1])
    u = traj(0.0, [step(0, "ls")], [1])
    OracleSteps({"t": SPEC})([t, u])
    est = estimators.build("oracle")
    out = est([t, u])
    close(out.step_advantages[0], [1.0, 1.0])  # Â = ±1 for rewards [1, 0]
    assert est.step_weights(t).fallback == "tied-credits"


def test_subtract_min_off_and_untraced_weight_zero() -> None:
    a = group()[0]
    # credits [0, 1, 1, None], u = 0: f = 2·C/2 = [0, 1, 1, 0]; Σn 7, Σ n·f 4 -> w = f·7/4
    sw = estimators.build("oracle", subtract_min=False, untraced_weight=0.0).step_weights(a)
    close(list(sw.w), [0.0, 1.75, 1.75, 0.0])


def test_needs_and_missing_labels() -> None:
    assert estimators.needs("oracle") == {estimators.ORACLE_STEPS}
    t = traj(1.0, [step(0, "true")], [1])
    with pytest.raises(ValueError, match="must provide 'oracle_steps'"):
        estimators.build("oracle")([t, t])


@pytest.mark.parametrize("meta, match", [
    ({}, "needs \\[metadata.oracle\\]"),
    ({"oracle": {"necessary": []}}, "non-empty 'necessary'"),
    ({"oracle": {"necessary": ["x"], "harmful": ["y"]}}, "not harmful"),
    ({"oracle": {"necessary": ["("]}}, "missing \\)"),
])
def test_spec_errors_name_the_task(meta: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OracleSpec.from_metadata(meta, "tasks/x/task.toml")


def test_the_trainer_reads_each_task_toml_and_refuses_a_task_without(tmp_path) -> None:
    ok = make_task(tmp_path / "t", 'timeout_sec = 60\n[metadata.oracle]\n'
                   'necessary = ["^tar -xzf "]\nbreaking = ["rm -rf"]\n'
                   '[metadata.demos]\nharmless = [{before = 0, command = "ls"}]\n')
    (ok / "solution").mkdir()
    (ok / "solution" / "solve.sh").write_text("#!/bin/bash\ntar -xzf a.tgz\nsha256sum -c s\n")
    (provide,) = providers_for({"oracle_steps"}, TrainConfig(algo="oracle", tasks=[str(ok)]), None)
    t = traj(1.0, [step(0, "rm -rf /app"), step(1, "tar -xzf a.tgz")], [1, 1])
    provide([t])
    # the references: the solution's commands, then the demonstrations' declared ones
    assert t.info[INFO_KEY] == {"necessary": [1], "breaking": [0], "untried": 0,
                                "references": ["tar -xzf a.tgz", "sha256sum -c s", "ls"]}
    bare = make_task(tmp_path / "u", "timeout_sec = 60\n")
    with pytest.raises(ValueError, match=r"u/task.toml: the oracle estimator needs"):
        providers_for({"oracle_steps"}, TrainConfig(algo="oracle", tasks=[str(bare)]), None)


def test_uniform_negative_keeps_the_credit_on_solved_episodes_only() -> None:
    out = estimators.build("oracle", negative="uniform")(group())
    a, b, c = out.step_advantages
    close(a, [0.0, 1.5 * R2, 1.5 * R2, R2])  # A as with blame: its Â is positive
    close(b, [-1 / R2] * 3)  # B: unit weights, not blame on its rm and its failed cat
    close(c, [-1 / R2] * 2)
    with pytest.raises(ValueError, match="negative must be one of 'blame', 'uniform'"):
        estimators.build("oracle", negative="errors")


def test_a_floor_mixes_grpos_unit_weight_into_every_step() -> None:
    # floor 0.5: w' = 0.5 + 0.5·w. A: [0, 1.5, 1.5, 1] -> [0.5, 1.25, 1.25, 1.0];
    # B (blame): [0, 4/3, 4/3] -> [0.5, 7/6, 7/6]; C (unit) stays 1
    out = estimators.build("oracle", floor=0.5)(group())
    a, b, c = out.step_advantages
    close(a, [0.5 * R2, 1.25 * R2, 1.25 * R2, R2])
    close(b, [-0.5 / R2, -7 / 6 / R2, -7 / 6 / R2])
    close(c, [-1 / R2, -1 / R2])
    # the token-weighted mean of each trajectory is still its Â (tokens [2, 3, 1, 1])
    assert math.isclose((2 * 0.5 + 3 * 1.25 + 1.25 + 1.0) / 7, 1.0)
    close(estimators.build("oracle", floor=1.0)(group()).step_advantages[0], [R2] * 4)  # GRPO
    with pytest.raises(ValueError, match=r"floor must be in \[0, 1\]"):
        estimators.build("oracle", floor=1.5)


def test_positive_uniform_gives_solved_episodes_grpo_weights() -> None:
    # A (solved) gets Â = √2 on every step instead of [0, 1.5, 1.5, 1]·√2; B keeps its blame
    # [0, 4/3, 4/3]·(−1/√2) and C its unit weights
    out = estimators.build("oracle", positive="uniform")(group())
    a, b, c = out.step_advantages
    close(a, [R2] * 4)
    close(b, [0.0, -4 / 3 / R2, -4 / 3 / R2])
    close(c, [-1 / R2] * 2)
    # the statistics describe the credit, not the choice: only C (an omission) fell back
    assert out.stats["fallback_rate"] == pytest.approx(1 / 3)
    assert set(k for k in out.stats if k.startswith("fallback/")) == {"fallback/none",
                                                                      "fallback/omission"}
    with pytest.raises(ValueError, match="oracle: positive must be one of 'necessary', "
                                         "'uniform', not 'all'"):
        estimators.build("oracle", positive="all")


def test_scale_peak_caps_every_weight_at_grpos() -> None:
    # each trajectory's weights over their largest: A [0, 1.5, 1.5, 1] -> [0, 1, 1, 2/3],
    # B [0, 4/3, 4/3] -> [0, 1, 1], C [1, 1] as it is
    out = estimators.build("oracle", scale="peak")(group())
    a, b, c = out.step_advantages
    close(a, [0.0, R2, R2, R2 * 2 / 3])
    close(b, [0.0, -1 / R2, -1 / R2])
    close(c, [-1 / R2] * 2)
    with pytest.raises(ValueError, match="oracle: scale must be one of 'tokens', 'peak'"):
        estimators.build("oracle", scale="max")


def test_omission_done_blames_the_done_that_ended_it_with_work_missing() -> None:
    # C' = tar -xzf | echo hi | done, tokens [1, 1, 2]: no breaking or failed command, so an
    # omission; blame on `done`: credits [0, 0, 1], K 3, Σ 1 -> f = [0, 0, 3]; Σn 4,
    # Σ n·f 6 -> w = [0, 0, 2]; Â = −1/√2 -> [0, 0, −√2]. C (ended without `done`: the
    # turn budget) keeps GRPO's unit weights; A and B as in test_step_advantages_by_hand
    a, b, c = group()
    c2 = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "echo hi"), step(2, None)],
              [1, 1, 2])
    OracleSteps({"t": SPEC})([c2])
    est = estimators.build("oracle", omission="done")
    out = est([a, b, c2])
    close(out.step_advantages[2], [0.0, 0.0, -R2])
    close(out.step_advantages[1], [0.0, -4 / 3 / R2, -4 / 3 / R2])
    close(out.step_advantages[0], [0.0, 1.5 * R2, 1.5 * R2, R2])
    close(est([a, b, c]).step_advantages[2], [-1 / R2] * 2)
    # an unparsable last action is not a `done`: unit weights
    bad = traj(0.0, [step(0, "echo hi"), Step(index=1, action="```", invalid=True)], [1, 1])
    OracleSteps({"t": SPEC})([bad])
    close(est([a, b, bad]).step_advantages[2], [-1 / R2] * 2)
    # the default keeps GRPO's weights on every omission
    close(estimators.build("oracle")([a, b, c2]).step_advantages[2], [-1 / R2] * 3)
    with pytest.raises(ValueError, match="oracle: omission must be one of 'unit', 'done'"):
        estimators.build("oracle", omission="last")


def test_omission_also_blames_a_premature_done_beside_the_faults() -> None:
    # B' = tar -xzf | rm -rf /app/data (breaking) | done, tokens [1, 2, 2]; '> /app/answer'
    # never tried, so its done is blamed too: credits [0, 1, 1], K 3, Σ 2 -> f = [0, 1.5, 1.5];
    # Σn 5, Σ n·f 6 -> w = f·5/6 = [0, 1.25, 1.25]; Â = −1/√2.
    # omission=done leaves the done alone there (a fault was found), so it is an untraced step
    # (credit None, weight 1): traced K 2, Σ 1 -> f = [0, 2, 1]; Σ n·f 6 -> w = [0, 5/3, 5/6]. B (no done, every necessary command tried) keeps [0, 4/3, 4/3]; C' (an
    # omission that never tried the answer) is blamed on its done as with omission=done
    a, b, _ = group()
    b2 = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "rm -rf /app/data"),
                    step(2, None)], [1, 2, 2])
    c2 = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "echo hi"), step(2, None)],
              [1, 1, 2])
    OracleSteps({"t": SPEC})([b2, c2])
    also = estimators.build("oracle", omission="also")
    close(also([a, b2, c2]).step_advantages[1], [0.0, -1.25 / R2, -1.25 / R2])
    close(also([a, b2, c2]).step_advantages[2], [0.0, 0.0, -R2])
    close(also([a, b, c2]).step_advantages[1], [0.0, -4 / 3 / R2, -4 / 3 / R2])
    close(estimators.build("oracle", omission="done")([a, b2, c2]).step_advantages[1],
          [0.0, -5 / 3 / R2, -5 / 6 / R2])
    # every necessary command tried (the answer's failed): a faultless-looking `done` is not
    # premature, so unit weights as an omission
    d = traj(0.0, [step(0, "tar -xzf /app/in.tgz"), step(1, "echo > /app/answer"),
                   step(2, None)], [1, 1, 2])
    OracleSteps({"t": SPEC})([d])
    close(also([a, b, d]).step_advantages[2], [-1 / R2] * 3)
