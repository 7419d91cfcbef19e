"""`termcredit tasks new NAME`: a working task folder to start from.

The generated task passes ``termcredit tasks check`` as it is (oracle 1.0, nop 0.0, verifier
resources non-empty); every file carries comments that say what it is for and what to change.
With ``parametrized=True`` the data comes from a generator seeded by ``TC_INSTANCE``.
"""

from __future__ import annotations

import re
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

README = """\
# {name}

This folder is a termcredit task in Harbor format (`termcredit tasks new` wrote it; this README
is for task authors: the agent sees only `instruction.md`).

| file | what it is |
|---|---|
| `instruction.md` | the task text the agent is given, verbatim |
| `task.toml` | name, metadata (difficulty, category, tags{ptag}), timeouts, resources |
| `environment/Dockerfile` | the sandbox image: `FROM termcredit/base` plus the task's files |
| `environment/*` | the build context: files the Dockerfile copies in |
| `solution/solve.sh` | the oracle's solution (run by `--agent oracle`; the agent never sees it) |
| `tests/test.sh` | the verifier: copied to `/tests` only after the agent ends; writes `/logs/verifier/reward.txt` |
| `tests/test_*.py` | the state checks `test.sh` runs with the preinstalled pytest |

Workflow:

    termcredit tasks check {dir}/{name}                     # builds, oracle must get 1, nop 0
    termcredit run --task {dir}/{name} --agent oracle      # one trial, files under runs/
    termcredit run --task {dir}/{name} --agent replay:cmds.txt   # try your own commands

Rules of thumb: check the *state* the agent leaves (files, contents, modes, git state, the
output of a program the test runs), never the agent's text; no network at agent or test time
(build-time `apt-get`/`pip` lines are fine but slow); keep the oracle a few commands long.
"""

INSTRUCTION = """\
The file `/app/input.txt` is an application log. Count the lines that contain the word `ERROR`
and write that number (just the number) to `/app/answer.txt`.
"""

TOML = """\
# task.toml: what termcredit needs to know about the task (Harbor format).
schema_version = "1.1"

[task]
name = "local/{name}"           # Harbor wants "org/name" (put yours); termcredit uses "{name}"
description = "Count the ERROR lines of a log file."

[metadata]                      # free-form; `termcredit tasks list` shows these
difficulty = "easy"             # easy | medium | hard
category = "log-analysis"
tags = ["grep", "logs"]{pline}

[agent]
timeout_sec = 300               # the agent's whole episode

[verifier]
timeout_sec = 60                # tests/test.sh
# What happens to the agent's processes when the verifier runs: "kill" stops every one of them
# first; "keep" (the default) leaves them running, traced, for tasks whose tests talk to a
# service the agent started (a web server, a database).
agent_processes = "kill"
# The reward is "suspect" when the verifier executed or loaded a toolchain file (interpreter,
# library, site-packages, .pth, conftest.py, pytest configuration, shell start-up file) that the
# agent created or modified. on_suspect = "zero" gives such a trial reward 0, "flag" keeps the
# reward and records the files; unset, the caller decides (training: zero, `termcredit run`: flag).
# on_suspect = "flag"
# Toolchain files the task's work is to change (absolute globs: `*` within one path component,
# `**` across `/`); `termcredit tasks check` proposes these lines when the oracle's run is suspect.
# agent_may_modify = ["/usr/local/lib/python3*/site-packages/**"]
# logs_max_mb = 16              # copied back from /logs/verifier at most (more: an error)

[environment]
cpus = 1
memory_mb = 512
# storage_mb = 10240            # new files the agent may leave; over it the episode ends
allow_internet = false          # sandboxes run with --network none
"""

PARAM_LINE = """
# The build and the verifier get an instance seed TC_INSTANCE (0, 1, ...): see Dockerfile.
parametrized = true"""

DOCKERFILE = """\
# The sandbox image. termcredit/base is Debian with bash, coreutils, findutils, sed, gawk, grep,
# tar, gzip, git, python3, python3-pytest, procps and strace. RUN apt-get/pip lines work here
# (at build time only: the agent and the tests run without network), but cost build time.
FROM termcredit/base
WORKDIR /app
COPY input.txt /app/input.txt
"""

DOCKERFILE_PARAM = """\
# The sandbox image. termcredit/base is Debian with bash, coreutils, findutils, sed, gawk, grep,
# tar, gzip, git, python3, python3-pytest, procps and strace. RUN apt-get/pip lines work here
# (at build time only: the agent and the tests run without network), but cost build time.
FROM termcredit/base
# Parametrised: each instance seed builds different data. The verifier gets the same number in
# the TC_INSTANCE environment variable and recomputes the answer (tests/gen.py is a copy of
# gen.py). The generator is removed, so the agent must work from the data.
ARG TC_INSTANCE=0
WORKDIR /app
COPY gen.py /tmp/gen.py
RUN python3 /tmp/gen.py "$TC_INSTANCE" /app/input.txt && rm /tmp/gen.py
"""

