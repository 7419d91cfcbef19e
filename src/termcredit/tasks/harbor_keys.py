"""Harbor's task.toml keys termcredit reads but does not act on, and termcredit's own keys.

The schema is Harbor's ``TaskConfig`` (harbor 0.26.0, ``harbor/models/task/config.py``; older
releases' keys included: ``version``, ``allow_internet``, ``memory``/``storage``). The loader
(model.py) honours the keys it maps to ``Task`` fields; this file lists the rest:

* ``KEPT``: descriptive keys with no effect on a trial (``[task] description``, ``source``):
  type-checked and kept as they are.
* ``DEFAULT_ONLY``: features termcredit cannot provide (GPUs, MCP servers, a separate verifier
  container, ...). At Harbor's default or an empty value they ask for nothing and load
  silently; any other value is one ``unsupported`` line naming the file, the key and what to do
  (an error for ``tasks check``, a skipped trial in ``termcredit run``).
* ``EXTENSIONS``: termcredit's own keys, which Harbor's schema lacks. Harbor's ``TaskConfig``
  ignores keys it does not know (pydantic's default), so a task carrying them still loads in
  Harbor, which drops them (tests/integration/test_harbor_loader.py checks it with harbor's
  own loader).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# (section, key) -> accepted types ("" is the top level)
KEPT: dict[tuple[str, str], tuple[type, ...]] = {
    ("", "schema_version"): (str,),
    ("", "version"): (str,),  # Harbor's name for schema_version before 1.x
    ("", "source"): (str,),  # where a generated task came from
    ("", "multi_step_reward_strategy"): (str,),  # Harbor ignores it without [[steps]] too
    ("task", "name"): (str,),
    ("task", "version"): (str,),
    ("task", "description"): (str,),
    ("task", "authors"): (list,),
    ("task", "keywords"): (list,),
}

# (section, key) -> what it does; model.py honours them (docs/tasks.md: "termcredit's own keys")
EXTENSIONS: dict[tuple[str, str], str] = {
    ("verifier", "agent_processes"): "keep or kill the agent's processes before verification",
    ("verifier", "on_suspect"): "what training does with a suspect reward (zero or flag)",
    ("verifier", "agent_may_modify"): "path globs the agent may change outside its work",
    ("verifier", "logs_max_mb"): "the most verifier log copied back",
}


@dataclass(frozen=True)
class DefaultOnly:
    default: str  # the accepted value as written in task.toml ("" when only absence is)
    accepts: Callable[[Any], bool]  # the value asks for nothing termcredit lacks
    lacks: str  # what termcredit cannot do


def _empty(value: Any) -> bool:
    return value == [] or value == {} or value == ""


def _never(value: Any) -> bool:
    return False


DEFAULT_ONLY: dict[tuple[str, str], DefaultOnly] = {
    ("", "steps"): DefaultOnly("[]", _empty, "multi-step tasks are not supported"),
    ("", "artifacts"): DefaultOnly("[]", _empty, "artifacts are not collected"),
    ("agent", "user"): DefaultOnly("", _never, "the agent runs as the image's user"),
    ("verifier", "user"): DefaultOnly("", _never, "the verifier runs as the image's user"),
    ("verifier", "environment_mode"): DefaultOnly(
        '"shared"', lambda v: v == "shared", "the verifier runs in the agent's container"),
    ("verifier", "environment"): DefaultOnly(
        "", _never, "the verifier runs in the agent's container, not one of its own"),
    ("verifier", "collect"): DefaultOnly("[]", _empty, "there are no compose services to "
                                         "collect from"),
    ("environment", "os"): DefaultOnly(
        '"linux"', lambda v: isinstance(v, str) and v.lower() == "linux",
        "sandboxes are Linux containers"),
    ("environment", "gpus"): DefaultOnly(
        "0", lambda v: type(v) is int and v == 0, "the sandbox has no GPUs"),
    ("environment", "gpu_types"): DefaultOnly("[]", _empty, "the sandbox has no GPUs"),
    ("environment", "tpu"): DefaultOnly("", _never, "the sandbox has no TPUs"),
    ("environment", "mcp_servers"): DefaultOnly("[]", _empty, "MCP servers are not started"),
    ("environment", "skills_dir"): DefaultOnly('""', _empty, "skills are not installed"),
    ("environment", "healthcheck"): DefaultOnly(
        "", _never, "no healthcheck runs (the image's services are not started)"),
}


def unsupported_message(section: str, key: str, value: Any) -> str | None:
    """The reason a DEFAULT_ONLY key's value cannot be honoured, with what to do; None when it
    asks for nothing."""
    rule = DEFAULT_ONLY[(section, key)]
    if rule.accepts(value):
        return None
    todo = (f"remove the key or set {key} = {rule.default}" if rule.default
            else "remove the key")
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"not supported by termcredit: {rule.lacks} (got {shown}); {todo}"
