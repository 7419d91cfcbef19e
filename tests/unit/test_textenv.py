"""The text environment (harness/textenv.py) on a fake episode layer: a real ``AgentEnv`` (its
step log on disk) over a sandbox that only records commands, inside an episode stand-in that
records how the text environment ends it. The real-Docker run is
tests/integration/test_textenv_docker.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from termcredit.harness.agents import AgentEnv
from termcredit.harness.textenv import Finished, TextEnv, TextTurns
from termcredit.records import CommandRecord, Trajectory, TrialResult
from termcredit.sandbox import ShellError

INSTRUCTION = "Write 4 to /app/answer.txt."


class _Sandbox:
    """Runs nothing: each command's stdout is ``ran N``; ``fail`` makes the next run raise."""

    def __init__(self):
        self.ran: list[str] = []
        self.shell = SimpleNamespace(session_trace=[""], integrity=[], lost=None)
        self.added_paths = lambda: set()
        self.fail: Exception | None = None

    def run(self, command, timeout, output_cap):
        if self.fail is not None:
            raise self.fail
        self.ran.append(command)
        return CommandRecord(command=command, stdout=f"ran {len(self.ran)}\n", stderr="",
                             exit_code=0, duration_s=0.0)


class _Episode:
    """The part of ``harness.episode.Episode`` that TextEnv uses, recording its calls."""

    def __init__(self, trial_dir: Path, *, starts: bool = True):
        self.trial_dir, self.starts = trial_dir, starts
        self.traj = Trajectory(task="t", instruction=INSTRUCTION, agent="model")
        self.sandbox = _Sandbox()
        self.env: AgentEnv | None = None
        self.calls: list[tuple[Any, ...]] = []

    @property
    def done(self) -> bool:
        return bool(self.traj.termination)

    def start(self) -> bool:
        if not self.starts:
            self.traj.termination = "infra_error"
            return False
        task = SimpleNamespace(agent_timeout_sec=60.0, instruction=INSTRUCTION, storage_mb=1)
        self.env = AgentEnv(self.sandbox, task, self.traj, self.trial_dir)
        return True

    def end(self, termination: str, **info: Any) -> None:
        self.calls.append(("end", termination, info))
        self.traj.termination = self.traj.termination or termination

    def fail(self, exc: BaseException, where: str, *, by_agent: bool = False) -> None:
        self.calls.append(("fail", str(exc), where, by_agent))
        self.traj.termination = self.traj.termination or "infra_error"

    def finish(self) -> TrialResult:
        self.calls.append(("finish",))
        return TrialResult(task="t", reward=1.0, trial_dir=str(self.trial_dir),
                           n_steps=len(self.traj.steps))

    def abandon(self) -> None:
        self.calls.append(("abandon",))


def _logged(trial_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (trial_dir / "steps.jsonl").read_text().splitlines()]


def test_every_kind_of_reply_is_one_recorded_step(tmp_path):
    ep = _Episode(tmp_path)
    env = TextEnv(ep, obs_chars=100)
    assert env.init() == INSTRUCTION and not env.done
    assert env.act("```bash\ncd /app\n```", finished=True) == ("exit code: 0\nstdout:\nran 1",
                                                               False)
    assert env.act("just thinking", finished=False) == ("exit code: 0\nstdout:\nran 2", False)
    assert env.act("ls \x00 -la", finished=True) == (
        "error: the command contains a NUL byte", False)
    assert env.act("```bash\n\n```", finished=True) == ("error: the code block is empty", False)
    assert env.act("DONE", finished=True) == ("", True)
    assert env.done and ep.calls == [("end", "done", {})]
    with pytest.raises(RuntimeError, match="act on an episode that is over"):
        env.act("ls")
    assert ep.sandbox.ran == ["cd /app", "just thinking"]  # a bare line is a command

    steps = env.trajectory.steps
    assert [s.index for s in steps] == [0, 1, 2, 3, 4]
    assert [(s.command is not None, s.invalid) for s in steps] == [
        (True, False), (True, False), (False, True), (False, True), (False, False)]
    assert [s.action_key for s in steps] == [
        "cd /app", "just thinking", "<invalid>", "<invalid>", "<done>"]
    # each step's anchor is the observation it answered: the instruction, then the last one
    assert [s.anchor_obs for s in steps] == [
        INSTRUCTION, "exit code: 0\nstdout:\nran 1", "exit code: 0\nstdout:\nran 2",
        "error: the command contains a NUL byte", "error: the code block is empty"]
    assert [s.info for s in steps] == [{"finished": True}, {"finished": False},
                                       {"finished": True}, {"finished": True},
                                       {"finished": True}]
    # all five on disk as they happened, invalid and done included
    logged = _logged(tmp_path)
    assert [(d["index"], d["action"], d["invalid"], d["command"] is None) for d in logged] == [
        (0, "```bash\ncd /app\n```", False, False), (1, "just thinking", False, False),
        (2, "ls \x00 -la", True, True), (3, "```bash\n\n```", True, True), (4, "DONE", False, True)]
    assert logged[2]["observation"] == "error: the command contains a NUL byte"
    assert logged[4]["action_key"] == "<done>"

    fin = env.close(weigh=lambda traj: [s.index for s in traj.steps])
    assert isinstance(fin, Finished)
    assert (fin.reward, fin.trajectory, fin.weights, fin.infra) == (1.0, ep.traj,
                                                                    [0, 1, 2, 3, 4], False)
    assert fin.result.n_steps == 5 and ep.calls[-1] == ("finish",)
    assert env.close().weights is None  # no weigh: nothing made of it


