import os
import subprocess

REPO = "/app/repo"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout


def test_merge_concluded_on_main():
    assert not os.path.exists(f"{REPO}/.git/MERGE_HEAD")
    assert git("symbolic-ref", "--short", "HEAD").strip() == "main"
    parents = git("log", "-1", "--format=%P").split()
    assert len(parents) == 2 and parents[1] == git("rev-parse", "feature").strip()
    assert git("log", "-1", "--format=%s", parents[0]).strip() == "README"  # the old main
    assert git("status", "--porcelain", "--untracked-files=no") == ""


def test_resolution():
    settings = git("show", "HEAD:settings.py")
    assert "<<<<<<<" not in settings and ">>>>>>>" not in settings and "=======" not in settings
    ns: dict = {}
    exec(settings, ns)
    assert (ns["NAME"], ns["TIMEOUT"], ns["RETRIES"], ns["BACKOFF"], ns["MAX_SIZE_MB"]) == (
        "uploader", 60, 3, 1.5, 25)
    assert "def delays" in git("show", "HEAD:retry.py")
    assert git("show", "HEAD:README.md") == "# uploader\n"


def test_code_runs():
    out = subprocess.run(["python3", "-c", "import main, retry; print(retry.delays())"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["uploader 60", "[1.0, 1.5, 2.25]"]
