"""Shell text of Terminal-Bench-1 scripts, read with bash's grammar.

The importer rewrites ``run-tests.sh`` command by command; which text is a command, a word, a
redirect or an operator comes from tree-sitter-bash (termcredit.shellsyntax, the parser DepGPO
reads command lines with), never from splitting on characters: ``pip3 install pytest 2>/dev/null`` is a command
with the words ``install pytest`` and a redirect, not a package named ``2>/dev/null``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from ..shellsyntax import parse, text_of

__all__ = ["Cmd", "command_of", "flatten", "in_body", "line_of", "parse", "text_of", "unquote"]

# node types whose statement children run one after another (a body, not a condition)
BODY_TYPES = frozenset({"program", "compound_statement", "do_group", "subshell", "else_clause"})
# a command name that only wraps the real one
WRAPPERS = frozenset({"sudo", "exec", "command", "time", "nohup"})


@dataclass
class Cmd:
    """One simple command: ``VAR=x name arg ...`` (redirects are not arguments)."""

    node: Node
    assigns: list[str]  # the VAR=value prefixes, as written
    name: str  # the command name, unquoted ('' when it is an expansion)
    args: list[str]  # the arguments unquoted ('' for one that holds an expansion)
    raw: list[str]  # the arguments as written (quotes kept)

    @property
    def dynamic(self) -> bool:
        """An argument depends on the shell at run time (``$x``, ``$(...)``)."""
        return any(a == "" and r != "''" and r != '""' for a, r in zip(self.args, self.raw))


def unquote(node: Node) -> str:
    """The word's value when it holds no expansion, else ''."""
    t = node.type
    if t in ("word", "number"):
        s = text_of(node)
        return "" if "\\" in s else s
    if t == "raw_string":
        return text_of(node)[1:-1]
    if t == "string":
        parts = [c for c in node.children if c.type not in ('"',)]
        if all(c.type == "string_content" for c in parts):
            return "".join(text_of(c) for c in parts)
        return ""
    if t == "concatenation":
        vals = [unquote(c) for c in node.children]
        return "" if any(v == "" for v in vals) else "".join(vals)
    return ""


def command_of(unit: Node) -> Cmd | None:
    """The simple command ``unit`` runs (through a redirect), else None."""
    if unit.type == "redirected_statement":
        body = unit.child_by_field_name("body")
        return command_of(body) if body is not None else None
    if unit.type != "command":
        return None
    assigns, name, args, raw = [], "", [], []
    seen_name = False
    for c in unit.children:
        if c.type == "variable_assignment" and not seen_name:
            assigns.append(text_of(c))
        elif c.type == "command_name":
            seen_name = True
            name = unquote(c.children[0]) if c.children else ""
        elif seen_name and c.type not in ("file_redirect", "herestring_redirect",
                                          "heredoc_redirect", "comment"):
            args.append(unquote(c))
            raw.append(text_of(c))
    while name in WRAPPERS and args:  # sudo apt-get ... -> apt-get ...
        name, args, raw = args[0], args[1:], raw[1:]
    return Cmd(unit, assigns, name, args, raw)


def flatten(node: Node, end: int | None = None) -> tuple[list[tuple[Node, int]], list[str]]:
    """``a && b || c`` -> ([(a, end), (b, end), (c, end)], ["&&", "||"]); bash's lists are
    left-associative, so the units run in this order and each operator joins everything
    before it to the next. ``end`` is where a unit's text ends: tree-sitter-bash reads
    ``a || b 2>/dev/null`` as a redirect of the whole list, where bash gives it to ``b``, so
    the last unit's text runs on to the end of the redirect."""
    end = node.end_byte if end is None else end
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "list":
            return flatten(body, end)
    if node.type != "list":
        return [(node, end)], []
    units: list[tuple[Node, int]] = []
    ops: list[str] = []
    kids = [c for c in node.children if c.type != "comment"]
    for k, c in enumerate(kids):
        if c.type in ("&&", "||"):
            ops.append(c.type)
        else:
            u, o = flatten(c, end if k == len(kids) - 1 else None)
            units += u
            ops += o
    return units, ops


def in_body(node: Node) -> bool:
    """``node`` is a statement of a body (runs as a statement), not an if/while condition
    or part of a pipeline or list."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in BODY_TYPES:
        return True
    if parent.type in ("if_statement", "elif_clause", "case_item"):
        # in an if/elif, the statements after `then` are the body
        for c in parent.children:
            if c.type in ("then", ")", ";;"):
                return c.start_byte < node.start_byte
            if c.id == node.id:
                return False
    return False


def line_of(node: Node) -> int:
    return node.start_point[0] + 1
