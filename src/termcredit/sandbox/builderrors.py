"""Build errors, and the one line that says why a build cannot work here and what to do.

A task's Dockerfile was written for its author's machine: an Ubuntu image with Launchpad
within reach. Here its ``FROM`` may have become a Debian base and some hosts do not answer, so
a step can fail in ways whose output (a 40-line traceback from ``softwareproperties``) does
not say why. :func:`diagnose` names the Dockerfile line, the reason and the remedy in one line
that goes before the build output. Build output is untrusted text: it is only searched and
quoted (capped), never interpreted; callers print it as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .imagemap import FromLine


class ImageBuildError(RuntimeError):
    """An image could not be built; the message names the Dockerfile and the failing step."""


@dataclass(frozen=True)
class Instruction:
    line: int  # 1-based line of the instruction's first line
    text: str  # continuation lines joined, whitespace collapsed


def instructions(dockerfile: str) -> list[Instruction]:
    """The Dockerfile's instructions with their first line numbers (comments skipped)."""
    out: list[Instruction] = []
    parts: list[str] = []
    start = 0
    for n, raw in enumerate(dockerfile.splitlines(), 1):
        stripped = raw.strip()
        if not parts and (not stripped or stripped.startswith("#")):
            continue
        if not parts:
            start = n
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        cont = stripped.endswith("\\")
        parts.append(stripped[:-1] if cont else stripped)
        if not cont:
            out.append(Instruction(start, " ".join(" ".join(parts).split())))
            parts = []
    if parts:
        out.append(Instruction(start, " ".join(" ".join(parts).split())))
    return out


def find_instruction(dockerfile: str, step: str) -> Instruction | None:
    """The instruction the builder's ``Step 3/7 : RUN ...`` line names."""
    said = " ".join(step.partition(" : ")[2].split()) if step.startswith("Step ") else ""
    if not said:
        return None
    found = [i for i in instructions(dockerfile) if i.text == said]
    found = found or [i for i in instructions(dockerfile)
                      if i.text.lower().startswith(said.lower()[:200])]
    return found[0] if found else None


# what a build step prints when a host does not answer; group 1 is the host
_UNREACHABLE = [re.compile(p) for p in (
    r"Could not resolve host:? '?([\w.-]+)",  # curl, git
    r"Failed to connect to ([\w.-]+) port",  # curl
    r"unable to resolve host address ['‘]([\w.-]+)",  # wget
    r"Resolving ([\w.-]+) \([\w.-]+\)\.\.\. failed",  # wget
    r"Temporary failure resolving '([\w.-]+)'",  # apt
    r"Could not connect to ([\w.-]+?)(?::\d+)? ",  # apt
    r"HTTPS?ConnectionPool\(host='([\w.-]+)'.*(?:NewConnectionError|NameResolution|"
    r"ProxyError|ConnectTimeout)",  # pip, requests
    r"Unable to find the server at ([\w.-]+)",  # httplib2 (launchpadlib)
    r"getaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([\w.-]+)",  # npm
    r"dial tcp: lookup ([\w.-]+)",  # go, docker
)]
_NO_NETWORK = re.compile(r"Name or service not known|Temporary failure in name resolution|"
                         r"Network is unreachable|No route to host|Connection refused|"
                         r"Connection timed out")
_URL_HOST = re.compile(r"\b(?:https?|ftp|git)://(?:[^/@\s]*@)?([\w-]+(?:\.[\w-]+)+)")
_UBUNTU_ONLY = re.compile(r"add-apt-repository|\bppa:|launchpad(?:content)?\.net|"
                          r"software-properties-common", re.I)
