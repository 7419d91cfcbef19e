import subprocess

REPO = "/app/site"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=True).stdout


def test_on_main_and_clean():
    assert git("symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git("status", "--porcelain") == ""


def test_lost_changes_on_main():
    about = git("show", "main:pages/about.html")
    assert "I build things and I write about them." in about
    assert "Contact: me@example.com" in about
    assert "<li>shipyard</li>" in git("show", "main:pages/projects.html")


def test_main_work_kept():
    assert git("show", "main:site.yml") == "title: My site\ntheme: dark\n"
    subjects = git("log", "--format=%s", "main").splitlines()
    assert "Dark theme" in subjects and "Site skeleton" in subjects
