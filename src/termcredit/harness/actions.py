"""The text protocol: a model's reply turned into an environment action, and a command's result
into the text the model sees next. The only place model output is parsed (the text
environment, textenv.py, is its one caller that acts on it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..rawtext import printable
from ..records import CommandRecord

SYSTEM_PROMPT = (
    "You are an agent in a Linux shell. Solve the task by running shell commands. Reply with "
    "exactly one shell command per turn, either as a single line or inside a ```bash code "
    "block. You will see the command's exit code and output. When the task is complete, reply "
    "with the single word: done"
)
_FENCE = re.compile(r"```[ \t]*(?:bash|sh|shell|console)?[ \t]*\n(.*?)(?:\n```|\Z)", re.S)
DONE_WORDS = {"done", "<done>", "[done]", "done."}
# a command no shell can receive (it would end at the NUL and run something else); AgentEnv.step
# refuses one with the same words (a replayed command)
NUL_BYTE = "the command contains a NUL byte"


@dataclass(frozen=True)
class Action:
    kind: str  # "command" | "done" | "invalid"
    command: str = ""
    error: str = ""

    @property
    def key(self) -> str:
        """Canonical action identity (AdaStep): whitespace-normalised command or the kind."""
        return " ".join(self.command.split()) if self.kind == "command" else f"<{self.kind}>"


def invalid_reason(command: str) -> str | None:
    """Why ``command`` cannot be sent to the shell, or None. A NUL byte would end the command
    early (C strings) and silently run a different one."""
    return NUL_BYTE if "\x00" in command else None


def parse_action(text: str) -> Action:
    """A fenced block (its content, several lines allowed) or else the first non-empty line
    (a leading `$ ` prompt is dropped). `done` alone ends the episode. A command with a NUL
    byte is invalid (never cut at the NUL)."""
    action = _parse(text)
    reason = invalid_reason(action.command) if action.kind == "command" else None
    return Action("invalid", error=reason) if reason else action


def _parse(text: str) -> Action:
    stripped = text.strip()
    if stripped.lower() in DONE_WORDS:
        return Action("done")
    m = _FENCE.search(text)
    if m:
        body = m.group(1).strip()
        if body.lower() in DONE_WORDS:
            return Action("done")
        if not body:
            return Action("invalid", error="the code block is empty")
        return Action("command", body)
    for line in stripped.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:].strip()
        if line and not line.startswith("```"):
            return Action("done") if line.lower() in DONE_WORDS else Action("command", line)
    return Action("invalid", error="no command found: reply with one shell command or `done`")


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-(limit - head):]}"


def format_observation(rec: CommandRecord, limit: int = 1200) -> str:
    """What the policy sees of a command: bytes that are not UTF-8 as ``\\xNN`` (a tokenizer
    takes no surrogates; see rawtext.py)."""
    parts = [f"exit code: {rec.exit_code}" + (" (timed out)" if rec.timed_out else "")]
    if rec.stdout:
        parts.append("stdout:\n" + _clip(printable(rec.stdout.rstrip("\n")), limit))
    if rec.stderr:
        parts.append("stderr:\n" + _clip(printable(rec.stderr.rstrip("\n")), limit // 2))
    return "\n".join(parts)


def invalid_observation(action: Action) -> str:
    return f"error: {action.error}"