def test_observation_is_clipped_at_obs_chars(tmp_path):
    ep = _Episode(tmp_path)
    env = TextEnv(ep, obs_chars=30)
    env.init()
    ep.sandbox.run = lambda command, timeout, output_cap: CommandRecord(
        command=command, stdout="a" * 50, stderr="", exit_code=3, duration_s=0.0)
    obs, done = env.act("cat big")
    # 30 chars kept: the first 20, a marker naming the 20 cut, the last 10
    assert obs == ("exit code: 3\nstdout:\n" + "a" * 20 + "\n[... 20 characters cut ...]\n"
                   + "a" * 10)
    assert not done


def test_agent_time_used_up_keeps_the_reply_as_a_step(tmp_path):
    ep = _Episode(tmp_path)
    env = TextEnv(ep)
    env.init()
    assert ep.env is not None
    ep.env.deadline = time.monotonic() - 1  # the agent's 60 s are over
    obs, done = env.act("echo 4 > /app/answer.txt", finished=True)
    assert (obs, done) == ("error: agent time of 60s used up", True)
    assert ep.calls == [("end", "agent_timeout", {})] and ep.sandbox.ran == []
    (step,) = env.trajectory.steps
    assert (step.command, step.invalid, step.action_key, step.anchor_obs, step.info) == (
        None, False, "echo 4 > /app/answer.txt", INSTRUCTION, {"finished": True})
    assert [d["action"] for d in _logged(tmp_path)] == ["echo 4 > /app/answer.txt"]


def test_a_shell_the_agent_broke_ends_the_episode_with_the_step_kept(tmp_path):
    ep = _Episode(tmp_path)
    env = TextEnv(ep)
    env.init()
    ep.sandbox.shell.lost = "bash is gone and could not be started again"
    obs, done = env.act("rm /bin/bash")
    assert (obs, done) == ("error: bash is gone and could not be started again", True)
    assert ep.calls == [("end", "shell_lost",
                         {"shell_lost": "bash is gone and could not be started again"})]
    (step,) = env.trajectory.steps
    assert step.command is not None and step.command.command == "rm /bin/bash"
    assert step.observation == obs and len(_logged(tmp_path)) == 1


def test_a_sandbox_failure_is_the_episodes_failure_not_a_crash(tmp_path):
    ep = _Episode(tmp_path)
    env = TextEnv(ep)
    env.init()
    env.act("cd /app")
    ep.sandbox.fail = ShellError("the container is gone")
    obs, done = env.act("ls")
    assert (obs, done) == ("error: the container is gone", True)
    assert ep.calls == [("fail", "the container is gone", "step 1", True)]
    assert [(s.index, s.command is None, s.observation) for s in env.trajectory.steps] == [
        (0, False, "exit code: 0\nstdout:\nran 1"), (1, True, "error: the container is gone")]
    assert [d["index"] for d in _logged(tmp_path)] == [0, 1]


def test_a_sandbox_that_never_started(tmp_path):
    ep = _Episode(tmp_path, starts=False)
    env = TextEnv(ep)
    assert env.init() == INSTRUCTION and env.done
    with pytest.raises(RuntimeError, match="never started"):
        env.act("ls")
    env.end("max_turns")  # the caller's limits: no-op on an episode that is over
    assert env.trajectory.termination == "infra_error"
    env.abandon()
    assert ep.calls == [("end", "max_turns", {}), ("abandon",)]


def test_turns_on_an_agent_env_raise_what_the_step_raised(tmp_path):
    """The `termcredit run` side (the openai agent): the trial, not TextTurns, decides."""
    ep = _Episode(tmp_path)
    ep.start()
    assert ep.env is not None
    turns = TextTurns(ep.env, obs_chars=100)
    step, done = turns.act("pwd", usage={"total_tokens": 3})
    assert (step.observation, step.anchor_obs, step.info, done) == (
        "exit code: 0\nstdout:\nran 1", INSTRUCTION, {"usage": {"total_tokens": 3}}, False)
    ep.sandbox.fail = ShellError("the container is gone")
    with pytest.raises(ShellError):
        turns.act("ls")
    assert len(ep.traj.steps) == 1 and ep.calls == []  # nothing recorded, nothing ended
    step, done = turns.act("done")
    assert (step.index, step.anchor_obs, done) == (1, "exit code: 0\nstdout:\nran 1", True)


def test_an_engine_adapter_needs_no_torch_and_no_trainer():
    """What an external engine's adapter imports (the text environment, DepGPO's weights)
    loads neither torch nor termcredit.trainer; nor does the openai agent (termcredit.llm),
    which speaks the same protocol."""
    code = ("import sys, termcredit.harness.textenv, termcredit.estimators.depgpo, "
            "termcredit.llm\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or "
            "m.startswith('termcredit.trainer')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