INPUT = """\
2024-05-01 10:00:01 INFO  server started on :8080
2024-05-01 10:00:07 ERROR db connection refused
2024-05-01 10:00:09 INFO  retrying db connection
2024-05-01 10:00:12 ERROR db connection refused
2024-05-01 10:01:00 WARN  slow request /api/orders (2.3s)
2024-05-01 10:02:44 INFO  request /api/orders 200
2024-05-01 10:03:10 ERROR template not found: invoice.html
"""

GEN = '''\
"""Data of one instance: `gen.py SEED [FILE]` writes the log; the verifier imports lines().

Keep this file identical in environment/ and tests/ (the build runs one, the verifier the
other). Use random.Random(seed) only, so the same seed always gives the same data.
"""
import random
import sys
from pathlib import Path

LEVELS = ["INFO ", "INFO ", "INFO ", "WARN ", "ERROR"]
EVENTS = ["db connection refused", "request /api/orders 200", "cache miss for user 42",
          "slow request /api/cart (1.9s)", "template not found: invoice.html"]


def lines(seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(rng.randint(20, 60)):
        out.append(f"2024-05-01 10:{i // 60:02d}:{i % 60:02d} {rng.choice(LEVELS)} "
                   f"{rng.choice(EVENTS)}")
    return out


if __name__ == "__main__":
    text = "\\n".join(lines(int(sys.argv[1]))) + "\\n"
    Path(sys.argv[2] if len(sys.argv) > 2 else "/app/input.txt").write_text(text)
'''

SOLVE = """\
#!/bin/bash
# The oracle: the commands of a correct solution (`--agent oracle` runs this file as one step).
# Work from the data the agent sees, never from TC_INSTANCE or the tests.
grep -c ERROR /app/input.txt > /app/answer.txt
"""

TEST_SH = """\
#!/bin/bash
# The verifier: termcredit copies tests/ to /tests after the agent has finished and runs
# `bash /tests/test.sh`, traced (the files it reads become the roots of credit assignment).
# The reward is the number in /logs/verifier/reward.txt (1 = solved, 0 = not).
# Write the reward with separate echo lines: redirecting the whole if-block would put pytest's
# output into the reward file.
mkdir -p /logs/verifier
if python3 -m pytest -q -p no:cacheprovider /tests/test_*.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""

TEST_PY = '''\
"""State checks: look at what the agent left behind (files, contents, modes, git state, the
output of a program you run here), never at what the agent said."""
from pathlib import Path


def test_answer():
    assert Path("/app/answer.txt").read_text().strip() == "3"
'''

TEST_PY_PARAM = '''\
"""State checks: look at what the agent left behind (files, contents, modes, git state, the
output of a program you run here), never at what the agent said.

The expected answer is recomputed from the instance seed, not read from /app/input.txt: that
keeps the check right even if the agent edits the data."""
import os
from pathlib import Path

from gen import lines  # tests/gen.py, a copy of environment/gen.py

EXPECTED = sum("ERROR" in ln for ln in lines(int(os.environ.get("TC_INSTANCE", "0"))))


def test_answer():
    assert Path("/app/answer.txt").read_text().strip() == str(EXPECTED)
'''


def new_task(name: str, directory: str | Path = "tasks", *, parametrized: bool = False) -> Path:
    """Write a new task folder ``directory/name``; returns its path."""
    if not NAME_RE.match(name):
        raise ValueError(f"task name {name!r}: use lower-case letters, digits and dashes "
                         "(at most 63 characters, starting with a letter or digit)")
    root = Path(directory) / name
    if root.exists():
        raise ValueError(f"{root}: already exists (pick another name or remove it)")
    files = {
        "README.md": README.format(name=name, dir=Path(directory).as_posix(),
                                   ptag=", parametrized" if parametrized else ""),
        "instruction.md": INSTRUCTION,
        "task.toml": TOML.format(name=name, pline=PARAM_LINE if parametrized else ""),
        "environment/Dockerfile": DOCKERFILE_PARAM if parametrized else DOCKERFILE,
        "solution/solve.sh": SOLVE,
        "tests/test.sh": TEST_SH,
        "tests/test_outputs.py": TEST_PY_PARAM if parametrized else TEST_PY,
    }
    if parametrized:
        files["environment/gen.py"] = GEN
        files["tests/gen.py"] = GEN
    else:
        files["environment/input.txt"] = INPUT
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in ("solution/solve.sh", "tests/test.sh"):
        (root / rel).chmod(0o755)
    return root
