"""Third-party tasks as their authors meant them: the base with the Python the image asks for,
one honest line for a build step that cannot work here, and a check without an oracle.
Real Docker; the trixie base is built on first use (about a minute with debootstrap)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
FLOAT_TOTAL = FIXTURES / "tb1" / "float-total"


def termcredit(*args: str, timeout: float = 540) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termcredit.cli", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_bases_are_listed_and_carry_the_python_they_say(client):
    from termcredit.sandbox import ensure_base_image

    refs = {name: ensure_base_image(client, name=name) for name in ("bookworm", "trixie")}
    proc = termcredit("image", "base", "--list", timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("│")[1].strip(): line for line in proc.stdout.splitlines()
            if line.startswith("│")}
    assert set(rows) == {"bookworm*", "trixie"}
    for name, python in (("bookworm", "3.11"), ("trixie", "3.13")):
        row = rows[name + ("*" if name == "bookworm" else "")]
        assert f" {python} " in row and refs[name] in row and "yes," in row
        out = client.containers.run(refs[name], ["python3", "--version"], remove=True)
        assert out.decode().startswith(f"Python {python}.")


def test_a_python_3_13_task_passes_only_on_the_trixie_base(tmp_path):
    """A TB1 task FROM t-bench/python-3-13 whose answer is what 3.13's sum() prints: with the
    built-in map it gets trixie and passes; mapped to bookworm (3.11) its own oracle fails."""
    task = tmp_path / "tasks" / "float-total"
    proc = termcredit("tasks", "import", str(FLOAT_TOTAL), "--out", str(task), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (task / "solution" / "commands.txt").is_file()  # solution.yaml stays a replay
    proc = termcredit("tasks", "check", str(task), "--out", str(tmp_path / "check"))
    report = f"{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "1/1 task(s) passed" in proc.stdout, report
    assert "trixie (3.13)" in proc.stdout, report  # the table says which base it got

    old = tmp_path / "bookworm.toml"
    old.write_text('[image_map]\n"ghcr.io/laude-institute/t-bench/python-3-*" = "base:bookworm"\n')
    proc = termcredit("tasks", "check", str(task), "--image-map", str(old),
                      "--out", str(tmp_path / "check-3.11"))
    text = flat(proc.stdout)
    assert proc.returncode == 1, text
    assert "bookworm (3.11)" in text and "0/1 task(s) passed" in text
    assert "float-total: oracle (instance 0" in text and "reward 0, expected 1" in text


def test_a_task_without_an_oracle_passes_with_a_known_good_replay(tmp_path):
    task = tmp_path / "tasks" / "float-total"
    proc = termcredit("tasks", "import", str(FLOAT_TOTAL), "--out", str(task), timeout=60)
    assert proc.returncode == 0, proc.stderr
    replay = tmp_path / "known-good.txt"
    shutil.move(task / "solution" / "commands.txt", replay)
    shutil.rmtree(task / "solution")
    proc = termcredit("tasks", "check", str(task), "--out", str(tmp_path / "c1"))
    assert proc.returncode == 1
    assert "--solution replay:FILE" in flat(proc.stdout)  # says how to check it

    proc = termcredit("tasks", "check", str(task), "--solution", f"replay:{replay}",
                      "--out", str(tmp_path / "c2"))
    report = f"{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "1/1 task(s) passed" in proc.stdout, report
    assert {p.name for p in (tmp_path / "c2").iterdir()} == {"replay-0", "nop-0"}


def test_a_ppa_line_gets_one_line_with_reason_and_remedy(tmp_path):
    task = FIXTURES / "tasks" / "ppa-line"
    proc = termcredit("image", "task", str(task), timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    first, *rest = proc.stderr.splitlines()
    dockerfile = task / "environment" / "Dockerfile"
    assert first.startswith(f"error: {dockerfile}:5: `RUN add-apt-repository -y "
                            "ppa:deadsnakes/ppa && apt-get update` needs Ubuntu's tooling"), first
    assert "Debian trixie base (Python 3.13)" in first and "Remedy: edit the line" in first
    assert "(the build stopped at line 4" in first  # Debian trixie has no software-properties
    assert rest[0].startswith(f"{dockerfile}: build failed at Step 2/")  # then the details
