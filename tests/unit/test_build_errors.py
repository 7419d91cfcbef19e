"""A failed build's first line says why the step cannot work here and what to do (no Docker:
the builder's step line and output as a real build printed them)."""

from __future__ import annotations

from termcredit.sandbox.builderrors import diagnose, find_instruction, instructions, plain
from termcredit.sandbox.imagemap import FromLine

SHOWN = "/t/environment/Dockerfile"
MAPS = "/me/map.toml and /pkg/image_map.toml"
PY = {"bookworm": "3.11", "trixie": "3.13"}
PPA_FILE = ("FROM termcredit/base-trixie:abc\n"
            "RUN apt-get update && apt-get install -y --no-install-recommends "
            "software-properties-common\n"
            "RUN add-apt-repository -y ppa:deadsnakes/ppa && apt-get update\n"
            "RUN apt-get install -y python3.12\n")
ON_TRIXIE = [FromLine(1, "ubuntu:24.04", "termcredit/base-trixie:abc", "trixie", "ubuntu:24.04*")]
ON_BOOKWORM = [FromLine(1, "ubuntu:24.04", "termcredit/base:abc", "bookworm", "ubuntu:24.04")]
# what add-apt-repository printed on the bookworm base (Launchpad not reachable), shortened
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/bin/add-apt-repository", line 362, in <module>',
    '  File "/usr/lib/python3/dist-packages/softwareproperties/ppa.py", line 113, in lpteam',
    "    self._lpteam = self.lp.people(self.teamname)",
    "AttributeError: 'NoneType' object has no attribute 'people'",
    "The command '/bin/sh -c add-apt-repository -y ppa:deadsnakes/ppa && apt-get update' "
    "returned a non-zero code: 1",
]


def test_ppa_line_is_named_with_reason_and_remedy():
    text = PPA_FILE.replace("base-trixie", "base")
    step = "Step 3/5 : RUN add-apt-repository -y ppa:deadsnakes/ppa && apt-get update"
    hint = diagnose(text, SHOWN, step, TRACEBACK, ON_BOOKWORM, MAPS, PY)
    assert hint is not None and "\n" not in hint  # one line, before the traceback
    assert hint.startswith(f"{SHOWN}:3: `RUN add-apt-repository -y ppa:deadsnakes/ppa && "
                           "apt-get update` needs Ubuntu's tooling (add-apt-repository, a "
                           "Launchpad PPA), which cannot work here: this image is built on "
                           "termcredit's Debian bookworm base (Python 3.11), which the image "
                           "map chose for FROM ubuntu:24.04")
    assert "stopped at" not in hint
    assert "Remedy: edit the line" in hint and "or map ubuntu:24.04 to another base" in hint
    assert f"--image-map (the map: {MAPS})" in hint


def test_ppa_line_is_the_cause_when_the_build_stops_before_it():
    """Debian trixie has no software-properties-common: apt fails one line earlier."""
    step = ("Step 2/5 : RUN apt-get update && apt-get install -y --no-install-recommends "
            "software-properties-common")
    out = [plain("\x1b[91mE:\x1b[0m"), plain("\x1b[91mUnable to locate package "
                                              "software-properties-common\x1b[0m")]
    assert out[1] == "Unable to locate package software-properties-common"
    hint = diagnose(PPA_FILE, SHOWN, step, out, ON_TRIXIE, MAPS, PY)
    assert hint is not None
    assert hint.startswith(f"{SHOWN}:3: `RUN add-apt-repository -y ppa:deadsnakes/ppa")
    assert "Debian trixie base (Python 3.13)" in hint
    assert "(the build stopped at line 2, `RUN apt-get update && apt-get install" in hint


