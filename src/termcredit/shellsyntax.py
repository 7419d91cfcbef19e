"""Shell text, read with bash's grammar: the one tree-sitter-bash parser of termcredit.

Every place that reads shell text parses it here, never by splitting on characters: DepGPO's
shell-name uses (depgpo/shellvars.py), refine's background-job test (``backgrounds``), the
solve.sh splitter (tasks/split.py, through ``complete``) and the Terminal-Bench importer's
rewrite of run-tests.sh (tasktools/tb_shell.py). Text is parsed as UTF-8 with surrogate escapes
(a command keeps its bytes, rawtext.py), so a node's text decodes back to the same string.

Quoting a value for the shell is ``shlex.quote`` (the standard library's), not something here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Tree

# words bash reserves to close or continue a compound command: as a command of their own they
# are a syntax error (`fi` with no `if`), which tree-sitter-bash reads as a plain command
_CLOSERS = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "}"})


@lru_cache(maxsize=1)
def parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def parse(text: str) -> Tree:
    return parser().parse(text.encode("utf-8", "surrogateescape"))


def text_of(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node under it (depth first)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def backgrounds(command: str) -> bool:
    """The command line starts a job in the background (``cmd &``; ``&>`` is a redirect)."""
    return any(n.type == "&" for n in walk(parse(command).root_node))


def _delimiter(start: Node) -> str:
    """A here-document's delimiter word as bash compares it: quotes and backslashes removed."""
    return text_of(start).replace("'", "").replace('"', "").replace("\\", "")


def complete(text: str) -> bool:
    """``text`` is whole commands: it parses without an error or a missing token, every
    here-document is closed by its delimiter, no command is a closing reserved word (a
    stray ``fi``), and its last line does not end in a line continuation; what ``bash -n``
    accepts silently."""
    stripped = text.rstrip("\n")
    if (len(stripped) - len(stripped.rstrip("\\"))) % 2 == 1:
        return False  # ends with an unescaped backslash: the next line continues it
    root = parse(text).root_node
    if root.has_error:
        return False
    for node in walk(root):
        if node.is_missing:
            return False
        if node.type == "heredoc_redirect":
            start = next((c for c in node.children if c.type == "heredoc_start"), None)
            end = next((c for c in node.children if c.type == "heredoc_end"), None)
            if start is None or end is None or text_of(end) != _delimiter(start):
                return False
        if node.type == "command_name" and text_of(node) in _CLOSERS:
            return False
    return True
