"""`termcredit tasks import`: a Terminal-Bench-1 task folder -> a Harbor-format task folder.

TB1 layout (harness.md §1.1): ``task.yaml`` (instruction, author_name/author_email,
difficulty, category, tags, parser_name, max_agent_timeout_sec, max_test_timeout_sec, ...),
``Dockerfile`` (+ build files), ``docker-compose.yaml`` (ignored: termcredit starts its own
container), ``run-tests.sh`` (optional), ``solution.sh`` or ``solution.yaml``, ``tests/``.

What changes on the way (harness.md §1.7, the offline conversion):

* ``task.yaml`` -> ``instruction.md`` + ``task.toml`` (timeouts, metadata, authors; the
  canary comment is kept);
* the Dockerfile and every other build file -> ``environment/``; ``FROM`` stays as written
  (the image map builds t-bench images on the termcredit base);
* ``solution.sh`` -> ``solution/solve.sh`` (``solution.yaml``'s commands become its lines);
* ``tests/`` is copied, and ``run-tests.sh`` becomes ``tests/test.sh``: steps that download
  tools at test time (the uv installer, ``uv venv``/``uv init``, venv activation,
  ``uv pip install``/``pip install``/``uv add`` of pytest, ``apt-get install curl``) are
  removed; ``uv run``/``uvx``/bare ``pytest`` calls become the preinstalled
  ``python3 -m pytest``; other test-time packages move to a build-time ``RUN`` line in the
  Dockerfile (no network when tests run); and the reward is written from pytest's exit status
  (TB1 parsed pytest's output instead: all tests passed = resolved).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import TaskError, load_task

SKIP_FILES = {"task.yaml", "task.yml", "docker-compose.yaml", "docker-compose.yml",
              "run-tests.sh", "solution.sh", "solution.yaml", "solution.yml", "tests"}
DEFAULT_AGENT_TIMEOUT = 360.0  # TB1 defaults (harness.md §1.1)
DEFAULT_TEST_TIMEOUT = 60.0
PYTEST = "python3 -m pytest -p no:cacheprovider"
REWARD = "/logs/verifier/reward.txt"
MARK = "# [termcredit import]"


@dataclass
class ImportReport:
    path: Path
    notes: list[str] = field(default_factory=list)
    pip_packages: list[str] = field(default_factory=list)  # moved to build time
    apt_packages: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- task.yaml


def load_yaml(text: str) -> Any:
    """task.yaml's content: PyYAML when it is installed, else the subset reader below."""
    try:
        import yaml
    except ImportError:
        return mini_yaml(text)
    return yaml.safe_load(text)


def _scalar(raw: str) -> Any:
    s = raw.strip()
    if not s:
        return None
    if s[0] == '"' and s.endswith('"') and len(s) >= 2:
        return json.loads(s) if "\\" in s else s[1:-1]
    if s[0] == "'" and s.endswith("'") and len(s) >= 2:
        return s[1:-1].replace("''", "'")
    if s[0] == "[" and s.endswith("]"):
        inner = s[1:-1].strip()
        return [_scalar(x) for x in _split_flow(inner)] if inner else []
    low = s.lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low in ("null", "~"):
        return None
    for cast in (int, float):
        try:
            return cast(s)
        except ValueError:
            pass
    return s


def _split_flow(inner: str) -> list[str]:
    parts, buf, quote = [], "", ""
    for ch in inner:
        if quote:
            buf += ch
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            buf += ch
        elif ch == ",":
            parts.append(buf)
            buf = ""
        else:
            buf += ch
    parts.append(buf)
    return [p for p in parts if p.strip()]


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def mini_yaml(text: str) -> dict[str, Any]:
    """The YAML subset TB1 task.yaml files use: top-level ``key: value`` pairs with plain,
    quoted or flow-list values, block scalars (``|``, ``|-``, ``|+``, ``>``, ``>-``), block
    lists (``- item``), and comments."""
    lines = text.splitlines()
    out: dict[str, Any] = {}
    i = 0
    key_re = re.compile(r"^([A-Za-z_][\w-]*)\s*:(?:\s+(.*))?$")
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#") or line[0] in " \t":
            i += 1
            continue
        m = key_re.match(line.rstrip())
        if not m:
            raise ValueError(f"line {i + 1}: not a 'key: value' line: {line!r}")
        key, rest = m.group(1), (m.group(2) or "")
        i += 1
        block = re.match(r"^([|>])([+-]?)\s*(#.*)?$", rest.strip())
        if block:
            body: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i][0] in " \t"):
                body.append(lines[i])
                i += 1
            indents = [len(b) - len(b.lstrip()) for b in body if b.strip()]
            cut = min(indents) if indents else 0
            body = [b[cut:] for b in body]
            while body and not body[-1].strip():
                body.pop()
            if block.group(1) == ">":
                paras, cur = [], []
                for b in body:
                    if b.strip():
                        cur.append(b.strip())
                    else:
                        paras.append(" ".join(cur))
                        cur = []
                paras.append(" ".join(cur))
                value = "\n".join(paras)
            else:
                value = "\n".join(body)
            out[key] = value if block.group(2) == "-" else value + "\n"
            continue
        rest = _strip_comment(rest)
        if rest:
            # a quoted or plain scalar may continue on more-indented lines
            while (i < len(lines) and lines[i].strip() and lines[i][0] in " \t"
                   and not lines[i].lstrip().startswith("- ")):
                rest += " " + lines[i].strip()
                i += 1
            out[key] = _scalar(rest)
            continue
        items: list[Any] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("- ")
                                  or lines[i].lstrip() == "-" or lines[i].lstrip().startswith("#")):
            item = lines[i].strip()
            i += 1
            if item.startswith("-"):
                items.append(_scalar(_strip_comment(item[1:])))
        out[key] = items if items else None
    return out


