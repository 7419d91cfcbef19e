"""`depgpo[negative=destroyers]` on hand-built traced trajectories: a failed episode's negative
advantage goes to the steps that destroyed what a later step needed, token-normalised.

Group [A (R=1), F (R=0), C (R=0)] as in test_estimators_by_hand_depgpo.py: Â = [√2, −1/√2,
−1/√2]; A is positive (its graph weights [21/22, 14/11, 0, 14/11]) and C (`true`) destroyed
nothing (graph weights, here GRPO's unit weight). Only F changes from test to test.
"""

from __future__ import annotations

import hashlib

from test_estimators_by_hand_depgpo import R2, close, spread, traj, traj_a, traj_b, traj_c

from termcredit import estimators
from termcredit.estimators.spec import parse_spec
from termcredit.records import CommandRecord, FileState, Step, Trajectory
from termcredit.tracer import AccessSummary

A_POSITIVE = [R2 * 21 / 22, R2 * 14 / 11, 0.0, R2 * 14 / 11]


def step(i: int, command: str, *, read: tuple[str, ...] = (), write: dict[str, str] | None = None,
         deleted: tuple[str, ...] = (), probed: tuple[str, ...] = (), exit_code: int = 0) -> Step:
    """A traced step: the tracer's accesses (with deletions and failed look-ups) plus the
    content check of every written file."""
    write = write or {}
    files = [FileState(path=p, kind="file", size=len(t), text=True, content=t,
                       sha256=hashlib.sha256(t.encode()).hexdigest()) for p, t in write.items()]
    acc = AccessSummary(read=set(read), written=set(write), deleted=set(deleted),
                        probed=set(probed))
    rec = CommandRecord(command=command, stdout="", stderr="", exit_code=exit_code,
                        duration_s=0.0, seq=i, accesses=acc, files=files)
    return Step(index=i, action=command, command=rec)


STAGE = "/tmp/stage.txt"
ANSWER = "/app/answer.txt"


def one_destroyer() -> Trajectory:
    """cat input | echo > stage | rm stage (the destroyer) | sed stage > answer (exits 2: stage
    is missing), tokens [1, 2, 1, 3]."""
    return traj(0.0, [step(0, "cat /app/input.txt", read=("/app/input.txt",)),
                      step(1, "echo 90417 > /tmp/stage.txt", write={STAGE: "90417\n"}),
                      step(2, "rm -f /tmp/stage.txt", deleted=(STAGE,)),
                      step(3, "sed 's/^/answer: /' /tmp/stage.txt > /app/answer.txt",
                           probed=(STAGE,), write={ANSWER: ""}, exit_code=2)], [1, 2, 1, 3])


def two_destroyers() -> Trajectory:
    """echo > stage | echo > other | rm other (destroyer: 4 looks for it) | echo 0 > stage
    (destroyer: overwrites 0's stage before anything used it; 4 reads it) | cat other stage >
    answer (exits 1), tokens [1, 1, 2, 3, 1]."""
    return traj(0.0, [step(0, "echo 90417 > /tmp/stage.txt", write={STAGE: "90417\n"}),
                      step(1, "echo 1 > /tmp/other.txt", write={"/tmp/other.txt": "1\n"}),
                      step(2, "rm -f /tmp/other.txt", deleted=("/tmp/other.txt",)),
                      step(3, "echo 0 > /tmp/stage.txt", write={STAGE: "0\n"}),
                      step(4, "cat /tmp/other.txt /tmp/stage.txt > /app/answer.txt",
                           read=(STAGE,), probed=("/tmp/other.txt",), write={ANSWER: "0\n"},
                           exit_code=1)], [1, 1, 2, 3, 1])


def blame(failed: Trajectory) -> tuple[list[float], list[float]]:
    out = estimators.build("depgpo", negative="destroyers")([traj_a(), failed, traj_c()])
    assert close(out.step_advantages[0], A_POSITIVE)  # a success keeps its graph weights
    assert close(out.step_advantages[2], [-1 / R2])  # `true` destroyed nothing: graph (unit)
    return out.step_advantages[1], out.advantages[1]


def test_destroyers_blames_the_step_that_deleted_what_a_later_step_needed() -> None:
    # f = [0, 0, 1, 0], Σn = 7, Σ n·f = 1 -> w = [0, 0, 7, 0]; the step that errored (3) and
    # the innocent ones get nothing
    per_step, per_token = blame(one_destroyer())
    # (tolerance 1e-4: the group std's eps, 1e-6, shifts Â by ~1e-6, times w = 7)
    assert close(per_step, [0.0, 0.0, -7 / R2, 0.0], tol=1e-4)
    assert close(per_token, spread([0.0, 0.0, -7 / R2, 0.0], [1, 2, 1, 3]), tol=1e-4)
    assert abs(sum(per_token) / 7 + 1 / R2) < 1e-5  # the token mean stays Â


def test_destroyers_without_one_keeps_graph_weights() -> None:
    # B destroyed nothing: its graph weights [0, 4/3, 4/3] (test_estimators_by_hand_depgpo)
    per_step, _ = blame(traj_b())
    assert close(per_step, [0.0, -4 / 3 / R2, -4 / 3 / R2])


def test_destroyers_shares_the_blame_between_two() -> None:
    # f = [0, 0, 1, 1, 0], Σn = 8, Σ n·f = 2 + 3 = 5 -> w = 8/5 on steps 2 and 3
    per_step, per_token = blame(two_destroyers())
    w = -8 / 5 / R2
    assert close(per_step, [0.0, 0.0, w, w, 0.0])
    assert close(per_token, spread([0.0, 0.0, w, w, 0.0], [1, 1, 2, 3, 1]))


def test_destroyers_leaves_a_successful_destroyer_its_graph_credit() -> None:
    # the same steps in a solved episode (R=1, the others 0): the mode only spreads blame, so
    # the result equals the default's
    group = [traj(1.0, one_destroyer().steps, [1, 2, 1, 3]), traj_b(), traj_c()]
    ours = estimators.build("depgpo", negative="destroyers")(group).step_advantages[0]
    assert close(ours, estimators.build("depgpo")(group).step_advantages[0])


def test_the_spec_parser_takes_destroyers() -> None:
    assert parse_spec("depgpo[negative=destroyers]") == ("depgpo", {"negative": "destroyers"})
    assert estimators.build("depgpo", negative="destroyers").negative == "destroyers"


def test_faults_blames_the_destroyer_and_the_step_that_failed() -> None:
    # one_destroyer: step 2 deleted the stage, step 3 errored: f = [0, 0, 1, 1], Σn = 7,
    # Σ n·f = 1 + 3 = 4 -> w = 7/4 on both
    out = estimators.build("depgpo", negative="faults")([traj_a(), one_destroyer(), traj_c()])
    w = -7 / 4 / R2
    assert close(out.step_advantages[1], [0.0, 0.0, w, w], tol=1e-4)
    # B has neither (nothing failed, nothing destroyed): its graph weights
    out = estimators.build("depgpo", negative="faults")([traj_a(), traj_b(), traj_c()])
    assert close(out.step_advantages[1], [0.0, -4 / 3 / R2, -4 / 3 / R2])
