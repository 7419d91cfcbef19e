"""termcredit.shellsyntax: the one shell parser. ``complete`` (what the solve.sh splitter asks)
is checked against real ``bash -n``, the test it replaced, on the shapes a script takes; the
one place tree-sitter-bash and bash part is pinned down."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from termcredit.tasks.split import split_commands
from termcredit.shellsyntax import backgrounds, complete, parse, text_of, walk

SRC = Path(__file__).resolve().parents[2] / "src" / "termcredit"


def bash_n_accepts(text: str) -> bool:
    """The old test: ``bash -n`` accepts ``text`` silently (a here-document left open only
    warns), and it does not end in a line continuation."""
    stripped = text.rstrip("\n")
    if (len(stripped) - len(stripped.rstrip("\\"))) % 2 == 1:
        return False
    proc = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True, timeout=30)
    return proc.returncode == 0 and not proc.stderr.strip()


SHAPES = [
    "echo a\n",
    "echo 'never closed\n",
    "echo 'a\n\nb'\n",
    'echo "$(\n echo x\n)"\n',
    "cat /app/a |\n",
    "cat /app/a |\n  sort\n",
    "a &&\n",
    "if [ -f a ]; then\n",
    "if [ -f a ]; then\n  rm a\nfi\n",
    "fi\n",  # a stray closer: tree-sitter-bash reads a command named fi
    "done\n",
    "f() {\n",
    "f() {\n  echo \"$1\"\n}\n",
    "case $x in\n",
    "case $x in\n a) echo 1;;\nesac\n",
    "grep x \\\n",
    "grep x \\\n  | sort\n",
    "echo \\\\\n",  # an escaped backslash: no continuation
    "cat <<EOF\nfoo\n",
    "cat <<EOF\nfoo\nEOF\n",
    "cat <<-END > /tmp/o\n\tv=$HOME\n",  # open: tree-sitter-bash alone sees no error here
    "cat <<-END > /tmp/o\n\tv=$HOME\n\tEND\n",
    "cat <<'EOF' > x\nEOF2\n",
    "python3 - <<'PY'\nprint(1)\nPY\n",
    "x=(1 2\n",
    "arr=(\n 1\n 2\n)\n",
    "echo $((1 +\n",
    "echo $((1 +\n2))\n",
    "printf $'a\\nb\\n' > /tmp/ab\n",
    "echo x &> /tmp/log\n",
    "{ echo region; sort t; } > r.csv\n",
]


@pytest.mark.parametrize("text", SHAPES)
def test_complete_agrees_with_bash_n(text):
    assert complete(text) == bash_n_accepts(text)


def test_two_here_documents_on_one_line_are_beyond_tree_sitter_bash():
    """tree-sitter-bash 0.25 reads one here-document per command: with two, the splitter
    never finds the command complete and the rest of the script becomes one last step (where
    `bash -n` split it). No script of the suite does this."""
    script = "cat <<E1 <<E2\na\nE1\nb\nE2\necho z\n"
    assert bash_n_accepts("cat <<E1 <<E2\na\nE1\nb\nE2\n")
    assert not complete("cat <<E1 <<E2\na\nE1\nb\nE2\n")
    assert split_commands(script) == ["cat <<E1 <<E2\na\nE1\nb\nE2\necho z"]


def test_backgrounds_is_an_ampersand_token_not_a_redirect():
    assert backgrounds("sleep 9 & echo started")
    assert backgrounds("(python3 -m http.server &)")
    assert not backgrounds("a && b")
    assert not backgrounds("echo x &> /tmp/log")
    assert not backgrounds("echo 'a & b'")


def test_text_keeps_bytes_that_are_not_utf8():
    command = "echo caf\udce9 > /tmp/f"  # the byte 0xe9 as rawtext.py keeps it
    root = parse(command).root_node
    assert text_of(root) == command  # decodes back to the same string, byte for byte


def test_the_shell_module_imports_nothing_of_termcredit():
    tree = ast.parse((SRC / "shellsyntax.py").read_text())
    mods = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in mods if m.startswith("termcredit") or m.startswith(".")]
    assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))


def test_every_reader_of_shell_text_parses_through_shellsyntax():
    """No second parser: nothing outside shellsyntax.py builds a tree-sitter Parser or runs
    `bash -n`."""
    for path in SRC.rglob("*.py"):
        if path.name == "shellsyntax.py":
            continue
        text = path.read_text()
        assert "tree_sitter_bash" not in text and "Language(" not in text, path
        assert '"-n", "-c"' not in text, path
