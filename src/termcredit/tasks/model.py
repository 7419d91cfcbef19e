"""Harbor-format task folders: model and validating loader.

A task is a folder with ``instruction.md``, ``task.toml``, ``environment/Dockerfile`` (+ files),
``tests/test.sh`` (+ files) and optionally ``solution/solve.sh`` (the oracle) or, instead,
``solution/commands.txt`` (a known-good replay: one command per line). Every error names the file and
the field at fault, so a user can fix a task without reading this code. The loader is strict: an
unknown section or key (outside the free-form ``[metadata]`` and ``env`` tables) is an error that
names the nearest valid key, and numbers are range-checked when the task loads.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TaskError(ValueError):
    def __init__(self, file: Path, message: str, field_name: str | None = None):
        self.file, self.field = file, field_name
        where = f"{file}: field '{field_name}'" if field_name else str(file)
        super().__init__(f"{where}: {message}")


@dataclass
class Task:
    name: str
    path: Path
    instruction: str
    agent_timeout_sec: float = 600.0
    verifier_timeout_sec: float = 600.0
    build_timeout_sec: float = 600.0
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 10240
    allow_internet: bool = False
    docker_image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    verifier_env: dict[str, str] = field(default_factory=dict)
    solution_env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # [verifier] provenance settings (DESIGN.md, "Threat model"; tasks/audit.py)
    agent_processes: str = "keep"  # kill: stop every agent process before verification
    on_suspect: str | None = None  # zero | flag; None: the caller's default
    agent_may_modify: list[str] = field(default_factory=list)  # absolute path globs
    logs_max_mb: int = 16  # [verifier] the most copied back from /logs/verifier

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def parametrized(self) -> bool:
        """Instance-seeded: the build and the verifier read TC_INSTANCE (see tasks/build.py)."""
        return bool(self.metadata.get("parametrized", False))

    @property
    def has_solution(self) -> bool:
        return (self.solution_dir / "solve.sh").is_file()

    @property
    def solution_commands(self) -> Path | None:
        """``solution/commands.txt``: the oracle replays it, one step per line, when the
        task has no ``solve.sh`` (a Terminal-Bench-1 solution.yaml becomes one)."""
        path = self.solution_dir / "commands.txt"
        return path if path.is_file() else None


# (section, key) -> (Task attribute, accepted types, check)
_NUM = (int, float)
_FIELDS: dict[tuple[str, str], tuple[str, tuple[type, ...], str]] = {
    ("agent", "timeout_sec"): ("agent_timeout_sec", _NUM, "range"),
    ("verifier", "timeout_sec"): ("verifier_timeout_sec", _NUM, "range"),
    ("environment", "build_timeout_sec"): ("build_timeout_sec", _NUM, "range"),
    ("environment", "cpus"): ("cpus", _NUM, "range"),
    ("environment", "memory_mb"): ("memory_mb", (int,), "range"),
    ("environment", "storage_mb"): ("storage_mb", (int,), "range"),
    ("environment", "allow_internet"): ("allow_internet", (bool,), "no internet"),
    ("environment", "docker_image"): ("docker_image", (str,), "nonempty"),
    ("environment", "env"): ("env", (dict,), "strmap"),
    ("verifier", "env"): ("verifier_env", (dict,), "strmap"),
    ("solution", "env"): ("solution_env", (dict,), "strmap"),
    ("verifier", "agent_processes"): ("agent_processes", (str,), "one of: keep kill"),
    ("verifier", "on_suspect"): ("on_suspect", (str,), "one of: zero flag"),
    ("verifier", "agent_may_modify"): ("agent_may_modify", (list,), "absolute globs"),
    ("verifier", "logs_max_mb"): ("logs_max_mb", (int,), "range"),
    ("metadata", ""): ("metadata", (dict,), "any"),
}
# (section, key) -> (low, low included, high, unit): checked when the task loads, so a value
# that cannot work (1e30 seconds, nan CPUs) is named here instead of failing mid-run
_DAY = 86400
_RANGES: dict[tuple[str, str], tuple[float, bool, float, str]] = {
    ("agent", "timeout_sec"): (0, False, _DAY, "seconds"),
    ("verifier", "timeout_sec"): (0, False, _DAY, "seconds"),
    ("environment", "build_timeout_sec"): (0, False, _DAY, "seconds"),
    ("environment", "cpus"): (0, False, 64, "CPUs"),
    ("environment", "memory_mb"): (16, True, 1048576, "MiB"),
    ("environment", "storage_mb"): (16, True, 10485760, "MiB"),
    ("verifier", "logs_max_mb"): (1, True, 64, "MiB"),  # the verifier's /logs tmpfs is 64 MiB
}
# Keys of [task] termcredit reads (name) or keeps as Harbor documents them (description,
# authors, keywords): key -> accepted types
_TASK_KEYS: dict[str, tuple[type, ...]] = {"name": (str,), "description": (str,),
                                           "authors": (list,), "keywords": (list,)}
_TOP_KEYS = ("schema_version", "version")  # top-level values that are not sections
# Every key the loader knows, per section ("" is the top level). [metadata] and the env tables
# are free-form; anything else unknown is a typo (or a Harbor feature termcredit lacks) and an
# error, never silently ignored.
_KNOWN: dict[str, tuple[str, ...]] = {"": _TOP_KEYS, "task": tuple(_TASK_KEYS)} | {
    section: tuple(k for s, k in _FIELDS if s == section and k) for section, _ in _FIELDS}
_SECTIONS = tuple(s for s in _KNOWN if s)
# Harbor task.toml keys termcredit does not implement: named as such, not as typos
_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("", "steps"): "multi-step tasks are not supported",
    ("", "artifacts"): "artifact collection is not supported",
    ("agent", "user"): "the agent's user cannot be chosen",
    ("verifier", "user"): "the verifier's user cannot be chosen",
    ("verifier", "environment_mode"): "the verifier runs in the agent's container",
    ("environment", "gpus"): "the sandbox has no GPUs",
    ("environment", "gpu_types"): "the sandbox has no GPUs",
    ("environment", "mcp_servers"): "MCP servers are not supported",
    ("environment", "skills_dir"): "skills are not supported",
}
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
               dict: "a table", list: "a list"}


def _check(file: Path, dotted: str, value: Any, types: tuple[type, ...], rule: str) -> Any:
    ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
    if not ok:
        want = " or ".join(dict.fromkeys(_TYPE_NAMES[t] for t in types))
        raise TaskError(file, f"must be {want}, got {type(value).__name__} {value!r}", dotted)
    if rule == "range":
        low, low_in, high, unit = _RANGES[tuple(dotted.split(".", 1))]  # type: ignore[index]
        if not math.isfinite(value):
            raise TaskError(file, f"must be a finite number, got {value!r}", dotted)
        if value < low or (value == low and not low_in) or value > high:
            lower = f"at least {low}" if low_in else f"greater than {low}"
            raise TaskError(file, f"must be {lower} and at most {high} ({unit}), "
                            f"got {value!r}", dotted)
    if rule == "no internet" and value:
        raise TaskError(file, "not supported: the sandbox has no network; remove it or set "
                        "false", dotted)
    if rule == "nonempty" and not value.strip():
        raise TaskError(file, "must not be empty", dotted)
    if rule.startswith("one of: "):
        choices = rule.removeprefix("one of: ").split()
        if value not in choices:
            want = " or ".join(f'"{c}"' for c in choices)
            raise TaskError(file, f"must be {want}, got {value!r}", dotted)
    if rule == "absolute globs":
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.startswith("/"):
                raise TaskError(file, "must be an absolute path glob (a string starting with "
                                f"'/', e.g. \"/usr/local/lib/python3*/site-packages/**\"), "
                                f"got {item!r}", f"{dotted}[{i}]")
        value = list(value)
    if rule == "strmap":
        for k, v in value.items():
            if not isinstance(v, (str, int, float, bool)):
                raise TaskError(file, f"value of {k!r} must be a string", f"{dotted}.{k}")
        value = {str(k): str(v) for k, v in value.items()}
    return float(value) if types is _NUM else value


def _unknown(file: Path, section: str, key: str, value: Any) -> TaskError:
    """The error for a key the loader does not know: the nearest valid key, or where the key
    belongs, or the valid keys."""
    dotted = f"{section}.{key}" if section else key
    if (section, key) in _UNSUPPORTED:
        return TaskError(file, f"not supported: {_UNSUPPORTED[(section, key)]} (a Harbor key "
                         "termcredit does not implement); remove it", dotted)
    valid = _KNOWN[section]
    if section == "":
        table = isinstance(value, dict)
        what = f"unknown section [{key}]" if table else f"unknown top-level key '{key}'"
        names = _SECTIONS if table else valid + _SECTIONS
        near = difflib.get_close_matches(key, names, n=1, cutoff=0.7)
        if near:
            shown = f"[{near[0]}]" if near[0] in _SECTIONS else f"'{near[0]}'"
            return TaskError(file, f"{what}; did you mean {shown}?", dotted)
        homes = [s for s in _SECTIONS if key in _KNOWN[s]]
        if homes:
            return TaskError(file, f"{what}; it belongs in " + " or ".join(
                f"[{s}]" for s in homes), dotted)
        return TaskError(file, f"{what}; valid sections: " + ", ".join(
            f"[{s}]" for s in _SECTIONS) + "; top-level keys: " + ", ".join(_TOP_KEYS), dotted)
    what = f"unknown key '{key}' in [{section}]"
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.7)
    if near:
        return TaskError(file, f"{what}; did you mean '{near[0]}'?", dotted)
    homes = [s for s in _SECTIONS if s != section and key in _KNOWN[s]]
    if homes:
        return TaskError(file, f"{what}; it belongs in " + " or ".join(
            f"[{s}]" for s in homes), dotted)
    return TaskError(file, f"{what}; valid keys: " + ", ".join(valid), dotted)


def _harmless(section: str, key: str, value: Any) -> bool:
    """Harbor's ``gpus = 0`` (its default) asks for nothing termcredit lacks."""
    return (section, key) == ("environment", "gpus") and type(value) is int and value == 0


