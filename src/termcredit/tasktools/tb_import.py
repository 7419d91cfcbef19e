"""`termcredit tasks import`: a Terminal-Bench-1 task folder -> a Harbor-format task folder.

TB1 layout: ``task.yaml`` (instruction, author_name/author_email, difficulty, category, tags,
parser_name, max_agent_timeout_sec, max_test_timeout_sec, ...), ``Dockerfile`` (+ build
files), ``docker-compose.yaml`` (ignored: termcredit starts its own container),
``run-tests.sh`` (optional), ``solution.sh`` or ``solution.yaml``, ``tests/``.

What changes on the way (an offline conversion):

* ``task.yaml`` -> ``instruction.md`` + ``task.toml`` (timeouts, metadata, authors; the
  canary comment is kept);
* the Dockerfile and every other build file -> ``environment/``; ``FROM`` stays as written
  (the image map builds t-bench images on the termcredit base);
* ``solution.sh`` -> ``solution/solve.sh``; ``solution.yaml``'s commands -> the replay
  ``solution/commands.txt`` (one step per command, as TB1 sent them), or ``solve.sh`` lines
  when a command spans several lines;
* ``tests/`` is copied, and ``run-tests.sh`` becomes ``tests/test.sh`` without its test-time
  downloads (``tb_run_tests``); the test-time packages it installed move to a build-time
  ``RUN`` line in the Dockerfile (no network when tests run);
* the name is the folder's, or ``<dataset>-<folder>`` for a folder named by a number.

A rewrite that may not do what the authors' script did, and a Dockerfile COPY of a source the
task lacks, is a warning (``report.warnings``), kept in task.toml as ``[metadata]
import_warnings`` for ``tasks check`` to repeat.

``task.yaml`` and ``solution.yaml`` are read with PyYAML (``yaml.safe_load``); an error names
the file and, where one is at fault, the field.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from ..tasks.model import TaskError, load_task
from .task_scan import missing_copies
from .tb_run_tests import MARK, PIP_INSTALL, ImportReport, convert_run_tests

SKIP_FILES = {"task.yaml", "task.yml", "docker-compose.yaml", "docker-compose.yml",
              "run-tests.sh", "solution.sh", "solution.yaml", "solution.yml", "tests"}
DEFAULT_AGENT_TIMEOUT = 360.0  # TB1 defaults
DEFAULT_TEST_TIMEOUT = 60.0
# Harbor's [task] name is "org/name" (its loader refuses a bare one); termcredit's task name
# is the part after the slash
ORG = "terminal-bench-1"

__all__ = ["ImportReport", "convert_run_tests", "import_tb1", "load_yaml", "task_name"]


def load_yaml(path: Path, text: str) -> Any:
    """The YAML document ``text`` of ``path``; a syntax error is a TaskError naming the file
    (and the line and column PyYAML reports)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskError(path, f"not readable YAML: {' '.join(str(exc).split())}") from exc


# --------------------------------------------------------------------------- the task


def _toml_str(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)


def _number(data: dict[str, Any], key: str, default: float, file: Path) -> float:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskError(file, f"must be a positive number, got {value!r}", key)
    return float(value)


def _solution_from_yaml(text: str, file: Path) -> tuple[str, str, list[str]]:
    """(file name under solution/, its text, notes) for a TB1 ``solution.yaml``: TB1 sent
    each command to the terminal on its own, so they stay a replay (``commands.txt``, one
    step per line); a command of several lines (a heredoc) makes them a ``solve.sh``."""
    data = load_yaml(file, text)
    if not isinstance(data, list):
        raise TaskError(file, "must be a list of {command: ...} entries")
    commands = []
    for k, entry in enumerate(data):
        cmd = entry.get("command") if isinstance(entry, dict) else entry
        if not isinstance(cmd, str):
            raise TaskError(file, "each entry needs a 'command' string", f"[{k}].command")
        commands.append(cmd.rstrip("\n"))
    long = [(k, c) for k, c in enumerate(commands) if "\n" in c or "\r" in c]
    if not long:
        return "commands.txt", "".join(c + "\n" for c in commands), [
            f"{file.name}: its {len(commands)} command(s) became solution/commands.txt, which "
            "the oracle replays one step per line"]
    k, cmd = long[0]
    lines = ["#!/bin/bash", "# From Terminal-Bench 1 solution.yaml: one line per command."]
    return "solve.sh", "\n".join(lines + commands) + "\n", [
        f"{file.name}: command {k + 1} spans {len(cmd.splitlines())} lines, which a replay "
        "(one command per line) cannot hold: the commands became the lines of "
        "solution/solve.sh (the oracle runs it as one step)"]


