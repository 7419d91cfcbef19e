"""The run viewer in a real browser: headless Chromium (the Debian package, installed by
`make browser`) opens the index and trial pages of real `termcredit run` directories.

Chromium is driven over the Chrome DevTools Protocol on ``--remote-debugging-pipe`` (JSON
messages ending in NUL on fds 3 and 4), so no driver package is needed. A page passes when it
loads without a JavaScript exception, a console error or a failed request (the browser's log),
its step table shows each command verbatim next to the credit DepGPO gives its step, and its
dependency graph is drawn (an <svg> with an area).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urljoin

import pytest

from termcredit.depgpo.report import credit_report
from termcredit.viewer import build_view
from termcredit.viewer.cli import site_server

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
# characters HTML must escape, a redirection, quotes of both kinds, a pipe and a tab
TRICKY = "printf '%s\\n' \"a <b> & 'c'\" | tee /tmp/note.txt\t> /dev/null"
REPLAY = [TRICKY, "echo 'Hello, world!' > /app/hello.txt"]


class Chromium:
    """Headless Chromium with one tab, driven over the DevTools pipe."""

    def __init__(self, exe: str, profile: Path):
        r_in, w_in = os.pipe()  # we write, the browser reads fd 3
        r_out, w_out = os.pipe()  # the browser writes fd 4, we read

        def fds() -> None:  # in the child: the pipe ends become fds 3 and 4
            a, b = fcntl.fcntl(r_in, fcntl.F_DUPFD, 10), fcntl.fcntl(w_out, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(r_in)
        os.close(w_out)
        self._w, self._r = w_in, r_out
        self._buf, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, timeout: float) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(30)
            if reply is None:
                raise TimeoutError(f"no reply to {method}")
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url: str) -> list[str]:
        """Load ``url``; the page's errors: exceptions, console errors, the browser's log."""
        self.events = []
        self.call("Page.navigate", session=True, url=url)
        end = time.monotonic() + 30
        while not any(ev.get("method") == "Page.loadEventFired" for ev in self.events):
            ev = self._read(max(0.0, end - time.monotonic()))
            if ev is None:
                raise TimeoutError(f"{url} did not load")
            self.events.append(ev)
        while (ev := self._read(0.5)) is not None:  # what arrives just after the load event
            self.events.append(ev)
        errors = []
        for ev in self.events:
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                errors.append(f"exception: {d.get('exception', {}).get('description') or d}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(f"console.{p['type']}: {p.get('args')}")
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return errors

    def eval(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True)
        assert "exceptionDetails" not in res, res
        return res["result"].get("value")

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


PAGE_FACTS = """(() => {
  const cell = (tr, cls) => { const td = tr.querySelector('td.' + cls);
                              return td ? td.textContent : null; };
  const rows = [...document.querySelectorAll('table.steps tr')].slice(1)
    .map(tr => ({cmd: cell(tr, 'cmd'), credit: cell(tr, 'credit')}));
  const svg = document.querySelector('div.graph svg');
  const box = svg ? svg.getBoundingClientRect() : null;
  return {rows, graph: box ? [box.width, box.height] : null,
          links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))};
})()"""


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    proc = subprocess.run(["make", "-s", "browser"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exe = proc.stdout.strip().splitlines()[-1]
    assert os.access(exe, os.X_OK), exe
    browser = Chromium(exe, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


def _run(out: Path, agent: str) -> Path:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "run", "--task",
                           "tasks/hello-world", "--agent", agent, "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    assert shutil.which("dot"), "Graphviz is missing (make system installs it)"
    base = tmp_path_factory.mktemp("viewer-browser")
    replay = base / "commands.txt"
    replay.write_text("".join(c + "\n" for c in REPLAY))
    return {"oracle": _run(base / "oracle", "oracle"),
            "replay": _run(base / "replay", f"replay:{replay}")}


@contextlib.contextmanager
def _served(run_dir: Path) -> Iterator[str]:
    """The viewer's site of ``run_dir``, served as `termcredit view --serve` does; its URL."""
    server, url = site_server(build_view(run_dir), run_dir, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _expected_credit(trial_dir: Path) -> dict[str, str]:
    """Each step's command -> its credit as the viewer prints it, from a fresh analysis."""
    return {r["command"]: "–" if r["credit"] is None else f"{r['credit']:.3f}"
            for r in credit_report(trial_dir)["steps"]}


@pytest.mark.parametrize("agent,commands", [("replay", REPLAY),
                                            ("oracle", ["bash /solution/solve.sh"])])
def test_index_and_trial_page_in_chromium(chromium: Chromium, runs: dict[str, Path],
                                          agent: str, commands: list[str]) -> None:
    run_dir = runs[agent]
    with _served(run_dir) as index_url:
        assert chromium.open(index_url) == []
        links = [h for h in chromium.eval(PAGE_FACTS)["links"] if h.startswith("trials/")]
        assert len(links) == 1, links
        assert chromium.open(urljoin(index_url, links[0])) == []
        facts = chromium.eval(PAGE_FACTS)
        trial_dir = run_dir / "hello-world" / "attempt-0"
        expected = _expected_credit(trial_dir)
        shown = {r["cmd"]: r["credit"] for r in facts["rows"]}
        assert list(shown) == commands  # verbatim: escaped for HTML, never shortened
        assert shown == {c: expected[c] for c in commands}
        assert any(v not in ("–", "0.000") for v in shown.values())  # the write is credited
        assert facts["graph"] is not None and min(facts["graph"]) > 0, facts["graph"]


def test_the_checks_catch_a_broken_page(chromium: Chromium, tmp_path: Path) -> None:
    """The same checks on a page with a script error and a missing file report both."""
    (tmp_path / "broken.html").write_text(
        "<!doctype html><html><head><link rel='icon' href='data:,'></head><body>"
        "<img src='missing.png'><script>undefinedFunction()</script></body></html>")
    errors = chromium.open((tmp_path / "broken.html").as_uri())
    assert any("undefinedFunction" in e for e in errors), errors
    assert any(e.startswith("log:") for e in errors), errors
