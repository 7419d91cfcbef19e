"""The one replay agent (harness.agents.CommandsAgent): `replay:FILE`, refine's replays and the
credit audit's are it; with ``solution`` it copies solution/ and exports [solution.env] in
every command, quoted by ``shlex.quote`` (checked in real bash against the quoting it
replaced)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from termcredit.bench.credit_audit import CommandsAgent as AuditAgent
from termcredit.harness.agents import AgentEnv, CommandsAgent, ReplayAgent, put_solution
from termcredit.records import CommandRecord, Trajectory
from termcredit.refine.run import StepsAgent


class FakeSandbox:
    def __init__(self) -> None:
        self.ran: list[str] = []
        self.shell = SimpleNamespace(session_trace=[], integrity=[], lost=None)
        self.added_paths: set[str] = set()

    def run(self, command: str, timeout: float, output_cap: int) -> CommandRecord:
        self.ran.append(command)
        return CommandRecord(command=command, stdout="", stderr="", exit_code=0,
                             duration_s=0.0)

    def put_dir(self, src: Path, dest: str) -> None:
        self.ran.append(f"<put {src.name} {dest}>")

    def writable_bytes(self) -> int:
        return 0


def fake_env(tmp_path: Path, solution_env: dict[str, str] | None = None,
             has_solution: bool = True) -> tuple[AgentEnv, FakeSandbox]:
    task = SimpleNamespace(agent_timeout_sec=60.0, instruction="x", storage_mb=100,
                           solution_dir=tmp_path / "solution", has_solution=has_solution,
                           solution_env=solution_env or {})
    sandbox = FakeSandbox()
    env = AgentEnv(sandbox, task, Trajectory(task="t", instruction="x", agent="a"), tmp_path)
    return env, sandbox


def test_one_agent_class_under_three_names(tmp_path):
    script = tmp_path / "cmds.txt"
    script.write_text("ls\n")
    assert AuditAgent is CommandsAgent
    assert isinstance(ReplayAgent(script), CommandsAgent) and issubclass(StepsAgent, CommandsAgent)
    assert ReplayAgent(script).name == f"replay:{script}"
    assert StepsAgent(["ls"]).name == "refine-replay" == StepsAgent.name
    assert StepsAgent(["ls"], name="noisy-demo").name == "noisy-demo"
    assert CommandsAgent(["ls"], name="audit").name == "audit"


def test_commands_run_one_step_each_multi_line_whole_nul_recorded(tmp_path):
    env, sandbox = fake_env(tmp_path)
    CommandsAgent(["cd /app", "if true; then\n  echo y\nfi", "echo a\x00b"]).run(env)
    assert sandbox.ran == ["cd /app", "if true; then\n  echo y\nfi"]
    steps = env.trajectory.steps
    assert [(s.index, s.invalid) for s in steps] == [(0, False), (1, False), (2, True)]
    assert steps[2].action == "echo a\x00b" and steps[2].command is None


def test_solution_copies_the_folder_and_exports_in_every_command(tmp_path):
    env, sandbox = fake_env(tmp_path, {"A": "1", "B": "it's"})
    CommandsAgent(["echo $A", "echo $B"], solution=True).run(env)
    exports = "export A=1; export B='it'\"'\"'s'; "
    assert sandbox.ran == ["<put solution /solution>", exports + "echo $A", exports + "echo $B"]
    env, sandbox = fake_env(tmp_path, {"A": "1"}, has_solution=False)  # nothing to copy
    CommandsAgent(["echo $A"], solution=True).run(env)
    assert sandbox.ran == ["echo $A"]


def _old_quote(value: str) -> str:
    """The quoting shlex.quote replaced (always single quotes)."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


@pytest.mark.parametrize("value", ["", "plain", "a b", "it's", "'", '"', "$HOME `id` \\",
                                   "new\nline", "ünïcödé", "-n", "*", "a\tb", "caf\udce9"])
def test_exports_give_bash_the_value_as_the_old_quoting_did(tmp_path, value):
    env, _ = fake_env(tmp_path, {"V": value})
    exports = put_solution(env)
    seen = []
    for prefix in (exports, f"export V={_old_quote(value)}; "):
        script = (prefix + 'printf %s "$V"').encode("utf-8", "surrogateescape")
        out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
        seen.append(out)
    assert seen[0] == seen[1] == value.encode("utf-8", "surrogateescape")
