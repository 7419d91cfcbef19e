"""The `openai:MODEL` agent's loop against a real local HTTP server, on an AgentEnv whose
sandbox only records the commands (the real-Docker run is tests/integration/test_openai_run.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from chat_server import ScriptedChatServer, completion, error

import termcredit.llm  # noqa: F401  registers openai:MODEL
from termcredit.harness.agents import AgentEnv, AgentTimeout, make_agent_factory
from termcredit.llm.agent import MAX_REPLY_CHARS, OpenAIAgent
from termcredit.llm.client import ChatRequestError, EndpointUnavailable
from termcredit.records import CommandRecord, Trajectory
from termcredit.trainer.actions import SYSTEM_PROMPT


class _Sandbox:
    def __init__(self):
        self.ran: list[str] = []
        self.shell = SimpleNamespace(session_trace=[""], integrity=[])
        self.added_paths = lambda: set()

    def run(self, command, timeout, output_cap):
        self.ran.append(command)
        return CommandRecord(command=command, stdout=f"ran {len(self.ran)}\n", stderr="",
                             exit_code=0, duration_s=0.0)


def _env(tmp_path, timeout: float = 60.0):
    task = SimpleNamespace(agent_timeout_sec=timeout, instruction="Make /app/x.")
    sandbox = _Sandbox()
    traj = Trajectory(task="t", instruction=task.instruction, agent="openai:m")
    return AgentEnv(sandbox, task, traj, tmp_path), sandbox


def _agent(url: str, **options) -> OpenAIAgent:
    return make_agent_factory("openai:m", {"base_url": url, **options})()


def test_loop_steps_invalid_replies_usage_and_messages(tmp_path):
    huge = "x" * 100_000
    script = [completion("```bash\ncd /app\n```", 100, 7), completion("ls \x00 -la", 120, 3),
              completion(huge, 140, 4000, "length"), completion("", 150, 0),
              completion("done", 160, 1)]
    with ScriptedChatServer(script) as srv:
        env, sandbox = _env(tmp_path)
        agent = _agent(srv.base_url, max_turns=10, max_tokens=77, temperature=0.2)
        agent.run(env)
    assert agent.termination is None  # it said done
    assert sandbox.ran == ["cd /app", "x" * MAX_REPLY_CHARS]
    steps = env.trajectory.steps
    assert [(s.invalid, s.command is not None) for s in steps] == [
        (False, True), (True, False), (False, True), (True, False), (False, False)]
    assert steps[0].action == "```bash\ncd /app\n```"
    assert steps[0].observation == "exit code: 0\nstdout:\nran 1"
    assert steps[1].observation == "error: the command contains a NUL byte"
    assert steps[2].info["reply_truncated"] == 100_000 and len(steps[2].action) == MAX_REPLY_CHARS
    assert steps[2].info["finish_reason"] == "length"
    assert steps[3].observation.startswith("error: no command found")
    assert (steps[4].action, steps[4].action_key) == ("done", "<done>")
    assert [s.info["usage"] for s in steps] == [
        {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        for p, c in [(100, 7), (120, 3), (140, 4000), (150, 0), (160, 1)]]
    assert env.trajectory.info["usage"] == {
        "requests": 5, "retries": 0, "prompt_tokens": 670, "completion_tokens": 4011,
        "total_tokens": 4681}
    assert env.trajectory.info["llm"] == {"model": "m", "base_url": srv.base_url, "max_turns": 10,
                                          "max_tokens": 77, "temperature": 0.2,
                                          "max_requests": 4}
    # the conversation the model saw: its (capped) replies and the observations
    sent = [r["json"] for r in srv.requests]
    assert all(b["model"] == "m" and b["max_tokens"] == 77 and b["temperature"] == 0.2
               for b in sent)
    assert sent[0]["messages"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                   {"role": "user", "content": "Make /app/x."}]
    assert sent[4]["messages"][2:] == [
        {"role": "assistant", "content": "```bash\ncd /app\n```"},
        {"role": "user", "content": "exit code: 0\nstdout:\nran 1"},
        {"role": "assistant", "content": "ls \x00 -la"},
        {"role": "user", "content": "error: the command contains a NUL byte"},
        {"role": "assistant", "content": "x" * MAX_REPLY_CHARS},
        {"role": "user", "content": "exit code: 0\nstdout:\nran 2"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": steps[3].observation}]
    # each step was on disk as it finished
    assert len((tmp_path / "steps.jsonl").read_text().splitlines()) == 5


def test_max_turns_ends_the_episode_and_retries_are_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    script = [error(429, "slow", {"retry-after-ms": "10"}), completion("ls", 5, 1)]
    with ScriptedChatServer(script, fallback=completion("pwd", 6, 1)) as srv:
        env, sandbox = _env(tmp_path)
        agent = _agent(srv.base_url, max_turns=2)
        agent.run(env)
    assert agent.termination == "max_turns" and sandbox.ran == ["ls", "pwd"]
    assert env.trajectory.steps[0].info["retries"] == [{"error": "HTTP 429: slow",
                                                        "wait_s": 0.01}]
    assert "retries" not in env.trajectory.steps[1].info
    assert env.trajectory.info["usage"]["retries"] == 1
    assert env.trajectory.info["usage"]["requests"] == 2
    assert {r["headers"]["Authorization"] for r in srv.requests} == {"Bearer sk-from-env"}
    assert "max_tokens" in srv.requests[0]["json"] and "temperature" not in srv.requests[0]["json"]


def test_a_refused_request_ends_the_agent_with_its_steps_kept(tmp_path):
    with ScriptedChatServer([completion("ls"), error(400, "context too long")]) as srv:
        env, sandbox = _env(tmp_path)
        with pytest.raises(ChatRequestError, match="HTTP 400: context too long"):
            _agent(srv.base_url).run(env)
    assert sandbox.ran == ["ls"] and len(env.trajectory.steps) == 1


def test_an_endpoint_that_stays_down(tmp_path):
    with ScriptedChatServer([], fallback=error(502, "bad gateway")) as srv:
        env, _ = _env(tmp_path)
        agent = _agent(srv.base_url)
        agent.client.settings.backoff_base = 0.01  # the default 1 s would make this test 30 s
        with pytest.raises(EndpointUnavailable, match="6 attempts"):
            agent.run(env)
        assert len(srv.requests) == 6


def test_the_agents_time_bounds_the_wait(tmp_path):
    with ScriptedChatServer([error(429, "later", {"Retry-After": "30"})]) as srv:
        env, _ = _env(tmp_path, timeout=1.0)
        with pytest.raises(AgentTimeout, match="time ran out"):
            _agent(srv.base_url).run(env)


@pytest.mark.parametrize("options,match", [
    ({"base_url": "127.0.0.1:8000/v1"}, "--base-url '127.0.0.1:8000/v1': give an http"),
    ({"base_url": "file:///etc/passwd"}, "give an http"),
    ({"max_turns": 0}, "--max-turns must be a whole number of at least 1"),
    ({"max_requests": -2}, "--max-requests must be"),
    ({"temperature": 3.0}, "--temperature must be between 0 and 2"),
    ({"api_key": "sk"}, "unknown option"),
])
def test_bad_options_fail_before_anything_runs(options, match):
    with pytest.raises(ValueError, match=match):
        make_agent_factory("openai:m", {"base_url": "http://127.0.0.1:1/v1", **options})


def test_options_belong_to_openai_agents_and_names_are_checked(monkeypatch):
    with pytest.raises(ValueError, match=r"--base-url, --max-turns: only for --agent openai:MODEL"):
        make_agent_factory("oracle", {"base_url": "http://x/v1", "max_turns": 3})
    with pytest.raises(ValueError, match="needs a model name"):
        make_agent_factory("openai:")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1")
    agent = make_agent_factory("openai:Qwen/Qwen3-8B:latest")()
    assert agent.cfg.model == "Qwen/Qwen3-8B:latest"
    assert agent.cfg.base_url == "http://10.0.0.5:8000/v1"
    assert agent.name == "openai:Qwen/Qwen3-8B:latest"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert make_agent_factory("openai:gpt-4o")().cfg.base_url == "https://api.openai.com/v1"


def test_resume_keeps_the_agent_options_and_takes_a_new_url(tmp_path):
    from termcredit.harness.run import RunConfig, resume_config, write_config
    from termcredit.tasks import load_task

    hello = load_task(Path(__file__).resolve().parents[2] / "tasks" / "hello-world")
    write_config(RunConfig(tasks=[hello], agent="openai:m", agent_options={
        "base_url": "http://127.0.0.1:8001/v1", "max_turns": 3, "temperature": None}),
        tmp_path, "r-1")
    cfg = resume_config(tmp_path)
    assert cfg.agent == "openai:m"
    assert cfg.agent_options == {"base_url": "http://127.0.0.1:8001/v1", "max_turns": 3}
    moved = resume_config(tmp_path, RunConfig(tasks=[], agent_options={
        "base_url": "http://127.0.0.1:9009/v1", "max_turns": None}))
    assert moved.agent_options == {"base_url": "http://127.0.0.1:9009/v1", "max_turns": 3}