def test_unreachable_host_is_named():
    text = "FROM termcredit/base:abc\nRUN curl -fsSL https://get.example.org/i.sh | sh\n"
    step = "Step 2/3 : RUN curl -fsSL https://get.example.org/i.sh | sh"
    out = ["curl: (6) Could not resolve host: get.example.org"]
    froms = [FromLine(1, "python:3.11", "termcredit/base:abc", "bookworm", "python:*")]
    hint = diagnose(text, SHOWN, step, out, froms, MAPS, PY)
    assert hint == (f"{SHOWN}:2: `RUN curl -fsSL https://get.example.org/i.sh | sh` needs "
                    "get.example.org, which this machine cannot reach (curl: (6) Could not "
                    "resolve host: get.example.org). Remedy: edit the line (put the file into "
                    "environment/ and COPY it, or install from a package index or mirror this "
                    "machine reaches), or build where get.example.org answers")
    # pip says it its own way; an image of the author's own (no base) gets the same rule
    pip = ["ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host="
           "'pypi.internal.example', port=443): Max retries exceeded with url: /simple/x/ "
           "(Caused by NewConnectionError('<urllib3.connection.HTTPSConnection>: Failed to "
           "establish a new connection: [Errno -3] Temporary failure in name resolution'))"]
    text = "FROM mine:1\nRUN pip install --index-url https://pypi.internal.example/simple x\n"
    step = "Step 2/2 : RUN pip install --index-url https://pypi.internal.example/simple x"
    hint = diagnose(text, SHOWN, step, pip, [FromLine(1, "mine:1", "mine:1")], MAPS, PY)
    assert hint is not None and hint.startswith(f"{SHOWN}:2: `RUN pip install")
    assert "needs pypi.internal.example, which this machine cannot reach" in hint


def test_unmapped_image_names_the_map_files():
    text = "FROM nginx:1\nRUN echo hi\n"
    out = ['Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on '
           '10.0.0.53:53: no such host']
    hint = diagnose(text, SHOWN, "Step 1/3 : FROM nginx:1", out,
                    [FromLine(1, "nginx:1", "nginx:1")], MAPS, PY)
    assert hint is not None
    assert hint.startswith(f"{SHOWN}:1: FROM nginx:1: no rule of the image map ({MAPS}) names "
                           "this image and docker cannot pull it here. Remedy: add a rule")
    assert '"nginx:1" = "base:python3.12"' in hint


def test_missing_package_and_plain_failures():
    text = "FROM termcredit/base-trixie:abc\nRUN apt-get install -y python3.12-venv\n"
    step = "Step 2/3 : RUN apt-get install -y python3.12-venv"
    out = ["E: Unable to locate package python3.12-venv"]
    hint = diagnose(text, SHOWN, step, out, ON_TRIXIE, MAPS, PY)
    assert hint is not None and hint.startswith(
        f"{SHOWN}:2: `RUN apt-get install -y python3.12-venv`: package 'python3.12-venv' is "
        "not in Debian trixie")
    text = "FROM termcredit/base:abc\nRUN echo building\nRUN exit 3\n"
    assert diagnose(text, SHOWN, "Step 3/4 : RUN exit 3", ["The command returned 3"],
                    ON_BOOKWORM, MAPS, PY) is None
    # Ubuntu tooling on the author's own Ubuntu image is not ours to judge
    own = [FromLine(1, "myubuntu:1", "myubuntu:1")]
    text = "FROM myubuntu:1\nRUN add-apt-repository -y ppa:x/y\n"
    assert diagnose(text, SHOWN, "Step 2/2 : RUN add-apt-repository -y ppa:x/y", TRACEBACK,
                    own, MAPS, PY) is None


def test_instructions_keep_first_line_numbers():
    text = ("# comment\nFROM a\n\nRUN apt-get update && \\\n    # why\n    apt-get install -y x\n"
            "COPY f /f\n")
    assert [(i.line, i.text) for i in instructions(text)] == [
        (2, "FROM a"), (4, "RUN apt-get update && apt-get install -y x"), (7, "COPY f /f")]
    # the classic builder prints a continued instruction joined, spaces kept
    found = find_instruction(text, "Step 2/3 : RUN apt-get update &&     apt-get install -y x")
    assert found is not None and found.line == 4
    assert find_instruction(text, "") is None


def test_a_failure_that_names_no_host_takes_it_from_the_line():
    """Python's urllib says only "Name or service not known": the host is the line's URL."""
    text = ("FROM termcredit/base:abc\n"
            "RUN python3 -c \"import urllib.request as u; u.urlretrieve('https://data.example.org/"
            "a.csv', '/a.csv')\"\n")
    step = "Step 2/3 : " + text.splitlines()[1]
    out = ["urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>"]
    hint = diagnose(text, SHOWN, step, out, ON_BOOKWORM, MAPS, PY)
    assert hint is not None and "needs data.example.org, which this machine cannot reach " \
        "(urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>)" in hint