def _check_keys(file: Path, data: dict[str, Any]) -> None:
    """Every section and key is one the loader knows ([metadata] and env tables are free)."""
    for section, body in data.items():
        if section in _TOP_KEYS:
            continue
        if section not in _SECTIONS:
            raise _unknown(file, "", section, body)
        if not isinstance(body, dict):
            raise TaskError(file, f"must be a table ([{section}]), got {body!r}", section)
        if section == "metadata":
            continue
        for key, value in body.items():
            if key not in _KNOWN[section] and not _harmless(section, key, value):
                raise _unknown(file, section, key, value)
    for key, types in _TASK_KEYS.items():
        if key in data.get("task", {}) and key != "name":
            value = data["task"][key]
            _check(file, f"task.{key}", value, types, "any")
            if key == "keywords" and not all(isinstance(k, str) for k in value):
                raise TaskError(file, "must be a list of strings", "task.keywords")


def load_task(path: str | Path) -> Task:
    """Load and validate one task folder; raises TaskError naming the file and field."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise TaskError(root, "task folder not found")
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskError(toml_path, "missing (every task needs a task.toml)")
    try:
        data = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(toml_path, f"not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskError(toml_path, "not UTF-8 text") from exc

    _check_keys(toml_path, data)
    kwargs: dict[str, Any] = {}
    for (section, key), (attr, types, rule) in _FIELDS.items():
        body = data.get(section)
        if body is None:
            continue
        if key == "":
            kwargs[attr] = _check(toml_path, section, body, types, rule)
        elif key in body:
            kwargs[attr] = _check(toml_path, f"{section}.{key}", body[key], types, rule)

    task_section = data.get("task", {})
    name = task_section.get("name", root.name)
    if not isinstance(name, str) or not name.strip():
        raise TaskError(toml_path, "must be a non-empty string", "task.name")
    name = name.split("/")[-1]  # Harbor names are "org/name"; folders and tags use the last part

    instr = root / "instruction.md"
    if not instr.is_file():
        raise TaskError(instr, "missing (the agent's instructions live here)")
    instruction = instr.read_text(errors="replace").strip()
    if not instruction:
        raise TaskError(instr, "is empty")
    if "docker_image" not in kwargs and not (root / "environment" / "Dockerfile").is_file():
        raise TaskError(root / "environment" / "Dockerfile",
                        "missing (or set [environment].docker_image in task.toml)")
    if not (root / "tests" / "test.sh").is_file():
        raise TaskError(root / "tests" / "test.sh",
                        "missing (it must write /logs/verifier/reward.txt or reward.json)")
    return Task(name=name, path=root, instruction=instruction, **kwargs)


def find_tasks(paths: list[str | Path]) -> list[Task]:
    """Each path is a task folder or a folder of task folders."""
    tasks: list[Task] = []
    for p in map(Path, paths):
        if (p / "task.toml").is_file():
            tasks.append(load_task(p))
        elif p.is_dir():
            subs = sorted(d for d in p.iterdir() if (d / "task.toml").is_file())
            if not subs:
                raise TaskError(p, "neither a task folder nor a folder of tasks (no task.toml)")
            tasks.extend(load_task(d) for d in subs)
        else:
            raise TaskError(p, "task folder not found")
    return tasks
