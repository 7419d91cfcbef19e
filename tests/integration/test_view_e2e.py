"""`termcredit view` on a real `termcredit run` directory (Docker, strace, the verifier)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from termcredit.viewer import build_view
from termcredit.viewer.cli import site_server

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "oracle"
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "run", "--task",
                           "tasks/hello-world", "--agent", "oracle", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return out


def test_view_of_an_oracle_run(oracle_run: Path) -> None:
    result = json.loads((oracle_run / "result.json").read_text())
    assert result["mean_reward"] == 1.0
    index_path = build_view(oracle_run)
    assert index_path == oracle_run / "view" / "index.html"
    index = index_path.read_text()
    assert "hello-world" in index and "1.000" in index
    (link,) = re.findall(r"href='(trials/[^']+\.html)'", index)
    page = (index_path.parent / link).read_text()
    assert "bash /solution/solve.sh" in page  # the oracle's one command
    assert "<dt>reward</dt><dd>1.000</dd>" in page
    assert "/app/hello.txt" in page  # the cleaned verifier resource / the step's write
    assert "<th>credit</th>" in page  # a traced trial gets DepGPO credit


def test_view_verb(oracle_run: Path) -> None:
    """`termcredit view RUN -o SITE` (no --serve) through the real CLI."""
    site = oracle_run.parent / "site"
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "view", str(oracle_run),
                           "-o", str(site), "--no-graphs"], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(site / "index.html")


def test_serve_answers_get_on_loopback(oracle_run: Path) -> None:
    index = build_view(oracle_run, oracle_run / "served")
    server, url = site_server(index, oracle_run, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.status == 200 and "hello-world" in resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
