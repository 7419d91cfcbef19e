"""Which resources the verifier inspected: the roots DepGPO walks back from.

Rules (each documented here because the DepGPO ablation says cleaning matters most):
* ``raw_read``: every path whose pre-verifier content the verifier's process tree read or
  listed (file opens for reading, executions, directory listings), environment layer included.
* ``written_by_verifier``: what the verifier itself wrote, created, or removed (its reward
  file, pytest caches, temp files): reading one's own output is no evidence about the agent.
* ``cleaned`` = file reads from ``raw_read`` minus
  - everything under ``/tests`` (the verifier's own code, copied in after the agent ended),
  - ``written_by_verifier``,
  - the runner's own files (``RUNNER_PATHS``/``RUNNER_GLOBS``: the user database that Python
    and pytest consult, ``/logs``, pytest caches), unless an agent step wrote that path (then
    reading it is evidence: a task may ask the agent to add a user),
  - the environment layer (``/usr``, ``/proc``, ``__pycache__``, ... see tracer.summary),
  - directory listings: interpreters list every ``sys.path`` entry (the verifier's cwd
    included) whatever the agent did, so listings stay in ``raw_read`` only;
  plus the paths an agent step changed (wrote, deleted, chmod-ed) that the verifier only
  looked up: ``statted`` (stat/access of an existing path: a mode, an owner, existence) and
  ``probed`` (a lookup that found the path missing: a deletion the tests check). Other
  lookups are the runtime's own (imports, config searches) and stay out.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any, Iterable

from ..tracer import AccessSets, EnvironmentLayer, parse_session

RUNNER_PATHS = frozenset({"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf",
                          "/etc/host.conf", "/etc/gai.conf", "/etc/mime.types"})
# /etc/python3*: Debian's sitecustomize.py, which every interpreter loads (in the verifier's root,
# the image's own copy, reached through /usr/lib/python3.X/sitecustomize.py)
RUNNER_GLOBS = ("/logs/*", "*/.pytest_cache/*", "/tmp/pytest-of-*", "/root/.cache/*",
                "/etc/python3*/*")
TESTS_DIR = "/tests"


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (lexically; paths are normalised by the tracer)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def is_runner_file(path: str) -> bool:
    return path in RUNNER_PATHS or any(fnmatchcase(path, g) for g in RUNNER_GLOBS)


def verifier_resources(trace_text: str, *, agent_written: Iterable[str] = (),
                       env: EnvironmentLayer | None = None) -> dict[str, Any]:
    """``agent_written``: every path an agent step wrote, deleted or changed metadata of."""
    env = env or EnvironmentLayer()
    session = parse_session(trace_text, env=env)
    task, envs = AccessSets(), AccessSets()
    for cmd in session.commands.values():
        for mine, theirs in ((task, cmd.summary), (envs, cmd.summary.environment)):
            for name in ("read", "listed", "executed", "written", "deleted", "temporary",
                         "statted", "probed"):
                getattr(mine, name).update(getattr(theirs, name))
    reads = task.read | task.executed | envs.read | envs.executed
    raw = reads | task.listed | envs.listed
    wrote = (task.written | task.deleted | task.temporary | envs.written | envs.deleted
             | envs.temporary)
    agent = set(agent_written)
    looked_up = (task.statted | task.probed) & agent
    cleaned = sorted(
        p for p in reads | looked_up
        if not under(p, TESTS_DIR) and p not in wrote and not env.contains(p)
        and not (is_runner_file(p) and p not in agent)
    )
    return {
        "raw_read": sorted(raw),
        "written_by_verifier": sorted(wrote),
        "cleaned": cleaned,
        "listed": sorted(task.listed),
        "statted": sorted(task.statted),
        "probed": sorted(task.probed),
        "skipped_trace_lines": session.skipped_lines,
    }
