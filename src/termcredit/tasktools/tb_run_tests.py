"""Terminal-Bench-1 ``run-tests.sh`` -> a Harbor ``tests/test.sh`` that needs no network.

TB1 test scripts download their tools when the tests run (the uv installer, ``uv venv``/``uv
init``, venv activation, ``uv pip install``/``pip install``/``uv add`` of pytest, ``apt-get
install curl``): those steps are removed; ``uv run``/``uvx``/bare ``pytest`` calls become the
preinstalled ``python3 -m pytest``; other test-time packages are collected in the report, for
the importer to install at build time; and the reward is written from pytest's exit status
(TB1 parsed pytest's output instead: all tests passed = resolved).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PYTEST = "python3 -m pytest -p no:cacheprovider"
REWARD = "/logs/verifier/reward.txt"
MARK = "# [termcredit import]"


@dataclass
class ImportReport:
    path: Path
    notes: list[str] = field(default_factory=list)
    pip_packages: list[str] = field(default_factory=list)  # moved to build time
    apt_packages: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    out, buf = [], ""
    for line in text.splitlines():
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += (line.lstrip() if buf else line)[:-1].rstrip() + " "
            continue
        out.append(buf + (line.lstrip() if buf else line))
        buf = ""
    if buf:
        out.append(buf)
    return out


def _split_segments(line: str) -> list[str]:
    """Split a command line into segments and the separators between them (&&, ||, ;),
    outside quotes: ["a", " && ", "b"]."""
    parts, buf, quote, i = [], "", "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            buf += ch
            if ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "\"'":
            quote = ch
        elif line.startswith(("&&", "||"), i) or ch == ";":
            sep = line[i:i + 2] if ch in "&|" else ";"
            j = i + len(sep)
            parts.append(buf)
            parts.append(f" {sep} " if sep != ";" else "; ")
            buf = ""
            i = j
            continue
        buf += ch
        i += 1
    parts.append(buf)
    return parts


_PYTEST_RE = re.compile(r"^(?P<launch>.*?)(?:(?<![\w./=-])python3?\s+-m\s+pytest"
                        r"|(?<![\w./=-])pytest)(?=\s|$)(?P<args>.*)$")
_LAUNCHERS = re.compile(r"^(?:(?:\w+=\S*\s+)*)(?:exec\s+)?(?:(?:uv\s+run|uvx)(?:\s+.*)?)?$")
_PIP_RE = re.compile(r"^(?:uv\s+pip\s+install|uv\s+add|pip3?\s+install|python3?\s+-m\s+pip\s+install)"
                     r"(?:\s+(?P<rest>.*))?$")
_APT_RE = re.compile(r"^(?:sudo\s+)?apt(?:-get)?\s+(?:-\S+\s+)*install(?:\s+(?P<rest>.*))?$")
_DROP = [
    (re.compile(r"^(?:curl|wget)\s.*\|\s*(?:sh|bash)\b.*$"), "a tool installer downloaded at test time"),
    (re.compile(r"^(?:source|\.)\s+\S*\.local/bin/env\S*$"), "the uv installer's environment"),
    (re.compile(r"^(?:source|\.)\s+\S*bin/activate\S*$"), "a virtual environment's activation"),
    (re.compile(r"^uv\s+(?:venv|init|sync|python\s+install)\b.*$"), "uv project/venv set-up"),
    (re.compile(r"^python3?\s+-m\s+venv\b.*$|^virtualenv\b.*$"), "a virtual environment"),
    (re.compile(r"^(?:sudo\s+)?apt(?:-get)?\s+(?:-\S+\s+)*update\b.*$"), "apt-get update (no network)"),
]
_PIP_OPTS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                        "--extra-index-url", "-f", "--find-links", "--python", "-p", "--target"}


def _packages(rest: str) -> tuple[list[str], list[str]]:
    """(package specs, options) of an install command's arguments."""
    pkgs, opts = [], []
    toks = rest.split()
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.startswith("-"):
            opts.append(t)
            if t in _PIP_OPTS_WITH_VALUE and i + 1 < len(toks):
                opts.append(toks[i + 1])
                i += 1
        else:
            pkgs.append(t.strip("'\""))
        i += 1
    return pkgs, opts


def _is_pytest_pkg(spec: str) -> bool:
    return re.match(r"^pytest(?:[=<>!~;\[]|$)", spec) is not None


def _pytest_args(args: str, report: ImportReport) -> str:
    # cut at the first shell operator outside quotes: `|| true` would fake a pass
    quote, cut = "", len(args)
    for i, ch in enumerate(args):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "|;&":
            cut = i
            break
    kept, dropped = args[:cut], args[cut:].strip()
    if dropped:
        report.notes.append(f"run-tests.sh: dropped {dropped!r} after pytest (the reward is "
                            "pytest's own exit status)")
    kept = re.sub(r"\s--ctrf(?:=|\s+)\S+", "", kept)  # pytest-json-ctrf is not installed
    return kept.rstrip()


