"""The registered `depgpo` estimator on hand-built traced trajectories; every expected per-token
advantage is worked out by hand below (credits -> f -> token-normalised w -> Â_i · w_t).

Group used throughout (verifier resource /app/answer.txt, the same in every trajectory):
  A (R=1): cat input (its stdout reused by step 1) | echo > stage | cat /etc/hostname
           | sed stage > answer
           loss tokens per step [2, 1, 1, 3]
  B (R=0): cat input | echo > stage | sed stage > answer                  tokens [1, 2, 1]
  C (R=0): `true`, traced, touches nothing: tied credits -> GRPO unit weights      tokens [1]
Credits (β = 0.5): the supporting read is 0.5·1 (stage, 1 hop) + 0.25·1 (answer, 2 hops) = 0.75;
both writes 1; the unrelated read 0.
  A: C = [0.75, 1, 0, 1], min 0, Σ 2.75, K 4 -> f = 4/2.75·C = [12/11, 16/11, 0, 16/11];
     Σn = 7, Σ n·f = (24 + 16 + 0 + 48)/11 = 8 -> w = f·7/8 = [21/22, 14/11, 0, 14/11]
  B: C = [0.75, 1, 1], min 0.75 -> f = 3·[0, .25, .25]/.5 = [0, 1.5, 1.5];
     Σn = 4, Σ n·f = 4.5 -> w = f·4/4.5 = [0, 4/3, 4/3]
Rewards [1, 0, 0]: mean 1/3, population std √2/3 -> Â = [√2, −1/√2, −1/√2].
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import pytest

from termcredit import estimators
from termcredit.records import (CommandRecord, FileState, Step, TokenLayout, Trajectory,
                                VerifierReport)
from termcredit.tracer import AccessSummary

R2 = math.sqrt(2.0)
INSTRUCTION = "Find the code in /app/input.txt and write it to /app/answer.txt."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def step(i: int, command: str, *, read: tuple[str, ...] = (), write: dict[str, str] | None = None,
         stdout: str = "") -> Step:
    """A traced step: the tracer's accesses plus the content check of every written file."""
    write = write or {}
    files = [FileState(path=p, kind="file", size=len(t), sha256=_sha(t), text=True, content=t)
             for p, t in write.items()]
    acc = AccessSummary(read=set(read), written=set(write))
    rec = CommandRecord(command=command, stdout=stdout, stderr="", exit_code=0, duration_s=0.0,
                        seq=i, accesses=acc, files=files)
    return Step(index=i, action=command, command=rec)


def layout(n_tokens: list[int]) -> TokenLayout:
    """[prompt] then per step its n sampled tokens and one observation token (mask 0)."""
    ids, mask, spans = [0], [0], []
    for n in n_tokens:
        spans.append([len(ids), len(ids) + n])
        ids += [1] * n + [2]
        mask += [1] * n + [0]
    return TokenLayout(token_ids=ids, loss_mask=mask, logprobs=[0.0] * len(ids), step_spans=spans)


def traj(reward: float, steps: list[Step], n_tokens: list[int]) -> Trajectory:
    return Trajectory(task="t", instruction=INSTRUCTION, agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward, resources=["/app/answer.txt"]),
                      tokens=layout(n_tokens))


READ = ("cat /app/input.txt", ("/app/input.txt",), "secret_code=90417\n")
STAGE = ("echo 90417 > /tmp/stage.txt", {"/tmp/stage.txt": "90417\n"})
ANSWER = ("sed 's/^/answer: /' /tmp/stage.txt > /app/answer.txt", ("/tmp/stage.txt",),
          {"/app/answer.txt": "answer: 90417\n"})


