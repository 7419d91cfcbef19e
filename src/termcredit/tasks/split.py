"""Split a shell script (a task's solution/solve.sh) into its top-level commands, with bash's
grammar (``shellsyntax.complete``, tree-sitter-bash).

A run of lines is one command when it is complete: it parses whole, its here-documents are
closed and its last line does not end in a line continuation; the next line then starts a new
command. Multi-line quotes (``python3 -c '...'``, ``awk '...'``), here-documents, ``if ... fi``
/ loops / ``{ ...; }`` groups and ``\\``-continued lines therefore stay whole, each command's
text kept verbatim. Left out: blank lines and comment lines between commands, a leading ``#!``
line, and ``set -e`` / ``set -euo pipefail``-style option lines (the replaying shell is
interactive; a ``set -e`` there would end it at the first failing command).
"""

from __future__ import annotations

import re

from ..shellsyntax import complete

_SET_OPTIONS = re.compile(r"set(\s+([-+][a-zA-Z]+|pipefail|errexit|nounset|xtrace))+\s*;?")


def split_commands(script: str) -> list[str]:
    """The top-level commands of ``script``, in order, each as its own bash text (lines of a
    multi-line command joined by newlines as they were). A trailing run of lines that never
    parses (a broken script) is returned as one last command."""
    lines = script.replace("\r\n", "\n").split("\n")
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    commands: list[str] = []
    buf: list[str] = []
    for line in lines:
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue  # blank or comment line between commands
        buf.append(line)
        text = "\n".join(buf)
        if complete(text + "\n"):
            commands.append(text.strip())
            buf = []
    if buf and "\n".join(buf).strip():
        commands.append("\n".join(buf).strip())
    return [c for c in commands if not _SET_OPTIONS.fullmatch(c)]
