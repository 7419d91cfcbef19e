import subprocess

REPO = "/app/repo"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout


def test_one_new_commit_with_message():
    assert git("rev-list", "--count", "HEAD").strip() == "3"
    assert git("log", "-1", "--format=%s").strip() == "Add slugify helper"
    assert git("log", "-1", "--skip=1", "--format=%s").strip() == "Strip titles"


def test_commit_content():
    changed = set(git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").split())
    assert changed == {".gitignore", "README.md", "src/app.py", "src/textutil.py"}
    assert "def slugify" in git("show", "HEAD:src/textutil.py")
    assert "def url(text)" in git("show", "HEAD:src/app.py")
    assert "slugify()" in git("show", "HEAD:README.md")


def test_junk_ignored_and_tree_clean():
    tracked = git("ls-files").split()
    assert not [f for f in tracked if f.endswith((".log", ".tmp"))]
    for junk in ("server.log", "src/notes.tmp", "ideas.tmp", "new.log"):
        assert subprocess.run(["git", "-C", REPO, "check-ignore", "-q", junk]).returncode == 0, junk
    assert git("status", "--porcelain") == ""