_PPA = re.compile(r"add-apt-repository|\bppa:|launchpad(?:content)?\.net", re.I)
# apt splits its coloured "E: ..." over several output chunks: match the words alone
_NO_PACKAGE = re.compile(r"(?:Unable to locate package |Package '|Couldn't find any package "
                         r"by (?:glob|regex) ')([\w.+:*-]+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(line: str) -> str:
    """A build output line without terminal colour codes (apt colours its errors)."""
    return _ANSI.sub("", line)


def _quote(text: str, cap: int = 160) -> str:
    text = " ".join(text.split())
    return "`" + (text if len(text) <= cap else text[:cap - 3] + "...") + "`"


def _unreachable(output: Sequence[str], instruction: str) -> tuple[str, str] | None:
    """(host, the line that says so) of the first network failure in ``output``; when the
    failure names no host (Python's urllib), the host of the instruction's first URL."""
    for line in output:
        for rx in _UNREACHABLE:
            m = rx.search(line)
            if m and "." in m[1]:
                return m[1][:253], " ".join(line.split())[:200]
    url = _URL_HOST.search(instruction)
    said = next((ln for ln in output if _NO_NETWORK.search(ln)), None)
    if url and said and not url[1].startswith("127."):  # a service the step itself started
        return url[1][:253], " ".join(said.split())[:200]
    return None


def _stage(froms: Sequence["FromLine"], line: int) -> "tuple[FromLine | None, int]":
    """The FROM a Dockerfile line belongs to, and the line where the next stage starts."""
    mine = [f for f in froms if f.line <= line]
    later = [f.line for f in froms if f.line > line]
    return (mine[-1] if mine else None), (later[0] if later else 1 << 30)


def diagnose(dockerfile: str, shown: str, step: str, output: Sequence[str],
             froms: Sequence["FromLine"], map_files: str, python: dict[str, str]) -> str | None:
    """One line (reason and remedy) for a failed build, or None when no rule knows it.

    ``dockerfile`` is the text that was built (FROM lines mapped), ``shown`` its name for the
    user, ``step`` the builder's last ``Step`` line, ``output`` what that step printed (colour
    codes removed), ``froms`` what each FROM became, ``map_files`` the image map's files and
    ``python`` each base's Python version by name.
    """
    inst = find_instruction(dockerfile, step)
    if inst is None:
        return None
    stage, stage_end = _stage(froms, inst.line)
    if inst.text.upper().startswith("FROM ") and stage is not None and stage.rule is None \
            and not stage.stage and "$" not in stage.image:
        return (f"{shown}:{stage.line}: FROM {stage.image}: no rule of the image map "
                f"({map_files}) names this image and docker cannot pull it here. Remedy: add "
                f"a rule under [image_map] in a TOML file given with --image-map or "
                f"TERMCREDIT_IMAGE_MAP, e.g. \"{stage.image}\" = \"base:python3.12\" (the "
                "base closest to the Python the image carries) or = \"base:trixie\"")
    net = _unreachable(output, inst.text)
    where = f"{shown}:{inst.line}: {_quote(inst.text)}"
    if stage is None or stage.base is None:  # the author's own image: only the network rule
        return _network_hint(where, net) if net else None
    base, py = stage.base, python.get(stage.base, "?")
    built_on = (f"this image is built on termcredit's Debian {base} base (Python {py}), which "
                f"the image map chose for FROM {stage.image}")
    remap = (f"or map {stage.image} to another base (`termcredit image base --list`) or an "
             f"image of yours with a rule in a TOML file given with --image-map (the map: "
             f"{map_files})")
    if _UBUNTU_ONLY.search(inst.text):
        # the PPA line is the cause even when the build stopped earlier, installing
        # software-properties-common (which Debian trixie does not have)
        ppa = next((i for i in instructions(dockerfile)
                    if stage.line < i.line < stage_end and _PPA.search(i.text)), inst)
        stopped = "" if ppa == inst else f" (the build stopped at line {inst.line}, " \
            f"{_quote(inst.text, 80)})"
        also = f"; {net[0]} did not answer either ({net[1]})" if net else ""
        return (f"{shown}:{ppa.line}: {_quote(ppa.text)} needs Ubuntu's tooling "
                f"(add-apt-repository, a Launchpad PPA), which cannot work here: {built_on}, "
                f"and PPAs hold packages built for Ubuntu releases, not Debian{stopped}{also}. "
                f"Remedy: edit the line (install the Debian package instead, or drop the PPA: "
                f"the base's own python3 is {py}), {remap}")
    if net:
        return _network_hint(where, net)
    missing = next((m for line in output if (m := _NO_PACKAGE.search(line))), None)
    if missing:
        return (f"{where}: package {missing[1][:100]!r} is not in Debian {base} ({built_on}; "
                f"Ubuntu names some packages differently). Remedy: edit the line to the Debian "
                f"package's name, {remap}")
    return None


def _network_hint(where: str, net: tuple[str, str]) -> str:
    host, said = net
    return (f"{where} needs {host}, which this machine cannot reach ({said}). Remedy: edit the "
            f"line (put the file into environment/ and COPY it, or install from a package index "
            f"or mirror this machine reaches), or build where {host} answers")
