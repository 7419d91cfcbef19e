"""GiGPO/AdaStep anchors: the terminal's real state (cwd, file hashes, deletions) versus the
previous observation's text and the whole history. Expected advantages worked out by hand."""

from __future__ import annotations

import math

import pytest

from termcredit import estimators
from termcredit.estimators.anchors import anchor_keys
from termcredit.records import CommandRecord, FileState, Step, Trajectory, VerifierReport
from termcredit.tracer import AccessSummary


def rec(command: str, *, files=(), deleted=(), cwd="/app") -> CommandRecord:
    return CommandRecord(command=command, stdout="", stderr="", exit_code=0, duration_s=0.0,
                         accesses=AccessSummary(deleted=set(deleted)), files=list(files), cwd=cwd)


ECHO = rec("echo 42 > /app/answer", files=[FileState("/app/answer", "file", 3, "a" * 64)])
RM = rec("rm -rf /app/data", deleted=["/app/data/x"], files=[FileState("/app/data", "missing")])


def traj(reward: float, first: CommandRecord) -> Trajectory:
    # both first commands print nothing and exit 0: the observations are the same text
    steps = [Step(index=0, action=first.command, command=first, anchor_obs="",
                  observation="exit code: 0", action_key=first.command),
             Step(index=1, action="cat /app/answer", command=rec("cat /app/answer"),
                  anchor_obs="exit code: 0", observation="exit code: 0",
                  action_key="cat /app/answer")]
    return Trajectory(task="t", instruction="", agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward))


def group() -> list[Trajectory]:
    return [traj(1, ECHO), traj(0, RM), traj(0, ECHO)]


def close(a, b) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b))


def test_state_anchor_separates_echo_from_rm_where_the_observation_cannot() -> None:
    # γ = 1: returns T1 [1, 1], T2 [0, 0], T3 [0, 0]; A^E = R - 1/3: [2/3, -1/3, -1/3]
    # step 0, one initial state for all: G - 1/3 = [2/3, -1/3, -1/3]
    obs = estimators.build("gigpo", gamma=1.0, anchor="observation")(group())
    # observation: step 1 of all three reads "exit code: 0": [2/3, -1/3, -1/3] again
    assert close(obs.step_advantages[0], [4 / 3, 4 / 3])
    assert close(obs.step_advantages[1], [-2 / 3, -2 / 3])
    assert close(obs.step_advantages[2], [-2 / 3, -2 / 3])
    state = estimators.build("gigpo", gamma=1.0)(group())  # anchor = "state" by default
    # state: step 1 after `echo 42` (T1, T3): [1, 0] - 1/2; after `rm -rf` (T2) alone: 0
    assert close(state.step_advantages[0], [4 / 3, 2 / 3 + 1 / 2])
    assert close(state.step_advantages[1], [-2 / 3, -1 / 3])
    assert close(state.step_advantages[2], [-2 / 3, -1 / 3 - 1 / 2])
    history = estimators.build("gigpo", gamma=1.0, anchor="history")(group())
    assert close(history.step_advantages[0], state.step_advantages[0])  # same split here
    assert state.stats["anchor_groups"] == 3.0 and obs.stats["anchor_groups"] == 2.0
    for out in (obs, state, history):  # every key's count on the same rollouts
        assert (out.stats["anchor_groups/state"], out.stats["anchor_groups/observation"],
                out.stats["anchor_groups/history"]) == (3.0, 2.0, 3.0)


def test_adastep_takes_the_anchor_too() -> None:
    state = estimators.build("adastep", gamma=1.0)(group())
    # every multi-member anchor group has one action key: ineligible, ŵ = 1: GiGPO's numbers
    assert close(state.step_advantages[2], [-2 / 3, -1 / 3 - 1 / 2])


def test_state_key_is_cwd_and_file_state_and_ignores_output_text() -> None:
    a = traj(0, ECHO)
    b = traj(0, rec("echo 42 > /app/answer", cwd="/tmp",
                    files=[FileState("/app/answer", "file", 3, "a" * 64)]))
    c = traj(0, rec("printf '42\\n' > /app/answer",
                    files=[FileState("/app/answer", "file", 3, "a" * 64)]))
    c.steps[0].observation = "something else entirely"
    ka, kb, kc = (anchor_keys(t, "state") for t in (a, b, c))
    assert ka[0] == kb[0] == kc[0]  # the same initial state
    assert ka[1] != kb[1]  # another cwd
    assert ka[1] == kc[1]  # another command and output, the same resulting state
    assert anchor_keys(a, "history")[1] != anchor_keys(c, "history")[1]


def test_anchor_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="anchor must be one of state, observation, history"):
        estimators.build("gigpo", anchor="text")
    with pytest.raises(ValueError, match="similarity grouping compares observation text"):
        estimators.build("adastep", similarity=0.8)


def _keys(*records, invalid_first: bool = False) -> list[str]:
    steps = [Step(index=i, action=r.command, command=r) for i, r in enumerate(records)]
    if invalid_first:
        steps.insert(0, Step(index=0, action="```", invalid=True))
    t = Trajectory(task="t", instruction="", agent="x", steps=steps + [Step(index=9, action="x")])
    return anchor_keys(t, "state")


def test_state_key_details() -> None:
    a = FileState("/app/a", "file", 1, "1" * 64)
    b = FileState("/app/b", "file", 1, "2" * 64)
    # the same files written in another order: the same state
    assert _keys(rec("x", files=[a, b]))[-1] == _keys(rec("y", files=[b, a]))[-1]
    # the same path with other content: another state
    other = FileState("/app/a", "file", 1, "3" * 64)
    assert _keys(rec("x", files=[a]))[-1] != _keys(rec("x", files=[other]))[-1]
    # a deletion seen by the content check or by the tracer is the same deletion
    gone = FileState("/app/a", "missing")
    assert _keys(rec("x", files=[gone]))[-1] == _keys(rec("y", deleted=["/app/a"]))[-1]
    # an invalid action changes nothing, and what comes after it still counts
    keys = _keys(rec("x", files=[a]), invalid_first=True)
    assert keys[0] == keys[1] and keys[2] != keys[1]


def test_unknown_parts_of_the_state_keep_what_was_known() -> None:
    untraced = rec("x")
    untraced.accesses, untraced.cwd = None, None  # not traced, cwd unknown
    known = _keys(rec("cd /tmp", cwd="/tmp"), untraced)
    same = _keys(rec("cd /tmp", cwd="/tmp"), rec("y", cwd="/tmp"))
    assert known[-1] == same[-1]  # an unknown cwd is not a change of cwd
    with pytest.raises(ValueError, match="anchor must be one of state, observation, history, "
                                         "not 'text'"):
        anchor_keys(traj(0, ECHO), "text")
