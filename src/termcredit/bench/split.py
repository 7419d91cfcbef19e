"""Split a shell script (a task's solution/solve.sh) into its top-level commands, with bash's
own grammar.

A run of lines is one complete command when ``bash -n`` accepts it silently (a here-document
left open only draws a warning, so any stderr counts as incomplete) and its last line does not
end in a line continuation; the next line then starts a new command. Multi-line quotes
(``python3 -c '...'``, ``awk '...'``), here-documents, ``if ... fi`` / loops / ``{ ...; }``
groups and ``\\``-continued lines therefore stay whole, each command's text kept verbatim.
Left out: blank lines and comment lines between commands, a leading ``#!`` line, and
``set -e`` / ``set -euo pipefail``-style option lines (the replaying shell is interactive; a
``set -e`` there would end it at the first failing command).
"""

from __future__ import annotations

import re
import shutil
import subprocess

_SET_OPTIONS = re.compile(r"set(\s+([-+][a-zA-Z]+|pipefail|errexit|nounset|xtrace))+\s*;?")


class SplitError(RuntimeError):
    pass


def _bash() -> str:
    path = shutil.which("bash")
    if path is None:
        raise SplitError("bash not found: split_commands checks commands with `bash -n`")
    return path


def _complete(text: str, bash: str) -> bool:
    """``text`` parses as a whole, with no warning, and does not end in a continuation."""
    stripped = text.rstrip("\n")
    trailing = len(stripped) - len(stripped.rstrip("\\"))
    if trailing % 2 == 1:  # ends with an unescaped backslash: the next line continues it
        return False
    proc = subprocess.run([bash, "-n", "-c", text], capture_output=True, text=True,
                          timeout=30)
    return proc.returncode == 0 and not proc.stderr.strip()


def split_commands(script: str) -> list[str]:
    """The top-level commands of ``script``, in order, each as its own bash text (lines of a
    multi-line command joined by newlines as they were). A trailing run of lines that never
    parses (a broken script) is returned as one last command."""
    bash = _bash()
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
        if _complete(text + "\n", bash):
            commands.append(text.strip())
            buf = []
    if buf and "\n".join(buf).strip():
        commands.append("\n".join(buf).strip())
    return [c for c in commands if not _SET_OPTIONS.fullmatch(c)]