# --------------------------------------------------------------------------- run-tests.sh


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


def _solution_from_yaml(text: str, file: Path) -> str:
    data = load_yaml(text)
    if not isinstance(data, list):
        raise TaskError(file, "must be a list of {command: ...} entries")
    lines = ["#!/bin/bash", "# From Terminal-Bench 1 solution.yaml: one line per command."]
    for k, entry in enumerate(data):
        cmd = entry.get("command") if isinstance(entry, dict) else entry
        if not isinstance(cmd, str):
            raise TaskError(file, "each entry needs a 'command' string", f"[{k}].command")
        lines.append(cmd.rstrip("\n"))
    return "\n".join(lines) + "\n"


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
    try:
        data = load_yaml(raw)
    except Exception as exc:  # yaml.YAMLError or the subset reader's ValueError
        raise TaskError(yaml_path, f"not readable YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskError(yaml_path, "must be a mapping of fields")
    instruction = data.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(yaml_path, "must be a non-empty string", "instruction")
    if not (src / "Dockerfile").is_file():
        raise TaskError(src / "Dockerfile", "missing (termcredit builds the task image from it)")
    agent_timeout = _number(data, "max_agent_timeout_sec", DEFAULT_AGENT_TIMEOUT, yaml_path)
    test_timeout = _number(data, "max_test_timeout_sec", DEFAULT_TEST_TIMEOUT, yaml_path)

    dest = Path(out) if out else Path(tasks_dir) / src.name
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
        extra.append("RUN python3 -m pip install --no-cache-dir --break-system-packages "
                     + " ".join(report.pip_packages))
    dockerfile = env / "Dockerfile"
    docker_text = dockerfile.read_text(errors="replace")
    if extra:
        docker_text = (docker_text.rstrip("\n") + "\n\n" + f"{MARK} test dependencies that "
                       "run-tests.sh installed at test time (no network then):\n"
                       + "\n".join(extra) + "\n")
        dockerfile.write_text(docker_text)
    for m in re.finditer(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*(.+)$", docker_text, re.I | re.M):
        for source in m.group(1).split()[:-1]:
            name = source.strip("\"'[],").split("/")[0]
            if name and not name.startswith(("$", "http")) and not (env / name).exists():
                report.notes.append(f"environment/Dockerfile copies {source!r}, which is not "
                                    "in environment/ (TB1 tasks must not copy tests or "
                                    "solutions into the image)")

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
            (sol / "solve.sh").write_text(_solution_from_yaml(sy.read_text(), sy))
        else:
            report.notes.append("no solution.sh or solution.yaml: the oracle cannot run")
    if (sol / "solve.sh").is_file():
        (sol / "solve.sh").chmod(0o755)

    # instruction.md, task.toml
    (dest / "instruction.md").write_text(instruction.strip() + "\n")
    (dest / "task.toml").write_text(_task_toml(src, raw, data, agent_timeout, test_timeout,
                                               report))
    load_task(dest)  # the result must load; a TaskError here names the file and field
    return report


def _task_toml(src: Path, raw: str, data: dict[str, Any], agent_timeout: float,
               test_timeout: float, report: ImportReport) -> str:
    lines = [ln for ln in raw.splitlines() if ln.startswith("#")][:3]  # the canary comment
    lines += [f"# Imported from Terminal-Bench 1 ({src.name}) by `termcredit tasks import`.",
              'schema_version = "1.1"', "", "[task]", f"name = {_toml_str(src.name)}"]
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
        report.notes.append(f"parser_name {parser!r}: termcredit's reward is pytest's exit "
                            "status, check that it means the same")
    if data.get("run_tests_in_same_shell"):
        report.notes.append("run_tests_in_same_shell: the verifier runs in a fresh shell of the "
                            "same container (files persist, shell state does not)")
    lines += ["", "[agent]", f"timeout_sec = {agent_timeout:g}", "", "[verifier]",
              f"timeout_sec = {test_timeout:g}", 'env = { TEST_DIR = "/tests" }', "",
              "[environment]", "cpus = 1", "memory_mb = 2048", "allow_internet = false", ""]
    return "\n".join(lines)