def traj_a(reward: float = 1.0) -> Trajectory:
    return traj(reward, [step(0, READ[0], read=READ[1], stdout=READ[2]),
                         step(1, STAGE[0], write=STAGE[1]),
                         step(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n"),
                         step(3, ANSWER[0], read=ANSWER[1], write=ANSWER[2])], [2, 1, 1, 3])


def traj_b(reward: float = 0.0) -> Trajectory:
    return traj(reward, [step(0, READ[0], read=READ[1], stdout=READ[2]),
                         step(1, STAGE[0], write=STAGE[1]),
                         step(2, ANSWER[0], read=ANSWER[1], write=ANSWER[2])], [1, 2, 1])


def traj_c(reward: float = 0.0) -> Trajectory:
    return traj(reward, [step(0, "true")], [1])


def spread(per_step: list[float], n_tokens: list[int]) -> list[float]:
    """Per-token advantages in `layout`'s order: 0 on the prompt and observation tokens."""
    out = [0.0]
    for v, n in zip(per_step, n_tokens):
        out += [v] * n + [0.0]
    return out


def close(a: list[float], b: list[float], tol: float = 1e-5) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b))


def test_depgpo_default_per_token_advantages() -> None:
    out = estimators.build("depgpo")([traj_a(), traj_b(), traj_c()])
    a_a, a_b = R2, -1 / R2
    assert close(out.step_advantages[0], [a_a * 21 / 22, a_a * 14 / 11, 0.0, a_a * 14 / 11])
    assert close(out.advantages[0], spread([a_a * 21 / 22, a_a * 14 / 11, 0.0, a_a * 14 / 11],
                                           [2, 1, 1, 3]))
    assert close(out.advantages[1], spread([0.0, a_b * 4 / 3, a_b * 4 / 3], [1, 2, 1]))
    assert close(out.advantages[2], spread([-1 / R2], [1]))  # unit-weight fallback
    # the token-weighted mean of A's advantage is its Â: (2·21/22 + 14/11 + 0 + 3·14/11)/7 = 1
    assert sum(out.advantages[0]) / 7 == pytest.approx(R2, abs=1e-5)
    assert out.stats["fallback/none"] == pytest.approx(2 / 3)
    assert out.stats["fallback/tied-credits"] == pytest.approx(1 / 3)
    assert out.stats["fallback_rate"] == pytest.approx(1 / 3)
    # zero credit: A's hostname read and C's `true`, of 4 + 3 + 1 traced steps
    assert out.stats["zero_credit_step_frac"] == pytest.approx(2 / 8)
    assert out.stats["zero_advantage_group"] == 0.0


def test_depgpo_std_false_is_dr_grpo_outcome() -> None:
    # Â = R − mean = [2/3, −1/3, −1/3], same weights
    out = estimators.build("depgpo", std=False)([traj_a(), traj_b(), traj_c()])
    assert close(out.step_advantages[0], [2 / 3 * 21 / 22, 2 / 3 * 14 / 11, 0.0, 2 / 3 * 14 / 11])
    assert close(out.step_advantages[1], [0.0, -1 / 3 * 4 / 3, -1 / 3 * 4 / 3])
    assert close(out.step_advantages[2], [-1 / 3])


def test_depgpo_eps_is_added_to_the_std() -> None:
    # rewards [1, 0]: population std 0.5, eps 1 -> Â = ±0.5/1.5 = ±1/3
    out = estimators.build("depgpo", eps=1.0)([traj_a(), traj_b()])
    assert close(out.step_advantages[0], [1 / 3 * 21 / 22, 1 / 3 * 14 / 11, 0.0, 1 / 3 * 14 / 11])
    assert close(out.step_advantages[1], [0.0, -1 / 3 * 4 / 3, -1 / 3 * 4 / 3])


def test_depgpo_beta_decays_supporting_read_credit() -> None:
    # β = 0.2: read credit 0.2 + 0.04 = 0.24; A: C = [0.24, 1, 0, 1], Σ 2.24 ->
    # f = 4/2.24·C = [3/7, 25/14, 0, 25/14]; Σ n·f = (6/7 + 25/14 + 75/14) = 8 -> w = f·7/8
    out = estimators.build("depgpo", beta=0.2)([traj_a(), traj_b(), traj_c()])
    w = [3 / 8, 25 / 16, 0.0, 25 / 16]
    assert close(out.step_advantages[0], [R2 * x for x in w])


