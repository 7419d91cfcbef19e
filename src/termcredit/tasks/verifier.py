"""Run a task's verifier in the sandbox, traced, after the agent has finished.

The verifier has its own session, made when the container was new: its own PID and mount
namespace. Only at verification does it get its root (sandbox/pristine.py): the image's own
toolchain, the agent's other files, and private ``/tests`` and ``/logs/verifier`` folders that
no agent process can see, write, rename or unmount; the task's ``tests/`` are copied in now.
After the run, and before anything is read from them, the harness checks they are still the
folders it mounted. The verifier runs as
``bash /tests/test.sh`` under strace and the verifier timeout. Reward comes from a regular
``/logs/verifier/reward.txt`` that a verifier process wrote, else a validated ``reward.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Iterable

from ..rawtext import write_text
from ..records import VerifierReport
from ..sandbox import Sandbox, ShellUnavailable
from ..trialdir import TrialPaths
from .build import instance_env
from .model import Task
from .resources import verifier_resources
from .reward import read_reward

VERIFIER_COMMAND = "bash /tests/test.sh"
# Python in the verifier: no user site (the agent's ~/.local). The working directory stays on
# sys.path for `python3 -m ...`: tests run the agent's programs that way (`python3 -m pkg` in
# its folder), and the variable would reach them too; what a test runner would load from there
# (a module of its own name, a plugin's entry points) is the audit's to flag.
PYTHON_ISOLATED = {"PYTHONNOUSERSITE": "1"}
REWARD_FILES = ("reward.txt", "reward.json")
TESTS_MAX_BYTES = 256 << 20  # the verifier's /tests tmpfs size


def _tests_files(folder: Path) -> list[tuple[str, int, bytes]]:
    files, total = [], 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        total += len(data)
        if total > TESTS_MAX_BYTES:
            raise ValueError(f"{folder}: tests over {TESTS_MAX_BYTES >> 20} MiB")
        files.append((path.relative_to(folder).as_posix(), path.stat().st_mode & 0o777, data))
    return files


def _save_logs(entries: list[tuple[dict, bytes]], vdir: Path) -> list[str]:
    """Write the collected /logs/verifier files under ``vdir``; returns notes on what was
    skipped. Names are checked before they touch a host path (no absolute, no '..')."""
    notes = []
    vdir.mkdir(parents=True, exist_ok=True)
    for entry, data in entries:
        rel = PurePosixPath(entry["path"])
        if rel.is_absolute() or not rel.parts or any(p in ("..", ".", "") for p in rel.parts) \
                or "\0" in entry["path"]:
            notes.append(f"skipped a verifier log with a bad name: {entry['path']!r}")
            continue
        if entry["kind"] != "file":
            notes.append(f"{rel} is a {entry['kind']}, not a regular file")
            continue
        dest = vdir.joinpath(*rel.parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if entry.get("truncated"):
            notes.append(f"{rel} cut at {len(data)} of {entry.get('size')} bytes")
    return notes


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, *,
                 agent_written: Iterable[str] = (), instance: int = 0) -> VerifierReport:
    shell = sandbox.verifier_shell
    tests = _tests_files(task.tests_dir)  # a bad tests folder fails before the sandbox is touched
    root = shell.prepare(declared=list(task.agent_may_modify), workdir=sandbox.workdir)
    shell.put_tree("/tests", tests)
    try:
        shell.start(cwd=sandbox.workdir,
                    env={**task.verifier_env, **instance_env(task, instance), **PYTHON_ISOLATED})
    except ShellUnavailable as exc:  # the agent's files or processes left it none: reward 0
        shell.finish(grace=0.0)
        return VerifierReport(reward=0.0, error=f"the verifier could not run: {exc}",
                              on_suspect=task.on_suspect, toolchain=root["toolchain"])
    try:
        rec = shell.run(VERIFIER_COMMAND, timeout=task.verifier_timeout_sec, output_cap=1 << 20)
        replaced = shell.check_private()  # before anything is read from them
        cap = task.logs_max_mb << 20  # [verifier] logs_max_mb: nothing copied past it
        logs = shell.collect("/logs/verifier", max_file=cap, max_total=cap)
    finally:
        shell.finish(grace=1.0)  # the verifier's leftover children: their reads count too
    trace_text = "".join(shell.session_trace)
    paths = TrialPaths(trial_dir)
    paths.trace_dir.mkdir(parents=True, exist_ok=True)
    write_text(paths.verifier_trace, trace_text)
    vdir = paths.verifier_dir
    notes = _save_logs(logs, vdir)
    if shell.collect_left_out:
        notes.append(f"{shell.collect_left_out} more files in /logs/verifier not copied")
    resources = verifier_resources(trace_text, agent_written=agent_written)
    paths.resources.write_text(json.dumps(resources, indent=2) + "\n")
    write_text(paths.test_stdout, rec.stdout)
    write_text(paths.test_stderr, rec.stderr)
    reward, metrics, error = read_reward(vdir)
    kinds = {e["path"]: e["kind"] for e, _ in logs}
    present = [name for name in REWARD_FILES if name in kinds]
    if present and kinds[present[0]] != "file":
        reward, metrics = 0.0, {}
        error = f"{present[0]} is a {kinds[present[0]]}, not a regular file"
    elif present and f"/logs/verifier/{present[0]}" not in resources["written_by_verifier"]:
        reward, metrics = 0.0, {}
        error = f"{present[0]} was not written by a verifier process"
    if replaced:
        reward, metrics = 0.0, {}
        error = "the verifier's private folders were replaced: " + ", ".join(replaced)
    if rec.timed_out:
        error = f"verifier timed out after {task.verifier_timeout_sec:g}s"
        reward = 0.0
    cut = [n for n in notes if " cut at " in n]
    if cut and error is None:
        error = f"verifier logs over logs_max_mb = {task.logs_max_mb}: " + "; ".join(cut)
    return VerifierReport(
        reward=reward, rewards=metrics, exit_code=rec.exit_code, timed_out=rec.timed_out,
        duration_s=rec.duration_s, stdout=rec.stdout[-4000:], stderr=rec.stderr[-4000:],
        trace_file=paths.verifier_trace_rel, error=error, resources=resources["cleaned"],
        on_suspect=task.on_suspect, notes=notes + root["notes"], toolchain=root["toolchain"],
        tampering=[f"{p}: not the verifier's private folder any more" for p in replaced],
    )