def import_tb1(src: str | Path, out: str | Path | None = None, *, force: bool = False,
               tasks_dir: str | Path = "tasks") -> ImportReport:
    """Convert the TB1 task folder ``src`` into ``out`` (default ``tasks/<folder name>``)."""
    src = Path(src).resolve()
    yaml_path = next((src / n for n in ("task.yaml", "task.yml") if (src / n).is_file()), None)
    if not src.is_dir():
        raise TaskError(src, "task folder not found")
    if yaml_path is None:
        raise TaskError(src / "task.yaml", "missing (not a Terminal-Bench-1 task folder)")
    raw = yaml_path.read_text(errors="replace")
    data = load_yaml(yaml_path, raw)
    if not isinstance(data, dict):
        raise TaskError(yaml_path, "must be a mapping of fields")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(yaml_path, "must be a non-empty string", "instruction")
    if not (src / "Dockerfile").is_file():
        raise TaskError(src / "Dockerfile", "missing (termcredit builds the task image from it)")
    agent_timeout = _number(data, "max_agent_timeout_sec", DEFAULT_AGENT_TIMEOUT, yaml_path)
    test_timeout = _number(data, "max_test_timeout_sec", DEFAULT_TEST_TIMEOUT, yaml_path)

    name = task_name(src)
    dest = Path(out) if out else Path(tasks_dir) / name
    if dest.resolve() == src:
        raise ValueError(f"{dest}: the output folder must differ from the TB1 folder")
    if dest.exists():
        if not force:
            raise ValueError(f"{dest}: already exists (use --force to replace it)")
        shutil.rmtree(dest)
    report = ImportReport(path=dest)

    # environment/: the Dockerfile and every other build file
    env = dest / "environment"
    env.mkdir(parents=True)
    for item in sorted(src.iterdir()):
        if item.name in SKIP_FILES or item == yaml_path or item.resolve() == dest.resolve():
            continue
        if item.is_dir():
            shutil.copytree(item, env / item.name, symlinks=True)
        else:
            shutil.copy2(item, env / item.name)

    # tests/
    tests = dest / "tests"
    if (src / "tests").is_dir():
        shutil.copytree(src / "tests", tests, symlinks=True)
    else:
        tests.mkdir()
        report.notes.append("no tests/ folder")
    run_tests = src / "run-tests.sh"
    test_sh = convert_run_tests(run_tests.read_text(errors="replace")
                                if run_tests.is_file() else None, report)
    (tests / "test.sh").write_text(test_sh)
    (tests / "test.sh").chmod(0o755)

    # test-time packages move to build time
    extra = []
    if report.apt_packages:
        extra.append("RUN apt-get update && apt-get install -y --no-install-recommends "
                     + " ".join(report.apt_packages) + " && rm -rf /var/lib/apt/lists/*")
    if report.pip_packages:
        extra.append(f"RUN {PIP_INSTALL} " + " ".join(report.pip_packages))
    extra += report.build_steps
    dockerfile = env / "Dockerfile"
    docker_text = dockerfile.read_text(errors="replace")
    if extra:
        docker_text = (docker_text.rstrip("\n") + "\n\n" + f"{MARK} test dependencies that "
                       "run-tests.sh installed at test time (no network then):\n"
                       + "\n".join(extra) + "\n")
        dockerfile.write_text(docker_text)
    report.warnings += missing_copies(env)

    # solution/solve.sh
    sol = dest / "solution"
    if (src / "solution.sh").is_file():
        sol.mkdir()
        shutil.copy2(src / "solution.sh", sol / "solve.sh")
    else:
        sy = next((src / n for n in ("solution.yaml", "solution.yml") if (src / n).is_file()),
                  None)
        if sy is not None:
            sol.mkdir()
            sol_file, text, notes = _solution_from_yaml(sy.read_text(), sy)
            (sol / sol_file).write_text(text)
            report.notes += notes
        else:
            report.notes.append("no solution.sh or solution.yaml: the oracle cannot run; check "
                                "the task with `termcredit tasks check --solution replay:FILE` "
                                "(one known-good command per line)")
    if (sol / "solve.sh").is_file():
        (sol / "solve.sh").chmod(0o755)

    # instruction.md, task.toml
    (dest / "instruction.md").write_text(instruction.strip() + "\n")
    (dest / "task.toml").write_text(_task_toml(src, name, raw, data, agent_timeout,
                                               test_timeout, report))
    load_task(dest)  # the result must load; a TaskError here names the file and field
    return report


