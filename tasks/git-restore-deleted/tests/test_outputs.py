import subprocess

REPO = "/app/repo"
DEFAULTS = "[app]\nname = shipyard\n\n[server]\nport = 8080\nthreads = 8\n"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout


def test_history_kept_and_one_restore_commit():
    subjects = git("log", "--format=%s").splitlines()
    assert subjects == ["Restore defaults.ini", "Docs", "Cleanup: move config to deployment",
                        "Add README", "Tune server defaults", "Initial app"]


def test_restored_content_committed():
    assert git("show", "HEAD:config/defaults.ini") == DEFAULTS
    assert git("status", "--porcelain") == ""


def test_app_runs():
    out = subprocess.run(["python3", "app.py"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "shipyard on port 8080 with 8 threads"
