"""The verifier's import guard (sandbox/verifier_guard.py), in a child interpreter on this host:
a trusted folder stands for the image's toolchain, another for /tests, a third for the agent's
working directory, which comes first on sys.path as `python3 -m pytest` puts it."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from termcredit.sandbox.verifier_guard import is_runner

GUARD = Path(__file__).resolve().parents[2] / "src" / "termcredit" / "sandbox" / "verifier_guard.py"


@pytest.mark.parametrize("argv,runner", [
    (["python3", "-m", "pytest", "-q", "/tests/test_outputs.py"], True),
    (["python3", "-mpytest"], True),
    (["python3", "-B", "-X", "dev", "-m", "py.test"], True),
    (["python3", "-m", "unittest", "discover"], True),
    (["/usr/bin/python3", "/usr/bin/pytest", "/tests"], True),
    (["python3", "/usr/local/bin/py.test-3"], True),
    (["python3", "-m", "inventory"], False),
    (["python3", "-c", "import pytest; pytest.main()"], False),
    (["python3", "/app/pytest_helper.py"], False),
    (["python3", "-W", "ignore", "/tests/run.py"], False),
    (["python3"], False),
])
def test_which_processes_are_test_runners(argv, runner):
    assert is_runner(argv) is runner


def _tree(tmp_path: Path) -> dict[str, Path]:
    tool, tests, app = tmp_path / "usr", tmp_path / "tests", tmp_path / "app"
    files = {
        tool / "libx.py": "WHO = 'toolchain'\n",
        tests / "test_outputs.py": "import answer\nfrom importlib import import_module\n"
                                   "import_module('dynamic')\n",
        app / "libx.py": "WHO = 'agent'\n",
        app / "answer.py": "import helper\nVALUE = helper.VALUE\n",
        app / "helper.py": "VALUE = 'helper'\n",
        app / "dynamic.py": "WHO = 'dynamic'\n",
        app / "stray.py": "WHO = 'stray'\n",
        app / "tcplug-1.0.dist-info" / "METADATA": "Metadata-Version: 2.1\nName: tcplug\n"
                                                   "Version: 1.0\n",
        app / "tcplug-1.0.dist-info" / "entry_points.txt": "[pytest11]\ntcplug = stray\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {"tool": tool, "tests": tests, "app": app}


PROBE = textwrap.dedent("""
    import importlib.util, json, sys
    tool, tests, app, runner = sys.argv[1:5]
    sys.path[:0] = [app, tool, tests]
    spec = importlib.util.spec_from_file_location("guard", sys.argv[5])
    guard = importlib.util.module_from_spec(spec); spec.loader.exec_module(guard)
    argv = ["python3", "-m", "pytest"] if runner == "1" else ["python3", "-m", "inventory"]
    # the interpreter's own library stands for the image's /usr
    lib = [p + "/" for p in {sys.base_prefix, sys.prefix}]
    guard.install(argv, trusted=(tool + "/", tests + "/", *lib), tests=tests)
    out = {}
    import libx; out["libx"] = libx.WHO
    import answer; out["answer"] = answer.VALUE
    import dynamic; out["dynamic"] = dynamic.WHO
    try:
        import stray; out["stray"] = "loaded"
    except ModuleNotFoundError:
        out["stray"] = "refused"
    from importlib.metadata import entry_points
    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    out["plugin"] = "tcplug" in {e.name for e in group}
    print(json.dumps(out))
""")


def _probe(tmp_path: Path, runner: bool) -> dict:
    t = _tree(tmp_path)
    proc = subprocess.run([sys.executable, "-I", "-c", PROBE, str(t["tool"]), str(t["tests"]),
                           str(t["app"]), "1" if runner else "0", str(GUARD)],
                          capture_output=True, text=True, timeout=60, cwd=t["app"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_in_a_test_runner_the_toolchain_wins_and_only_what_the_tests_import_loads(tmp_path):
    assert _probe(tmp_path, runner=True) == {
        "libx": "toolchain",     # the agent's libx.py comes first on sys.path, yet loses
        "answer": "helper",      # imported by the tests; its own helper imported by it
        "dynamic": "dynamic",    # import_module("dynamic") in a test file
        "stray": "refused",      # nothing under /tests imports it
        "plugin": False,         # the agent's dist-info advertises nothing
    }


def test_other_processes_import_as_python_does(tmp_path):
    assert _probe(tmp_path, runner=False) == {
        "libx": "agent", "answer": "helper", "dynamic": "dynamic", "stray": "loaded",
        "plugin": True,
    }
