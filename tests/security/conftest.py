"""The red-team campaign: every attack of tests/security runs in real containers through
`termcredit run`, batched so the whole suite costs a few `termcredit run` invocations.

Each test module declares its trials in a module-level ``TRIALS`` dict::

    TRIALS = {"reward-dir": {"victim": "hello-keep", "steps": ["mkdir ...", {"cmd": ..., "timeout": 20}]}}

and marks each test with ``@pytest.mark.trial("reward-dir")``. The session fixture ``campaign``
collects the trials of the *selected* tests (so ``-k`` runs only what it needs), copies each
victim task once (its trials become its attempts), and runs one ``termcredit run`` per victim,
all at once, with the agent in attack_agent.py. Tests then read what the trial left on disk:
result.json's trial entry, trajectory.json (steps with stdout/stderr/exit_code/integrity, the
verifier report) and the raw traces.

Commands may use placeholders that the campaign fills in: {{PWN}} (a host path that must never
be created), {{GATEWAY}} (the host's docker0 address), {{TOKEN}} and {{SECRET}} (random strings).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tasks"
AGENT = Path(__file__).with_name("attack_agent.py")
RUN_TIMEOUT_S = 540  # the whole campaign; pytest-timeout (600 s) covers the fixture too


def _drop_lines(pattern: str):
    rx = re.compile(pattern, re.MULTILINE)
    return lambda text: rx.sub("", text)


# victim -> (task folder, task.toml edit); each becomes one task "sec-<victim>"
VICTIMS: dict[str, tuple[Path | None, Any]] = {
    # hello-world as shipped: agent_processes = "kill"
    "hello-kill": (REPO / "tasks" / "hello-world", None),
    # hello-world whose agent processes keep running during verification (the hard case: a
    # task that tests a service cannot kill them)
    "hello-keep": (REPO / "tasks" / "hello-world", _drop_lines(r"^agent_processes\s*=.*$")),
    "service-http": (FIXTURES / "service-http", None),
    "pip-wheel": (FIXTURES / "pip-wheel", None),
    "pip-wheel-undeclared": (FIXTURES / "pip-wheel", _drop_lines(r"^agent_may_modify\s*=.*$")),
    "apt-deb": (FIXTURES / "apt-deb", None),
    # its tests import the agent's answer module beside a library of the image
    "import-answer": (FIXTURES / "import-answer", None),
    # made at run time (make_probe): its verifier reports what agent leftovers stole
    "probe": (None, None),
}


def pytest_configure(config):
    config.addinivalue_line("markers", "trial(name): the security campaign trial a test reads")


@dataclass
class TrialView:
    """What one trial left on disk."""

    name: str
    entry: dict[str, Any] | None = field(repr=False)  # result.json entry; None: never ran
    traj: dict[str, Any] = field(default_factory=dict, repr=False)
    run_log: str = field(default="", repr=False)

    def _need(self) -> dict[str, Any]:
        if self.entry is None:
            raise AssertionError(f"trial {self.name!r} did not run; termcredit run said:\n"
                                 f"{self.run_log[-1200:]}")
        return self.entry

    @property
    def dir(self) -> Path:
        return Path(self._need()["trial_dir"])

    @property
    def reward(self) -> float:
        return float(self._need()["reward"])

    @property
    def error(self) -> str | None:
        return self._need()["error"]

    @property
    def duration(self) -> float:
        return float(self._need()["duration_s"])

    @property
    def verifier(self) -> dict[str, Any]:
        self._need()
        return self.traj.get("verifier") or {}

    @property
    def suspect(self) -> bool:
        """Suspect in result.json or in the verifier report (either counts)."""
        return bool(self._need().get("suspect")) or bool(self.verifier.get("suspect"))

    @property
    def tampering(self) -> list[str]:
        return list(self.verifier.get("tampering") or [])

    @property
    def steps(self) -> list[dict[str, Any]]:
        self._need()
        return [s.get("command") or {} for s in self.traj.get("steps", [])]

    def step(self, i: int) -> dict[str, Any]:
        steps = self.steps
        if i >= len(steps):
            raise AssertionError(f"trial {self.name!r} has {len(steps)} steps, not {i + 1} "
                                 f"(error: {self.error})")
        return steps[i]

    def out(self, i: int) -> str:
        return self.step(i).get("stdout", "")

    def json_out(self, i: int) -> Any:
        """The last line of step i's stdout that parses as JSON (attack reports)."""
        for ln in reversed(self.out(i).splitlines()):
            try:
                return json.loads(ln)
            except ValueError:
                continue
        raise AssertionError(f"trial {self.name!r} step {i}: no JSON report in stdout "
                             f"{self.out(i)[-1500:]!r}, stderr {self.step(i).get('stderr', '')[-800:]!r}")

    @property
    def integrity(self) -> list[str]:
        """Tampering recorded anywhere in the episode: per step, per episode, in result.json."""
        found = list(self.traj.get("integrity") or []) + list(self._need().get("integrity") or [])
        for st in self.steps:
            found += list(st.get("integrity") or [])
        return found

    def traces(self) -> str:
        """Every raw trace the trial kept (agent steps, shell starts, verifier)."""
        folder = self.dir / "trace"
        if not folder.is_dir():
            return ""
        return "".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.strace")))

    def summary(self) -> str:
        e = self.entry or {}
        return (f"trial {self.name}: reward={e.get('reward')} suspect={self.suspect if e else None} "
                f"error={e.get('error')!r} integrity={self.integrity if e else None} "
                f"tampering={self.tampering if e else None}")


