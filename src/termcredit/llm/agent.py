"""``--agent openai:MODEL``: any model behind an OpenAI-compatible chat endpoint drives an episode.

A Terminus-style loop in the harness's text protocol (harness/actions.py, the one the trainer's
policy speaks): the system prompt and the task instruction, then one shell command per reply;
the command's exit code and output go back as the next user message; ``done`` ends the episode,
and so does ``max_turns``. Each reply is a step of the trajectory, recorded by the text
environment (harness/textenv.py ``TextTurns``): a command step (run traced, like every agent's),
an invalid step (no command found, a NUL byte), or the final ``done`` step, each with its token
usage, finish reason, latency and the retries it took in ``step.info``; the totals are in
``trajectory.info["usage"]``.

The reply is untrusted text: it is cut at ``MAX_REPLY_CHARS`` before it is parsed or stored,
and a command no shell can receive is an invalid step, never a crash.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from ..harness.actions import SYSTEM_PROMPT
from ..harness.agents import AgentEnv, AgentTimeout
from ..harness.textenv import TextTurns
from .client import ChatClient, ClientSettings, DeadlineReached

PREFIX = "openai:"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_REPLY_CHARS = 32768  # a reply is cut here before it is parsed or kept
OBSERVATION_CHARS = 4000  # of stdout shown back to the model (stderr: half)


@dataclass(frozen=True)
class OpenAIAgentConfig:
    """What ``termcredit run`` flags set (``RunConfig.agent_options``); the API key is never
    part of it (it stays in the environment, out of config.toml)."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    max_turns: int = 30
    max_tokens: int = 1024  # per reply
    temperature: float | None = None  # None: the server's default
    max_requests: int = 4  # requests in flight at once to the endpoint, whatever -n is

    def validate(self) -> None:
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"--base-url {self.base_url!r}: give an http:// or https:// URL, "
                             "e.g. http://127.0.0.1:8000/v1")
        if not self.model:
            raise ValueError("--agent openai:MODEL needs a model name after `openai:`")
        for flag, value in (("--max-turns", self.max_turns), ("--max-tokens", self.max_tokens),
                            ("--max-requests", self.max_requests)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{flag} must be a whole number of at least 1, not {value!r}")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"--temperature must be between 0 and 2, not {self.temperature}")


AGENT_OPTIONS = ("base_url", "max_turns", "max_tokens", "temperature", "max_requests")


def openai_config(model: str, options: dict[str, Any]) -> OpenAIAgentConfig:
    """The agent's settings from ``RunConfig.agent_options``; $OPENAI_BASE_URL when no base URL
    is given, like the OpenAI SDK."""
    unknown = sorted(set(options) - set(AGENT_OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) for --agent openai: {', '.join(unknown)}")
    given = {k: v for k, v in options.items() if v is not None}
    given.setdefault("base_url", os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
    cfg = OpenAIAgentConfig(model=model, **given)
    cfg.validate()
    return cfg


def openai_factory(model: str, options: dict[str, Any]) -> Callable[[], OpenAIAgent]:
    """One client (one request limit) shared by every trial of the run."""
    cfg = openai_config(model, options)
    client = ChatClient(ClientSettings(base_url=cfg.base_url,
                                       api_key=os.environ.get(API_KEY_ENV) or None,
                                       max_requests=cfg.max_requests))
    return lambda: OpenAIAgent(cfg, client)


def cap_reply(text: str, limit: int = MAX_REPLY_CHARS) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


class OpenAIAgent:
    def __init__(self, cfg: OpenAIAgentConfig, client: ChatClient):
        self.cfg, self.client = cfg, client
        self.name = f"{PREFIX}{cfg.model}"
        self.termination: str | None = None  # read by run_trial: "max_turns" when cut short

    def run(self, env: AgentEnv) -> None:
        traj = env.trajectory
        traj.info["llm"] = {k: v for k, v in asdict(self.cfg).items() if v is not None}
        totals = traj.info.setdefault("usage", {"requests": 0, "retries": 0, "prompt_tokens": 0,
                                                "completion_tokens": 0, "total_tokens": 0})
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": env.instruction}]
        turns = TextTurns(env, obs_chars=OBSERVATION_CHARS)
        for _turn in range(self.cfg.max_turns):
            if env.time_left() <= 0:
                raise AgentTimeout(f"agent time of {env.task.agent_timeout_sec:g}s used up")
            try:
                reply = self.client.chat(self.cfg.model, messages, max_tokens=self.cfg.max_tokens,
                                         temperature=self.cfg.temperature,
                                         deadline=time.monotonic() + env.time_left())
            except DeadlineReached as exc:
                raise AgentTimeout(str(exc)) from None
            totals["requests"] += 1
            totals["retries"] += len(reply.retries)
            for k, v in reply.usage.items():
                totals[k] = totals.get(k, 0) + v
            text, cut = cap_reply(reply.content)
            info: dict[str, Any] = {"usage": reply.usage, "finish_reason": reply.finish_reason,
                                    "latency_s": round(reply.latency_s, 3)}
            if reply.retries:
                info["retries"] = reply.retries
            if cut:
                info["reply_truncated"] = len(reply.content)
            # a failing command raises here, and the trial records why (run_trial)
            step, done = turns.act(text, **info)
            if done:
                return
            messages += [{"role": "assistant", "content": text},
                         {"role": "user", "content": step.observation}]
        self.termination = "max_turns"
