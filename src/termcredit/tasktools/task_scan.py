"""What a task folder shows without Docker: its Dockerfile's COPY sources, answer material the
agent can reach, verifiers that run a fraction of their cases, and the importer's warnings.

These are warnings about a task's authoring, not fixes: a third-party task stays as its
authors wrote it, and an RL user learns what it lets an agent do (read an encrypted reference
solution whose password the dataset publishes) or what its reward measures (one test case of
four). Each warning names the file and line it comes from.
"""

from __future__ import annotations

import fnmatch
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..tasks.model import Task

_ANSWER_NAME = re.compile(r"solution|oracle|answer|reference|expected", re.I)
_ENCRYPTED_EXT = (".gpg", ".pgp", ".age", ".enc", ".asc", ".7z")
_MOVED = {"solution.sh": "solution/solve.sh", "solution.yaml": "solution/commands.txt",
          "run-tests.sh": "tests/test.sh", "tests": "tests/ (copied in only when the tests run)"}


@dataclass(frozen=True)
class Copy:
    line: int
    sources: list[str]


def dockerfile_copies(dockerfile: Path) -> list[Copy]:
    """The COPY/ADD lines that copy from the build context (not ``--from=`` a stage, not a
    URL), with their sources; continuation lines joined."""
    if not dockerfile.is_file():
        return []
    out, buf, start = [], "", 0
    for n, line in enumerate(dockerfile.read_text(errors="replace").splitlines(), 1):
        if not buf:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        text, buf = (buf + line).strip(), ""
        m = re.match(r"(?i)^(COPY|ADD)\s+(.*)$", text)
        if not m:
            continue
        rest = m.group(2).strip()
        opts = re.findall(r"^(?:--\S+\s+)+", rest)
        if opts and "--from" in opts[0]:
            continue
        rest = rest[len(opts[0]):] if opts else rest
        if rest.startswith("["):
            words = re.findall(r'"((?:[^"\\]|\\.)*)"', rest)
        else:
            words = rest.split()
        srcs = [w for w in words[:-1] if not re.match(r"^[a-z]+://", w)]
        if srcs:
            out.append(Copy(start, srcs))
    return out


def _matches(env: Path, source: str) -> list[Path]:
    rel = source.lstrip("/").removeprefix("./") or "."
    if any(ch in rel for ch in "*?["):
        return [p for p in env.rglob("*") if fnmatch.fnmatch(str(p.relative_to(env)), rel)]
    p = env / rel
    return [p] if p.exists() else []


def missing_copies(env: Path) -> list[str]:
    """A sentence per COPY source that is not in ``env`` (the build would fail on it)."""
    out = []
    for c in dockerfile_copies(env / "Dockerfile"):
        for s in c.sources:
            if s.startswith("$") or _matches(env, s):
                continue
            first = s.lstrip("/").removeprefix("./").split("/")[0]
            moved = _MOVED.get(first)
            why = (f"the importer put {first} in {moved}, outside the image" if moved
                   else f"environment/{s.lstrip('/').removeprefix('./')} does not exist")
            out.append(f"environment/Dockerfile line {c.line}: COPY {s}: {why}, so the image "
                       "build fails")
    return out


def _copied_files(env: Path) -> dict[Path, int]:
    """Files of ``env`` a COPY/ADD puts in the image -> the Dockerfile line."""
    files: dict[Path, int] = {}
    for c in dockerfile_copies(env / "Dockerfile"):
        for s in c.sources:
            for p in _matches(env, s):
                for f in ([p] if p.is_file() else sorted(p.rglob("*"))):
                    if f.is_file() and f.name != "Dockerfile":
                        files.setdefault(f, c.line)
    return files


def _encrypted(path: Path) -> str | None:
    """How ``path`` is encrypted, if it looks so."""
    try:
        head = path.open("rb").read(16)
    except OSError:
        return None
    if head.startswith(b"Salted__"):
        return "openssl enc"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as z:
                if any(i.flag_bits & 1 for i in z.infolist()):
                    return "a password-protected zip"
        except (zipfile.BadZipFile, OSError):
            return None
    if path.suffix.lower() in _ENCRYPTED_EXT:
        return f"a {path.suffix} file"
    return None