class Campaign:
    def __init__(self, root: Path, facts: dict[str, str]):
        self.root = root
        self.facts = facts
        self.views: dict[str, TrialView] = {}
        self.wall_s = 0.0

    def __getitem__(self, name: str) -> TrialView:
        if name not in self.views:
            raise AssertionError(f"trial {name!r} was not planned (missing @pytest.mark.trial?)")
        return self.views[name]


def _gateway(client) -> str:
    try:
        cfg = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
        if cfg.get("Gateway"):
            return cfg["Gateway"]
        return str(next(ipaddress.ip_network(cfg["Subnet"]).hosts()))
    except Exception:
        return "172.17.0.1"


def make_probe(folder: Path, secret: str) -> Path:
    """A task whose verifier reports (in its stdout) what agent leftovers copied out of
    /tests and /logs/verifier into /app/stolen while it ran; tests/secret.txt holds SECRET."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        '[task]\nname = "probe"\n[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\n'
        "[environment]\nmemory_mb = 512\n")
    (folder / "instruction.md").write_text("Probe task of tests/security: nothing to solve.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM termcredit/base\nWORKDIR /app\n")
    (folder / "tests" / "secret.txt").write_text(secret + "\n")
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\n"
        "# give agent leftovers time to look at /tests and /logs/verifier, then report\n"
        "mkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\nsleep 3\n"
        "echo '== stolen'\n"
        "find /app/stolen -type f 2>/dev/null | sort | while read -r f; do\n"
        "  echo \"--- $f\"; head -c 1000 \"$f\"; echo\ndone\n"
        "echo '== end'\n")
    return folder


def _victim_dir(victim: str, dest: Path, facts: dict[str, str]) -> Path:
    src, edit = VICTIMS[victim]
    if src is None:
        make_probe(dest, facts["SECRET"])
    else:
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    toml = dest / "task.toml"
    text = toml.read_text()
    if edit is not None:
        text = edit(text)
    name = f"sec-{victim}"
    text, n = re.subn(r'(?m)^name\s*=.*$', f'name = "{name}"', text, count=1)
    if n == 0:
        text = f'[task]\nname = "{name}"\n' + text.replace("[task]\n", "", 1)
    toml.write_text(text)
    return dest


def _fill(text: str, facts: dict[str, str]) -> str:
    for k, v in facts.items():
        text = text.replace("{{" + k + "}}", v)
    return text


def _plan_steps(spec: dict[str, Any], facts: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for st in spec["steps"]:
        if isinstance(st, str):
            st = {"cmd": st}
        st = dict(st)
        if "cmd" in st:
            st["cmd"] = _fill(st["cmd"], facts)
        out.append(st)
    return out


@pytest.fixture(scope="session")
def campaign(request, tmp_path_factory, client, base_ref) -> Campaign:
    root = tmp_path_factory.mktemp("security")
    facts = {
        "PWN": str(root / f"pwned-{secrets.token_hex(4)}"),
        "GATEWAY": _gateway(client),
        "TOKEN": f"tcforge{secrets.token_hex(6)}",
        "SECRET": f"TC-SECRET-{secrets.token_hex(8)}",
    }
    camp = Campaign(root, facts)
    # the trials the selected tests read, with their specs from the tests' modules
    wanted: dict[str, dict[str, Any]] = {}
    for item in request.session.items:
        for mark in item.iter_markers("trial"):
            for name in mark.args:
                specs = getattr(item.module, "TRIALS", {})
                if name not in specs:
                    raise pytest.UsageError(f"{item.nodeid}: trial {name!r} not in TRIALS")
                wanted[name] = specs[name]
    by_victim: dict[str, list[str]] = {}
    for name, spec in sorted(wanted.items(), key=lambda kv: (not kv[1].get("slow"), kv[0])):
        by_victim.setdefault(spec["victim"], []).append(name)

    plan: dict[str, dict[str, list]] = {}
    where: dict[str, tuple[str, int]] = {}
    t0 = time.monotonic()
    env = dict(os.environ, TC_SECURITY_PLAN=str(root / "plan.json"))
    jobs = []
    for victim, names in by_victim.items():
        task_dir = _victim_dir(victim, root / "tasks" / victim, facts)
        plan[f"sec-{victim}"] = {str(k): _plan_steps(wanted[n], facts) for k, n in enumerate(names)}
        for k, n in enumerate(names):
            where[n] = (victim, k)
        jobs.append((victim, task_dir, len(names)))
    (root / "plan.json").write_text(json.dumps(plan, indent=1))

    def start(victim: str, task_dir: Path, n: int, attempt: int) -> subprocess.Popen:
        out = root / "runs" / victim
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "termcredit.cli", "run", "--task", str(task_dir),
               "--agent", f"{AGENT}:AttackAgent", "-k", str(n), "-n", str(min(n, 3)),
               "--command-timeout", "30", "--out", str(out)]
        with open(root / f"run-{victim}.log", "a") as log:
            log.write(f"$ {' '.join(cmd)}  (try {attempt})\n")
            log.flush()
            return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)

    def wait(proc: subprocess.Popen, deadline: float) -> None:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.terminate()  # SIGTERM: termcredit run removes its containers
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    deadline = time.monotonic() + RUN_TIMEOUT_S
    procs = [(job, start(*job, 1)) for job in jobs]
    for _, proc in procs:
        wait(proc, deadline)
    # a run that died before its first trial (e.g. its start-up gc raced with containers that
    # other runs on this engine removed: docker NotFound) is tried again
    for job, _ in procs:
        for attempt in range(2, 6):
            if (root / "runs" / job[0] / "result.json").is_file() or time.monotonic() > deadline:
                break
            time.sleep(1.0)
            wait(start(*job, attempt), deadline)
    camp.wall_s = time.monotonic() - t0
    for victim, _, _ in jobs:
        out = root / "runs" / victim
        run_log = (root / f"run-{victim}.log").read_text(errors="replace")
        entries = {}
        res = out / "result.json"
        if res.is_file():
            for t in json.loads(res.read_text())["trials"]:
                entries[Path(t["trial_dir"]).name] = t
        for name in by_victim[victim]:
            k = where[name][1]
            entry = entries.get(f"attempt-{k}")
            traj: dict[str, Any] = {}
            if entry is not None:
                tj = Path(entry["trial_dir"]) / "trajectory.json"
                if tj.is_file():
                    traj = json.loads(tj.read_text())
            camp.views[name] = TrialView(name=name, entry=entry, traj=traj, run_log=run_log)
    request.config._tc_security_wall = camp.wall_s  # reported at the end of the session
    return camp


def pytest_terminal_summary(terminalreporter, config):
    wall = getattr(config, "_tc_security_wall", None)
    if wall is not None:
        terminalreporter.write_line(f"tests/security: attack campaign took {wall:.1f}s")