def task_name(src: Path) -> str:
    """The task's name: its folder's, lower-case letters, digits and dashes; a folder named
    by a number only (EvoEval's "51") gets its dataset folder's name in front, so the
    names of two datasets do not collide: ``evoeval-51``."""
    def clean(s: str) -> str:
        return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")
    name = clean(src.name) or "task"
    if name.isdigit() and clean(src.parent.name):
        name = f"{clean(src.parent.name)}-{name}"
    return name


def _task_toml(src: Path, name: str, raw: str, data: dict[str, Any], agent_timeout: float,
               test_timeout: float, report: ImportReport) -> str:
    lines = [ln for ln in raw.splitlines()  # the canary comment
             if ln.startswith("#") and "canary" in ln.lower()][:3]
    lines += [f"# Imported from Terminal-Bench 1 ({src.name}) by `termcredit tasks import`.",
              'schema_version = "1.1"', "", "[task]", f"name = {_toml_str(f'{ORG}/{name}')}"]
    first = data["instruction"].strip().splitlines()[0]
    lines.append(f"description = {_toml_str(first[:117] + '...' if len(first) > 120 else first)}")
    author = data.get("author_name")
    if author and author != "unknown":
        email = data.get("author_email")
        who = f"name = {_toml_str(author)}" + (
            f", email = {_toml_str(email)}" if email and email != "unknown" else "")
        lines.append(f"authors = [{{ {who} }}]")
    lines += ["", "[metadata]", 'source = "terminal-bench-1"']
    difficulty = data.get("difficulty")
    if difficulty is not None:
        lines.append(f"difficulty = {_toml_str(difficulty)}")
    lines.append(f"category = {_toml_str(data.get('category') or 'software_engineering')}")
    tags = data.get("tags") or []
    if not isinstance(tags, list):
        tags = [tags]
    lines.append("tags = [" + ", ".join(_toml_str(t) for t in tags) + "]")
    for key in ("expert_time_estimate_min", "junior_time_estimate_min", "estimated_duration_sec"):
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            lines.append(f"{key} = {value!r}")
    parser = data.get("parser_name") or "pytest"
    if parser != "pytest":
        lines.append(f"parser_name = {_toml_str(parser)}")
        report.warnings.append(f"parser_name {parser!r}: termcredit's reward is the test "
                               "script's pytest (or exit) status, check that it means the same")
    if data.get("run_tests_in_same_shell"):
        report.notes.append("run_tests_in_same_shell: the verifier runs in a fresh shell of the "
                            "same container (files persist, shell state does not)")
    if report.warnings:  # `tasks check` repeats them
        lines.append("import_warnings = [" + ", ".join(_toml_str(w) for w in report.warnings)
                     + "]")
    lines += ["", "[agent]", f"timeout_sec = {agent_timeout:g}", "", "[verifier]",
              f"timeout_sec = {test_timeout:g}", 'env = { TEST_DIR = "/tests" }', "",
              "[environment]", "cpus = 1", "memory_mb = 2048", "allow_internet = false", ""]
    return "\n".join(lines)
