"""Harbor-format task folders: model and validating loader.

A task is a folder with ``instruction.md``, ``task.toml``, ``environment/Dockerfile`` (+ files),
``tests/test.sh`` (+ files) and optionally ``solution/solve.sh`` (the oracle) or, instead,
``solution/commands.txt`` (a known-good replay: one command per line). Every error names the file and
the field at fault, so a user can fix a task without reading this code. The loader is strict: an
unknown section or key (outside the free-form ``[metadata]`` and ``env`` tables) is an error that
names the nearest valid key, and numbers are range-checked when the task loads.

Every key of Harbor's schema is known: the loader honours the ones below, network policy is
netpolicy.py's, and harbor_keys.py lists the rest (kept as they are, or accepted at Harbor's
default only). A feature termcredit lacks, asked for (``gpus = 1``), is a TaskError naming the
file and key; with ``lenient=True`` (``termcredit run``) the task loads with the reason in
``Task.unsupported`` instead, and its trials are skipped with it.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .harbor_keys import DEFAULT_ONLY, KEPT, unsupported_message
from .netpolicy import NETWORK_KEYS, resolve


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
    allow_internet: bool = False  # the agent may be granted a network (netpolicy.py)
    allowed_hosts: list[str] = field(default_factory=list)  # network_mode = "allowlist"
    verifier_network: bool = False  # [verifier] network_mode permits one for the verifier
    workdir: str | None = None  # [environment] workdir: the shell's start (else the image's)
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
    # Harbor features asked for that termcredit lacks, one line each (file, key, what to do);
    # only a lenient load keeps such a task (its trials are skipped)
    unsupported: list[str] = field(default_factory=list)

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
    ("environment", "memory"): ("memory_mb", (str,), "size"),  # Harbor's older "2G" form
    ("environment", "storage"): ("storage_mb", (str,), "size"),
    ("environment", "docker_image"): ("docker_image", (str,), "nonempty"),
    ("environment", "workdir"): ("workdir", (str,), "absolute path"),
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
    ("environment", "memory"): (16, True, 1048576, "MiB"),
    ("environment", "storage"): (16, True, 10485760, "MiB"),
    ("verifier", "logs_max_mb"): (1, True, 64, "MiB"),  # the verifier's /logs tmpfs is 64 MiB
}
_TASK_KEYS = tuple(k for s, k in KEPT if s == "task")
_TOP_KEYS = tuple(k for s, k in (*KEPT, *DEFAULT_ONLY) if s == "")  # top-level, not sections
# Every key the loader knows, per section ("" is the top level): what it honours first, then
# the network keys, then Harbor's others. [metadata] and the env tables are free-form; anything
# else unknown is a typo and an error, never silently ignored.
_KNOWN: dict[str, tuple[str, ...]] = {"": _TOP_KEYS, "task": _TASK_KEYS} | {
    section: tuple(dict.fromkeys(k for s, k in (*_FIELDS, *NETWORK_KEYS, *KEPT, *DEFAULT_ONLY)
                                 if s == section and k))
    for section, _ in _FIELDS}
_SECTIONS = tuple(s for s in _KNOWN if s)
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
               dict: "a table", list: "a list"}


def known_keys() -> set[tuple[str, str]]:
    """Every (section, key) the loader knows; sections are ("", section). [metadata] and the
    env tables are free-form."""
    return {(s, k) for s, keys in _KNOWN.items() for k in keys} | {("", s) for s in _SECTIONS}


def _check(file: Path, dotted: str, value: Any, types: tuple[type, ...], rule: str) -> Any:
    ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
    if not ok and rule == "size":
        raise TaskError(file, f"must be a size such as \"512M\" or \"2G\" (or {dotted}_mb = "
                        f"a number of MiB), got {type(value).__name__} {value!r}", dotted)
    if not ok:
        want = " or ".join(dict.fromkeys(_TYPE_NAMES[t] for t in types))
        raise TaskError(file, f"must be {want}, got {type(value).__name__} {value!r}", dotted)
    if rule == "size":  # a size string becomes MiB, then its *_mb key's range applies
        value, rule = _size_mb(file, dotted, value), "range"
    if rule == "range":
        low, low_in, high, unit = _RANGES[tuple(dotted.split(".", 1))]  # type: ignore[index]
        if not math.isfinite(value):
            raise TaskError(file, f"must be a finite number, got {value!r}", dotted)
        if value < low or (value == low and not low_in) or value > high:
            lower = f"at least {low}" if low_in else f"greater than {low}"
            raise TaskError(file, f"must be {lower} and at most {high} ({unit}), "
                            f"got {value!r}", dotted)
    if rule == "absolute path" and not value.startswith("/"):
        raise TaskError(file, f"must be an absolute path, got {value!r}", dotted)
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


def _size_mb(file: Path, dotted: str, text: str) -> int:
    """Harbor's older size strings ("512M", "2G", "1024K") in MiB, as Harbor reads them."""
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    size = text.strip().upper()
    try:
        return int(float(size[:-1]) * units[size[-1:]])
    except (KeyError, ValueError):
        raise TaskError(file, f"must be a size such as \"512M\" or \"2G\", got {text!r}",
                        dotted) from None