def _rewrite_segment(seg: str, report: ImportReport) -> tuple[str | None, bool]:
    """(new segment or None to drop it, whether it is a pytest call)."""
    body = seg.strip()
    if not body or body.startswith("#"):
        return seg, False
    for pattern, why in _DROP:
        if pattern.match(body):
            report.notes.append(f"run-tests.sh: removed {body!r} ({why})")
            return None, False
    m = _PIP_RE.match(body)
    if m:
        pkgs, opts = _packages(m.group("rest") or "")
        moved = [p for p in pkgs if not _is_pytest_pkg(p)]
        if any(o in ("-r", "--requirement") for o in opts):
            report.notes.append(f"run-tests.sh: removed {body!r}; install its requirements "
                                "file at build time in environment/Dockerfile")
        for p in moved:
            if p not in report.pip_packages:
                report.pip_packages.append(p)
        report.notes.append(f"run-tests.sh: removed {body!r}"
                            + (f"; moved {' '.join(moved)} to a build-time pip install"
                               if moved else " (pytest is preinstalled)"))
        return None, False
    m = _APT_RE.match(body)
    if m:
        pkgs, _ = _packages(m.group("rest") or "")
        moved = [p for p in pkgs if p not in ("curl", "wget", "ca-certificates")]
        for p in moved:
            if p not in report.apt_packages:
                report.apt_packages.append(p)
        report.notes.append(f"run-tests.sh: removed {body!r}"
                            + (f"; moved {' '.join(moved)} to a build-time apt-get install"
                               if moved else " (only needed to download uv)"))
        return None, False
    m = _PYTEST_RE.match(body)
    if m and _LAUNCHERS.match(m.group("launch").strip()):
        lead = seg[:len(seg) - len(seg.lstrip())]
        return f"{lead}{PYTEST}{_pytest_args(m.group('args'), report)}", True
    uv = re.match(r"^uv\s+run\s+(?:--\S+(?:\s+\S+)?\s+)*(?P<cmd>.*)$", body)
    if uv:
        lead = seg[:len(seg) - len(seg.lstrip())]
        cmd = re.sub(r"^python(?=\s|$)", "python3", uv.group("cmd"))  # Debian has no `python`
        report.notes.append(f"run-tests.sh: {body!r} runs as {cmd!r}")
        return lead + cmd, False
    return seg, False


def convert_run_tests(text: str | None, report: ImportReport) -> str:
    """tests/test.sh from a TB1 run-tests.sh (or from nothing: plain pytest)."""
    head = [
        "#!/bin/bash",
        "# Converted from Terminal-Bench 1 run-tests.sh by `termcredit tasks import`: steps that",
        "# downloaded tools at test time are gone (no network here; pytest is preinstalled) and",
        "# the reward is pytest's exit status: 1 when every test passed, else 0.",
        'export TEST_DIR="${TEST_DIR:-/tests}"',
        "mkdir -p /logs/verifier",
        f"echo 0 > {REWARD}",
    ]
    if text is None:
        report.notes.append("no run-tests.sh: the tests run as plain pytest on "
                            "$TEST_DIR/test_outputs.py")
        text = 'pytest "$TEST_DIR/test_outputs.py" -rA\n'
    body: list[str] = []
    n_pytest = 0
    for line in _logical_lines(text):
        if line.startswith("#!"):
            continue
        parts = _split_segments(line)
        segs, seps = parts[0::2], parts[1::2]
        new_segs, pytest_at, changed = [], [], False
        for k, seg in enumerate(segs):
            new, is_pytest = _rewrite_segment(seg, report)
            changed = changed or new != seg
            if new is not None:
                new_segs.append((k, new))
                if is_pytest:
                    pytest_at.append(len(new_segs) - 1)
        if not changed:
            body.append(line)
            continue
        if not new_segs:
            if line.strip():
                body.append(f"{MARK} removed: {line.strip()}")
            continue
        if pytest_at:
            n_pytest += len(pytest_at)
            # pytest gets a line of its own; `pytest ... || fallback` loses the fallback,
            # which would turn a failing run into a pass
            skip = False
            for pos, (k, s) in enumerate(new_segs):
                if skip and seps[k - 1].strip() == "||":
                    report.notes.append(f"run-tests.sh: dropped '|| {s.strip()}' after pytest "
                                        "(the reward is pytest's own exit status)")
                    continue
                skip = pos in pytest_at
                body.append(_wrap_pytest(s) if skip else s.strip())
            continue
        rebuilt = new_segs[0][1]
        for k, s in new_segs[1:]:
            rebuilt += seps[k - 1] + s.strip()
        body.append(rebuilt)
    if n_pytest == 0:
        report.notes.append("run-tests.sh has no pytest call: the reward is the script's exit "
                            "status")
        return "\n".join(head[:-1] + ["tc_tests() {", ":", *body, "}",
                                       f"if (tc_tests); then echo 1 > {REWARD}; "
                                       f"else echo 0 > {REWARD}; fi", ""])
    return "\n".join(head + body) + "\n"


def _wrap_pytest(cmd: str) -> str:
    lead = cmd[:len(cmd) - len(cmd.lstrip())]
    return (f'{lead}if {cmd.strip()} && [ -z "${{tc_failed:-}}" ]; then echo 1 > {REWARD}; '
            f"else tc_failed=1; echo 0 > {REWARD}; fi")
