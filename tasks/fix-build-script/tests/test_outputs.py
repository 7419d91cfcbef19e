import shutil
import subprocess
from pathlib import Path

APP = Path("/app/webapp")
CSS = "* { margin: 0; }\n.grid { display: grid; }\nbody { color: #222; }\n"
JS = 'const api = "/api";\nfunction load() { return fetch(api); }\nload();\n'
HTML = ('<!doctype html>\n<title>webapp 2.7.1</title>\n<link rel="stylesheet" href="app.css">\n'
        '<script src="app.js"></script>\n<footer>v2.7.1</footer>\n')


def build():
    shutil.rmtree(APP / "dist", ignore_errors=True)
    return subprocess.run(["bash", "build.sh"], cwd=APP, capture_output=True, text=True)


def test_build_from_clean_tree():
    out = build()
    assert out.returncode == 0, out.stderr
    assert (APP / "dist/index.html").read_text() == HTML
    assert (APP / "dist/app.css").read_text() == CSS
    assert (APP / "dist/app.js").read_text() == JS
    assert (APP / "dist/assets/logo.svg").read_text() == "LOGO\n"
    assert (APP / "dist/assets/robots.txt").read_text() == "User-agent: *\n"


def test_failing_step_fails_the_build():
    order = APP / "src/css/ORDER"
    saved = order.read_text()
    try:
        order.write_text(saved + "missing.css\n")
        assert build().returncode != 0
    finally:
        order.write_text(saved)