def _check_keys(file: Path, data: dict[str, Any]) -> list[TaskError]:
    """Every section and key is one the loader knows ([metadata] and env tables are free);
    the lines for Harbor features asked for that termcredit lacks."""
    unsupported: list[TaskError] = []
    for section, body in data.items():
        if section in _TOP_KEYS:
            body = {section: body}
            section = ""
        elif section not in _SECTIONS:
            raise _unknown(file, "", section, body)
        elif not isinstance(body, dict):
            raise TaskError(file, f"must be a table ([{section}]), got {body!r}", section)
        if section == "metadata":
            continue
        for key, value in body.items():
            dotted = f"{section}.{key}" if section else key
            if key not in _KNOWN[section]:
                raise _unknown(file, section, key, value)
            if (section, key) in KEPT:
                _check(file, dotted, value, KEPT[(section, key)], "any")
            elif (section, key) in DEFAULT_ONLY:
                reason = unsupported_message(section, key, value)
                if reason:
                    unsupported.append(TaskError(file, reason, dotted))
    keywords = data.get("task", {}).get("keywords", [])
    if not all(isinstance(k, str) for k in keywords):
        raise TaskError(file, "must be a list of strings", "task.keywords")
    return unsupported


def load_task(path: str | Path, *, lenient: bool = False) -> Task:
    """Load and validate one task folder; raises TaskError naming the file and field.
    ``lenient``: a Harbor feature termcredit lacks is kept in ``Task.unsupported`` (the
    caller skips the task's trials) rather than raised."""
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

    unsupported = _check_keys(toml_path, data)
    if unsupported and not lenient:
        raise unsupported[0]
    kwargs: dict[str, Any] = {"unsupported": [str(e) for e in unsupported]}
    for (section, key), (attr, types, rule) in _FIELDS.items():
        body = data.get(section)
        if body is None:
            continue
        if key == "":
            kwargs[attr] = _check(toml_path, section, body, types, rule)
        elif key in body:
            kwargs[attr] = _check(toml_path, f"{section}.{key}", body[key], types, rule)
    env = data.get("environment", {})
    for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
        if old in env and new in env and kwargs[new] != env[new]:
            raise TaskError(toml_path, f"says {kwargs[new]} MiB and {new} says {env[new]}: "
                            "keep one of them", f"environment.{old}")
    policy = resolve(data, lambda message, dotted: TaskError(toml_path, message, dotted))
    kwargs.update(allow_internet=policy.agent, allowed_hosts=policy.allowed_hosts,
                  verifier_network=policy.verifier)

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


def find_tasks(paths: list[str | Path], *, lenient: bool = False) -> list[Task]:
    """Each path is a task folder or a folder of task folders (``lenient``: see load_task)."""
    tasks: list[Task] = []
    for p in map(Path, paths):
        if (p / "task.toml").is_file():
            tasks.append(load_task(p, lenient=lenient))
        elif p.is_dir():
            subs = sorted(d for d in p.iterdir() if (d / "task.toml").is_file())
            if not subs:
                raise TaskError(p, "neither a task folder nor a folder of tasks (no task.toml)")
            tasks.extend(load_task(d, lenient=lenient) for d in subs)
        else:
            raise TaskError(p, "task folder not found")
    return tasks