def test_depgpo_without_min_subtraction() -> None:
    # B: f = 3·C/ΣC = 3/2.75·[0.75, 1, 1] = [9/11, 12/11, 12/11]; Σ n·f = 45/11, Σn = 4
    # -> w = f·44/45 = [0.8, 16/15, 16/15]
    out = estimators.build("depgpo", subtract_min=False)([traj_a(), traj_b(), traj_c()])
    assert close(out.step_advantages[1], [-0.8 / R2, -16 / 15 / R2, -16 / 15 / R2])
    # A: f = 4/2.75·[0.75, 1, 0, 1] as with the min (its min is 0)
    assert close(out.step_advantages[0], [R2 * 21 / 22, R2 * 14 / 11, 0.0, R2 * 14 / 11])


def traj_b_done(reward: float = 1.0) -> Trajectory:
    """B and then the `done` action (no command ran: an untraced step), tokens [1, 2, 1, 2]."""
    b = traj_b(reward)
    return traj(reward, [*b.steps, Step(index=3, action="done")], [1, 2, 1, 2])


@pytest.mark.parametrize("kw,weights", [
    # f = [0, 1.5, 1.5, u]; Σn = 6, Σ n·f = 4.5 + 2u -> w = f·6/(4.5 + 2u)
    ({}, [0.0, 18 / 13, 18 / 13, 12 / 13]),  # u = 1 (the default): scale 6/6.5
    ({"untraced_weight": 0.5}, [0.0, 18 / 11, 18 / 11, 6 / 11]),  # scale 6/5.5
    ({"untraced_weight": 0.0}, [0.0, 2.0, 2.0, 0.0]),  # scale 6/4.5: `done` gets nothing
])
def test_depgpo_untraced_weight(kw: dict[str, float], weights: list[float]) -> None:
    # rewards [1, 0]: Dr.GRPO Â = ±0.5; C falls back (tied credits) to unit weights
    est = estimators.build("depgpo", std=False, **kw)
    assert est.cfg.untraced_weight == kw.get("untraced_weight", 1.0)
    out = est([traj_b_done(1.0), traj_c(0.0)])
    assert close(out.advantages[0], spread([0.5 * w for w in weights], [1, 2, 1, 2]))
    assert close(out.advantages[1], spread([-0.5], [1]))
    assert sum(out.advantages[0]) / 6 == pytest.approx(0.5)  # token-weighted mean is Â


