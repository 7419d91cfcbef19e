"""Commands of a Terminal-Bench-1 ``run-tests.sh``, one at a time: what each becomes in
``tests/test.sh`` (kept, removed, rewritten, or a pytest call), with the notes and warnings it
gives and the packages it moves to build time (``ImportReport``). ``tb_run_tests`` puts the
statements back together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from .tb_shell import Cmd, command_of, line_of, text_of

PYTEST = "python3 -m pytest -p no:cacheprovider"
REWARD = "/logs/verifier/reward.txt"
MARK = "# [termcredit import]"
PIP_INSTALL = "python3 -m pip install --no-cache-dir --break-system-packages"


@dataclass
class ImportReport:
    path: Path
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the result may not work as the authors'
    pip_packages: list[str] = field(default_factory=list)  # moved to build time
    apt_packages: list[str] = field(default_factory=list)
    build_steps: list[str] = field(default_factory=list)  # extra Dockerfile RUN lines


_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
_PIP_OPTS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                        "--extra-index-url", "-f", "--find-links", "--python", "-p", "--target",
                        "-t", "--prefix", "--root", "--src"}
_UV_ONLY = {"--system", "--break-system-packages", "-q", "--quiet"}  # not passed on
_UV_RUN_OPTS = {"--with", "-w", "--python", "-p", "--project", "--directory", "--extra",
                "--group", "--env-file", "--index", "--from", "--with-requirements"}


def _is_pytest_pkg(spec: str) -> bool:
    return re.match(r"^pytest(?:[=<>!~;\[]|$)", spec) is not None


def _is_local(spec: str) -> bool:
    return (spec.startswith((".", "/", "~")) or "/" in spec and "://" not in spec
            or spec.endswith((".whl", ".tar.gz", ".zip")))


def _skip_opts(args: list[str], i: int, with_value: set[str]) -> tuple[int, list[str]]:
    """Index of the first non-option argument from ``i``; the values of ``--with``."""
    withs = []
    while i < len(args) and args[i].startswith("-"):
        opt, _, inline = args[i].partition("=")
        if opt in with_value and not inline:
            if opt in ("--with", "-w") and i + 1 < len(args):
                withs.append(args[i + 1])
            i += 2
        else:
            if opt in ("--with", "-w") and inline:
                withs.append(inline)
            i += 1
    return i, withs


def _norm(path: str) -> str:
    return path.removeprefix("./").rstrip("/")




class Commands:
    """What each command becomes; ``src`` is the script's bytes."""

    def __init__(self, text: str, report: ImportReport):
        self.src = text.encode("utf-8", "surrogateescape")
        self.report = report
        self.venvs: set[str] = set()  # virtual environments the script itself creates
        self.cwd: str | None = None  # the last top-level `cd /abs`, for build steps

    def note(self, node: Node, msg: str) -> None:
        self.report.notes.append(f"run-tests.sh line {line_of(node)}: {msg}")

    def warn(self, node: Node, msg: str) -> None:
        self.report.warnings.append(f"run-tests.sh line {line_of(node)}: {msg}")

    def pytest_args(self, cmd: Cmd) -> list[str] | None:
        """The arguments, as written, of a pytest call (None: not one)."""
        n, a = cmd.name, cmd.args
        start = None
        if n in ("pytest", "py.test"):
            start = 0
        elif _PYTHON.fullmatch(n) and a[:2] == ["-m", "pytest"]:
            start = 2
        elif n in ("uv", "uvx"):
            i0 = 1 if n == "uv" else 0
            if n == "uv" and a[:1] != ["run"]:
                return None
            i, withs = _skip_opts(a, i0, _UV_RUN_OPTS)
            if i < len(a) and (a[i] == "pytest" or _is_pytest_pkg(a[i]) and n == "uvx"):
                start = i + 1
            elif i + 2 < len(a) and _PYTHON.fullmatch(a[i]) and a[i + 1:i + 3] == ["-m", "pytest"]:
                start = i + 3
            if start is not None:
                # pytest is preinstalled; its ctrf plugin only served --ctrf, dropped below
                self.add_pip([w for w in withs if not _is_pytest_pkg(w)
                              and not w.startswith("pytest-json-ctrf")])
        if start is None:
            return None
        out, raw, k = [], cmd.raw[start:], 0
        while k < len(raw):  # pytest-json-ctrf is not installed: its option would fail
            if raw[k] == "--ctrf":
                k += 2
                continue
            if not raw[k].startswith("--ctrf="):
                out.append(raw[k])
            k += 1
        return out

    def add_pip(self, pkgs: list[str]) -> None:
        for p in pkgs:
            if p not in self.report.pip_packages:
                self.report.pip_packages.append(p)

    def pip_install(self, node: Node, cmd: Cmd, args: list[str], raw: list[str]) -> None:
        body = text_of(node).strip()
        pkgs, local, kept, i = [], [], [], 0
        while i < len(args):
            a, r = args[i], raw[i]
            if a == "":
                self.warn(node, f"{body!r}: an argument ({r}) is only known when the script "
                          "runs; not installed (install it in environment/Dockerfile)")
            elif a in ("-r", "--requirement") and i + 1 < len(args):
                self.warn(node, f"{body!r}: the requirements file {raw[i + 1]} was installed "
                          "at test time and is not now (install it in environment/Dockerfile)")
                i += 1
            elif a in ("-e", "--editable") and i + 1 < len(args):
                local.append(f"{r} {raw[i + 1]}")
                i += 1
            elif a.startswith("-"):
                if a in _PIP_OPTS_WITH_VALUE and i + 1 < len(args):
                    if a not in ("-p", "--python"):
                        kept += [r, raw[i + 1]]
                    i += 1
                elif a not in _UV_ONLY:
                    kept.append(r)
            elif _is_local(a):
                local.append(r)
            elif not _is_pytest_pkg(a):
                pkgs.append(a)
            i += 1
        if local:
            where = f"cd {self.cwd} && " if self.cwd else ""
            self.report.build_steps.append(f"RUN {where}{PIP_INSTALL} {' '.join(kept + local)}")
            self.warn(node, f"{body!r} installs {' '.join(local)} at build time now, before "
                      "the agent works (the test-time install saw the agent's changes; "
                      f"{'a path relative to the Dockerfile WORKDIR' if not self.cwd else 'run in ' + self.cwd})")
        self.add_pip(pkgs)
        self.note(node, f"removed {body!r}" + (f"; moved {' '.join(pkgs)} to a build-time pip "
                                               "install" if pkgs else
                                               " (pytest is preinstalled)" if not local else ""))

    def tail(self, node: Node, end: int | None) -> str:
        """The text from ``node``'s end to ``end`` (its redirects)."""
        return self.src[node.end_byte:end].decode("utf-8", "surrogateescape") if end else ""

    def classify(self, unit: Node, end: int | None = None) -> tuple[str, str | None]:
        """("keep"|"drop"|"text"|"pytest", new text) for one unit of a list or statement;
        ``end``: where its text ends, when a redirect after it belongs to it."""
        if unit.type == "pipeline":
            cmds = [command_of(c) for c in unit.children if c.type not in ("|", "|&")]
            first, last = cmds[0], cmds[-1]
            if first and last and first.name in ("curl", "wget") and last.name in ("sh", "bash"):
                self.note(unit, f"removed {text_of(unit)!r} (a tool installer downloaded at "
                          "test time)")
                return "drop", None
            args = self.pytest_args(first) if first else None
            if first and args is not None:
                head = " ".join(first.assigns + [PYTEST] + args)
                rest = self.tail(first.node, end or unit.end_byte)
                # the pipeline's status is its last command's: pipefail keeps pytest's failure
                return "pytest", f"(set -o pipefail; {head}{rest})"
            return "keep", None
        cmd = command_of(unit)
        if cmd is None:
            return "keep", None
        args = self.pytest_args(cmd)
        if args is not None:
            return "pytest", " ".join(cmd.assigns + [PYTEST] + args) + self.tail(
                cmd.node, end or unit.end_byte)
        kind, new = self.classify_cmd(unit, cmd)
        if kind == "text":
            new = (new or "") + self.tail(cmd.node, end or unit.end_byte)
        return kind, new

    def classify_cmd(self, unit: Node, cmd: Cmd) -> tuple[str, str | None]:
        n, a, body = cmd.name, cmd.args, text_of(unit).strip()
        top = unit.parent if unit.parent is not None and unit.parent.type == "list" else unit
        if n == "cd" and len(a) == 1 and a[0].startswith("/") and top.parent is not None \
                and top.parent.type == "program":
            self.cwd = a[0]
        if n in ("pip", "pip3") and a[:1] == ["install"]:
            self.pip_install(unit, cmd, a[1:], cmd.raw[1:])
            return "drop", None
        if _PYTHON.fullmatch(n) and a[:3] == ["-m", "pip", "install"]:
            self.pip_install(unit, cmd, a[3:], cmd.raw[3:])
            return "drop", None
        if n == "uv" and (a[:2] == ["pip", "install"] or a[:1] == ["add"]):
            k = 2 if a[0] == "pip" else 1
            self.pip_install(unit, cmd, a[k:], cmd.raw[k:])
            return "drop", None
        if n in ("apt-get", "apt") and "install" in a:
            pkgs = [p for p in a[a.index("install") + 1:] if p and not p.startswith("-")]
            moved = [p for p in pkgs if p not in ("curl", "wget", "ca-certificates")]
            for p in moved:
                if p not in self.report.apt_packages:
                    self.report.apt_packages.append(p)
            self.note(unit, f"removed {body!r}" + (f"; moved {' '.join(moved)} to a build-time "
                      "apt-get install" if moved else " (only needed to download uv)"))
            return "drop", None
        if n in ("apt-get", "apt") and "update" in a:
            self.note(unit, f"removed {body!r} (no network when tests run)")
            return "drop", None
        if n in ("source", ".") and a:
            target = a[0] or cmd.raw[0]
            if target.endswith(".local/bin/env"):
                self.note(unit, f"removed {body!r} (the uv installer's environment)")
                return "drop", None
            if target.endswith("bin/activate"):
                venv = _norm(target[:-len("bin/activate")])
                if venv in self.venvs:
                    self.note(unit, f"removed {body!r} (the script's own virtual environment)")
                    return "drop", None
                self.warn(unit, f"kept {body!r}: it activates an environment the script did not "
                          f"create; pytest then runs as `{PYTEST}` inside it, which needs "
                          "pytest installed there")
                return "keep", None
            if a[0] == "activate":
                self.warn(unit, f"kept {body!r} (a conda activation): pytest then runs inside "
                          "that environment, which needs pytest installed there")
            return "keep", None
        if n == "conda" and a[:1] == ["activate"]:
            self.warn(unit, f"kept {body!r}: pytest then runs as `{PYTEST}` inside that "
                      "environment, which needs pytest installed there")
            return "keep", None
        if n == "uv" and a[:1] == ["venv"] or _PYTHON.fullmatch(n) and a[:2] == ["-m", "venv"] \
                or n == "virtualenv":
            rest = [x for x in a[(1 if n == "uv" else 2 if n != "virtualenv" else 0):]
                    if not x.startswith("-")]
            self.venvs.add(_norm(rest[0]) if rest else ".venv")
            self.note(unit, f"removed {body!r} (a test-time virtual environment)")
            return "drop", None
        if n == "uv" and a[:1] in (["init"], ["python"]):
            self.note(unit, f"removed {body!r} (uv project set-up)")
            return "drop", None
        if n == "uv" and a[:1] == ["sync"]:
            self.warn(unit, f"removed {body!r}: the project's dependencies it installed at test "
                      "time are not installed now (install them in environment/Dockerfile)")
            return "drop", None
        if n == "uv" and a[:1] == ["run"]:
            i, withs = _skip_opts(a, 1, _UV_RUN_OPTS)
            self.add_pip(withs)
            if i >= len(a):
                return "keep", None
            rest = cmd.raw[i:]
            if _PYTHON.fullmatch(a[i]):
                rest = ["python3"] + rest[1:]  # Debian has no `python`
            elif a[i].endswith(".py"):
                rest = ["python3"] + rest  # uv run runs a script with the project's Python
            new = " ".join(cmd.assigns + rest)
            self.warn(unit, f"{body!r} runs as {new!r}: `uv run` also set up the project's "
                      "environment, which this does not")
            return "text", new
        return "keep", None

    # ------------------------------------------------------------------ the statements
