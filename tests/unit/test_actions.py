from types import SimpleNamespace

import pytest

from termcredit.harness.agents import (AgentEnv, InvalidAction, OracleAgent, ReplayAgent,
                                      make_agent_factory)
from termcredit.records import CommandRecord, Trajectory
from termcredit.trainer.actions import format_observation, invalid_observation, parse_action


@pytest.mark.parametrize(("text", "kind", "command"), [
    ("ls -la", "command", "ls -la"),
    ("$ cat /app/x.txt\n", "command", "cat /app/x.txt"),
    ("```bash\necho hi > /app/a\n```", "command", "echo hi > /app/a"),
    ("I will look.\n```\ncd /app\nls\n```\nthen more", "command", "cd /app\nls"),
    ("```sh\nsort a > b", "command", "sort a > b"),  # unterminated fence (ran out of tokens)
    ("done", "done", ""),
    ("  DONE  ", "done", ""),
    ("```\ndone\n```", "done", ""),
    ("", "invalid", ""),
    ("```bash\n\n```", "invalid", ""),
    ("   \n\n", "invalid", ""),
])
def test_parse_action(text, kind, command):
    a = parse_action(text)
    assert (a.kind, a.command) == (kind, command)


def test_action_key_normalises_whitespace():
    assert parse_action("cat   a  >  b").key == "cat a > b"
    assert parse_action("done").key == "<done>"


def test_observation_is_truncated_with_marker():
    rec = CommandRecord(command="x", stdout="a" * 5000, stderr="oops", exit_code=2,
                        duration_s=0.1)
    obs = format_observation(rec, limit=300)
    assert obs.startswith("exit code: 2\nstdout:\n") and "characters cut" in obs
    assert obs.endswith("stderr:\noops") and len(obs) < 500


# ------------------------------------------------------------------ NUL bytes: an invalid action
# The trainer's parser and `termcredit run`'s agents (harness/agents.py) agree: a command with a
# NUL byte runs nothing, is recorded as an invalid step, and its observation says why.


@pytest.mark.parametrize("text", [
    "echo a\x00b",
    "$ printf x\x00 > /app/f\n",
    "```bash\ncd /app\necho a\x00b > f\n```",
    "\x00",
])
def test_nul_byte_is_an_invalid_action(text):
    a = parse_action(text)
    assert (a.kind, a.command, a.error) == ("invalid", "", "the command contains a NUL byte")
    assert invalid_observation(a) == "error: the command contains a NUL byte"
    assert a.key == "<invalid>"


def test_nul_byte_outside_the_command_is_ignored():
    assert parse_action("thinking\x00\n```bash\nls\n```").command == "ls"


class _FakeSandbox:
    """What AgentEnv needs of a sandbox, recording the commands that would run."""

    def __init__(self):
        self.ran: list[str] = []
        self.shell = SimpleNamespace(session_trace=[""], integrity=[])
        self.added_paths = lambda: set()

    def run(self, command, timeout, output_cap):
        self.ran.append(command)
        return CommandRecord(command=command, stdout="", stderr="", exit_code=0, duration_s=0.0)


def _env(tmp_path):
    task = SimpleNamespace(agent_timeout_sec=60.0, instruction="x")
    sandbox = _FakeSandbox()
    traj = Trajectory(task="t", instruction="x", agent="replay")
    return AgentEnv(sandbox, task, traj, tmp_path), sandbox


def test_env_step_refuses_a_nul_byte(tmp_path):
    env, sandbox = _env(tmp_path)
    with pytest.raises(ValueError, match=r"^invalid action: the command contains a NUL byte$"):
        env.step("rm -rf /app/x\x00 && echo")
    with pytest.raises(InvalidAction) as err:
        env.step("\x00")
    assert err.value.reason == "the command contains a NUL byte"
    assert sandbox.ran == [] and env.trajectory.steps == []  # nothing ran, nothing recorded


def test_replay_records_a_nul_line_as_invalid_and_goes_on(tmp_path):
    replay = tmp_path / "cmds.txt"
    replay.write_bytes(b"cd /app\necho a\x00b > f\r\n\nls\x0cx\rtrue\n")
    env, sandbox = _env(tmp_path)
    ReplayAgent(replay).run(env)
    assert sandbox.ran == ["cd /app", "ls\x0cx", "true"]  # a form feed is no line break
    steps = env.trajectory.steps
    assert [s.index for s in steps] == [0, 1, 2, 3]
    bad = steps[1]
    assert (bad.invalid, bad.command, bad.action) == (True, None, "echo a\x00b > f")
    # the observation the trainer's policy gets for the same action
    assert bad.observation == invalid_observation(parse_action("echo a\x00b > f"))
    assert bad.observation == "error: the command contains a NUL byte"
    assert [s.invalid for s in steps] == [False, True, False, False]


def test_oracle_replays_solution_commands_when_there_is_no_solve_sh(tmp_path):
    """A task whose known-good solution is a list of commands (a Terminal-Bench-1
    solution.yaml): each line is one step, as a replay file's would be."""
    from termcredit.tasks import load_task

    root = tmp_path / "t"
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM termcredit/base\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (root / "instruction.md").write_text("x")
    (root / "task.toml").write_text("[agent]\ntimeout_sec = 60\n")
    (root / "solution").mkdir()
    (root / "solution" / "commands.txt").write_text("cd /app\n\necho 4 > answer.txt\n")
    env, sandbox = _env(tmp_path)
    env.task = load_task(root)
    sandbox.put_dir = lambda src, dest: sandbox.ran.append(f"<put {src.name} {dest}>")
    OracleAgent().run(env)
    assert sandbox.ran == ["<put solution /solution>", "cd /app", "echo 4 > answer.txt"]
    (root / "solution" / "commands.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"solution/solve\.sh: missing, and no "
                       r"solution/commands\.txt"):
        OracleAgent().run(env)


@pytest.mark.parametrize(("data", "line", "col", "byte"), [
    (b"cd /app\nls \xff\n", 2, 4, "0xff"),
    (b"\xe9cho\n", 1, 1, "0xe9"),
    (b"a\r\nb\rc\n\xc3\xa9t\xe9\n", 4, 3, "0xe9"),  # CRLF and CR end lines too; \xc3\xa9 is é
])
def test_replay_file_not_utf8_names_file_and_line(tmp_path, data, line, col, byte):
    replay = tmp_path / "cmds.txt"
    replay.write_bytes(data)
    with pytest.raises(ValueError) as err:
        ReplayAgent(replay)
    assert str(err.value) == (f"{replay}: line {line}: not UTF-8 text (byte {byte} at column "
                              f"{col})")
    with pytest.raises(ValueError, match=r"line \d+: not UTF-8"):
        make_agent_factory(f"replay:{replay}")  # `termcredit run` fails before any container