def _rewrite(read_first: bool) -> Trajectory:
    """Step 0 writes answer 'a\\nb\\n'; step 1 rewrites it to 'a\\nB\\n' (after reading it, or
    blind); step 2 reads an unrelated file. Rewards are set by the caller's group."""
    command = ("sed -i s/b/B/ /app/answer.txt" if read_first
               else "printf 'a\\nB\\n' > /app/answer.txt")
    edit = step(1, command, read=("/app/answer.txt",) if read_first else (),
                write={"/app/answer.txt": "a\nB\n"})
    return traj(1.0, [step(0, "printf 'a\\nb\\n' > /app/answer.txt",
                           write={"/app/answer.txt": "a\nb\n"}), edit,
                      step(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n")],
                [1, 1, 1])


@pytest.mark.parametrize("read_first,mode,weights", [
    # the rewrite keeps line 1's owner: step 0 keeps 1 of its 2 lines -> C = [0.5, 1, 0],
    # f = 3/1.5·C = [1, 2, 0]; otherwise step 1 owns both lines -> C = [0, 1, 0], f = [0, 3, 0]
    (True, "if-read", [1.0, 2.0, 0.0]),
    (True, "never", [0.0, 3.0, 0.0]),
    (False, "if-read", [0.0, 3.0, 0.0]),
    (False, "always", [1.0, 2.0, 0.0]),
])
def test_depgpo_diff_rewrites(read_first: bool, mode: str, weights: list[float]) -> None:
    # one token per step, so w = f; rewards [1, 0]: Â = ±1 (population std 0.5)
    out = estimators.build("depgpo", diff_rewrites=mode)([_rewrite(read_first), traj_c(0.0)])
    assert close(out.advantages[0], spread(weights, [1, 1, 1]))
    assert close(out.advantages[1], spread([-1.0], [1]))


def test_depgpo_all_equal_rewards_give_zero() -> None:
    out = estimators.build("depgpo")([traj_a(1.0), traj_b(1.0)])
    assert out.stats["zero_advantage_group"] == 1.0
    assert all(x == 0.0 for adv in out.advantages for x in adv)


def test_depgpo_plus_opd_sums_per_token() -> None:
    a, b = traj_a(), traj_b()
    # OPD on A's first step (tokens 1, 2): −(old − teacher) = −(−1 − (−0.5)) = 0.5; 0 elsewhere
    a.tokens.logprobs[1], a.tokens.teacher_logprobs = -1.0, [0.0] * len(a.tokens.token_ids)
    a.tokens.teacher_logprobs[1] = -0.5
    out = estimators.build("depgpo+opd", std=False)([a, b])
    # rewards [1, 0], Dr.GRPO Â = ±0.5; B has no teacher log-probs: OPD adds 0 there
    expect_a = spread([0.5 * 21 / 22, 0.5 * 14 / 11, 0.0, 0.5 * 14 / 11], [2, 1, 1, 3])
    expect_a[1] += 0.5
    assert close(out.advantages[0], expect_a)
    assert close(out.advantages[1], spread([0.0, -0.5 * 4 / 3, -0.5 * 4 / 3], [1, 2, 1]))
    assert out.stats["opd/missing_teacher"] == 0.5 and out.stats["depgpo/fallback_rate"] == 0.0


def test_depgpo_stats_edges() -> None:
    empty = estimators.build("depgpo")([])
    assert empty.advantages == [] and empty.stats == {
        "fallback_rate": 0.0, "zero_credit_step_frac": 0.0, "zero_advantage_group": 1.0}
    # Dr.GRPO Â = ±0.5: not a zero-advantage group although every |Â| < 1
    half = estimators.build("depgpo", std=False)([traj_a(1.0), traj_b(0.0)])
    assert half.stats["zero_advantage_group"] == 0.0
    # Â = ±1e-12 exactly (rewards 0 and 2e-12): at the tolerance, not under it
    tiny = estimators.build("depgpo", std=False)([traj_c(0.0), traj_c(2e-12)])
    assert tiny.stats["zero_advantage_group"] == 0.0


def test_depgpo_negative_uniform_gives_failed_trajectories_unit_weights() -> None:
    # Â = [√2, −1/√2, −1/√2]: A (positive) keeps its graph weights [21/22, 14/11, 0, 14/11];
    # B's graph weights [0, 4/3, 4/3] give way to GRPO's [1, 1, 1]
    out = estimators.build("depgpo", negative="uniform")([traj_a(), traj_b(), traj_c()])
    assert close(out.step_advantages[0], [R2 * 21 / 22, R2 * 14 / 11, 0.0, R2 * 14 / 11])
    assert close(out.step_advantages[1], [-1 / R2] * 3)
    assert close(out.advantages[1], spread([-1 / R2] * 3, [1, 2, 1]))
    assert close(out.step_advantages[2], [-1 / R2])


def _failed_b(**ended: dict[str, object]) -> Trajectory:
    """B with some steps' commands ending otherwise (``ended[str(index)]``: CommandRecord
    fields), e.g. a garbled command that exited 2."""
    b = traj_b(0.0)
    steps = [Step(index=s.index, action=s.action,
                  command=dataclasses.replace(s.command, **ended.get(str(s.index), {})))
             for s in b.steps]
    return traj(0.0, steps, [1, 2, 1])


def test_depgpo_negative_errors_blames_the_commands_that_failed() -> None:
    # group [A, B', C], Â = [√2, −1/√2, −1/√2]. B': step 0 exited 2, step 1 timed out (its
    # exit status 0 notwithstanding), tokens [1, 2, 1]: f = [1, 1, 0], Σ n·f = 3, Σn = 4 ->
    # w = [4/3, 4/3, 0]. C's `true` exited 0: nothing failed, so its graph weights (tied
    # credits: unit) stay; A is positive and keeps its graph weights.
    failed = _failed_b(**{"0": {"exit_code": 2}, "1": {"timed_out": True}})
    out = estimators.build("depgpo", negative="errors")([traj_a(), failed, traj_c()])
    assert close(out.step_advantages[0], [R2 * 21 / 22, R2 * 14 / 11, 0.0, R2 * 14 / 11])
    assert close(out.step_advantages[1], [-4 / 3 / R2, -4 / 3 / R2, 0.0])
    assert close(out.advantages[1], spread([-4 / 3 / R2, -4 / 3 / R2, 0.0], [1, 2, 1]))
    assert sum(out.advantages[1]) / 4 == pytest.approx(-1 / R2, abs=1e-5)  # mean is Â
    assert close(out.step_advantages[2], [-1 / R2])


def test_depgpo_negative_errors_without_a_failed_command_keeps_graph_weights() -> None:
    # B's commands all exited 0: its graph weights [0, 4/3, 4/3] (module docstring)
    out = estimators.build("depgpo", negative="errors")([traj_a(), traj_b(), traj_c()])
    assert close(out.step_advantages[1], [0.0, -4 / 3 / R2, -4 / 3 / R2])


def test_depgpo_negative_must_be_a_known_mode() -> None:
    with pytest.raises(ValueError, match="negative must be one of 'graph', 'uniform', 'errors'"):
        estimators.build("depgpo", negative="blame")


def test_depgpo_omission_places_a_faultless_failures_blame() -> None:
    # group [A, B+done (R=0), C], Â = [√2, −1/√2, −1/√2]; B+done's commands all exited 0 and
    # destroyed nothing: under negative = "faults" nothing is at fault, an omission.
    # "done": blame on its `done` alone: flags [0, 0, 0, 1], tokens [1, 2, 1, 2], Σn 6,
    #   Σ n·f 2 -> w = [0, 0, 0, 3]; "unit": GRPO's [1, 1, 1, 1]; "graph" (the default):
    #   its graph weights [0, 18/13, 18/13, 12/13] (test_depgpo_untraced_weight).
    # C (`true`, no `done`) under "done" gets unit weights; A is positive, unchanged.
    group = [traj_a(), traj_b_done(0.0), traj_c()]
    want = {"done": [0.0, 0.0, 0.0, 3.0], "unit": [1.0] * 4,
            "graph": [0.0, 18 / 13, 18 / 13, 12 / 13]}
    for mode, w in want.items():
        out = estimators.build("depgpo", negative="faults", omission=mode)(group)
        assert close(out.step_advantages[1], [-x / R2 for x in w]), mode
        assert close(out.step_advantages[0], [R2 * 21 / 22, R2 * 14 / 11, 0.0, R2 * 14 / 11])
    out = estimators.build("depgpo", negative="faults", omission="done")(group)
    assert close(out.step_advantages[2], [-1 / R2])
    # a failure with a fault keeps its blame on the fault whatever ``omission`` says
    failed = _failed_b(**{"2": {"exit_code": 1}})
    out = estimators.build("depgpo", negative="errors", omission="done")([traj_a(), failed,
                                                                          traj_c()])
    assert close(out.step_advantages[1], [0.0, 0.0, -4 / R2])
    with pytest.raises(ValueError, match="depgpo: omission must be one of 'graph', 'unit'"):
        estimators.build("depgpo", omission="none")