def answer_material(task: Task) -> list[str]:
    """Files the image gets that look like answers: named like a solution, encrypted (the key
    is in the dataset when the oracle decrypts it), or equal to a solution file."""
    env = task.environment_dir
    solution_texts = {}
    if task.solution_dir.is_dir():
        solution_texts = {p: p.read_bytes() for p in task.solution_dir.rglob("*") if p.is_file()}
    oracle = b"\n".join(solution_texts.values())
    out = []
    for f, line in sorted(_copied_files(env).items()):
        rel = f.relative_to(env)
        where = f"environment/Dockerfile line {line} copies {rel} into the image"
        how = _encrypted(f)
        if how:
            key = (" the oracle (solution/) decrypts it, so its key is public with the task"
                   if f.name.encode() in oracle else "")
            out.append(f"{where}: {how}, readable by the agent;{key or ' check its key is not public'}"
                       " (answer material within the agent's reach)")
        elif f.read_bytes() in solution_texts.values():
            out.append(f"{where}: the same bytes as a file of solution/ (the answer, readable "
                       "by the agent)")
        elif _ANSWER_NAME.search(f.name):
            out.append(f"{where}: named like answer material, readable by the agent")
    return out


_CASE = re.compile(r"^\s*(TEST_CASE\s*\(|CHECK\s*\(|REQUIRE\s*\(|EXPECT_\w+\s*\(|ASSERT_\w+\s*\()")
_RUN_ALL = "EXERCISM_RUN_ALL_TESTS"


def _defines_run_all(task: Task) -> bool:
    for root in (task.tests_dir, task.environment_dir):
        for p in root.rglob("*") if root.is_dir() else []:
            if p.is_file() and p.stat().st_size < 1_000_000:
                text = p.read_text(errors="replace")
                if re.search(rf"-D\s*{_RUN_ALL}|#\s*define\s+{_RUN_ALL}|"
                             rf"(?:add_definitions|add_compile_definitions|"
                             rf"target_compile_definitions)\([^)]*{_RUN_ALL}", text):
                    return True
    return False


def partial_cases(task: Task) -> list[str]:
    """Test files whose cases mostly do not run: C/C++ exercises that compile only their
    first case unless EXERCISM_RUN_ALL_TESTS is defined, pytest cases marked skip, JS xtest."""
    out = []
    tests = task.tests_dir
    if not tests.is_dir():
        return out
    run_all = None
    for p in sorted(tests.rglob("*")):
        if not p.is_file() or p.stat().st_size > 1_000_000:
            continue
        text = p.read_text(errors="replace")
        rel = f"tests/{p.relative_to(tests)}"
        if _RUN_ALL in text:
            run_all = _defines_run_all(task) if run_all is None else run_all
            if not run_all:
                lines = text.splitlines()
                cases = [i for i, ln in enumerate(lines) if _CASE.match(ln)]
                if any(_CASE.match(ln) and ln.lstrip().startswith("TEST_CASE") for ln in lines):
                    cases = [i for i in cases if lines[i].lstrip().startswith("TEST_CASE")]
                guard = next(i for i, ln in enumerate(lines) if _RUN_ALL in ln)
                ran = sum(1 for i in cases if i < guard)
                out.append(f"{rel}: runs {ran} of {len(cases)} cases (the others are inside "
                           f"#if {_RUN_ALL}, which nothing in tests/ or environment/ defines)")
        elif p.suffix == ".py":
            n = len(re.findall(r"^\s*(?:async\s+)?def test_", text, re.M))
            skipped = len(re.findall(r"^\s*@(?:pytest\.mark\.skip|unittest\.skip)\b(?!if)",
                                     text, re.M))
            if n and skipped:
                out.append(f"{rel}: {skipped} of {n} test functions are marked skip")
        elif p.suffix in (".js", ".ts", ".mjs"):
            n = len(re.findall(r"^\s*(?:x?test|x?it)(?:\.skip)?\s*\(", text, re.M))
            skipped = len(re.findall(r"^\s*(?:xtest|xit|test\.skip|it\.skip)\s*\(", text, re.M))
            if n and skipped:
                out.append(f"{rel}: {skipped} of {n} tests are skipped (xtest/xit/.skip)")
    return out


def import_warnings(task: Task) -> list[str]:
    """The warnings `tasks import` recorded in task.toml ([metadata] import_warnings)."""
    value = task.metadata.get("import_warnings", [])
    return [f"import: {w}" for w in value] if isinstance(value, list) else []


def task_warnings(task: Task) -> list[str]:
    return import_warnings(task) + answer_material(task) + partial_cases(task)
