"""Which shell variables and functions a command line uses, read with bash's grammar.

The persistent shell carries variables, exports, functions and aliases from one step to the
next; the shim reports what each step changed (``CommandRecord.shell``) and this module finds
what a later step *uses*: every variable it expands (``$x``, ``${x:-d}``, ``"${a[@]}"``, names
in ``$(( ))`` and ``(( ))``, ``x+=…``, expansions inside ``$(…)`` and unquoted heredocs) and
every command name (a function or alias defined earlier). Parsed with tree-sitter-bash, a real
parser (termcredit.shellsyntax): a name in single quotes, a quoted heredoc or a comment is not an expansion, and the
left side of ``x=…``, a ``for`` variable, ``export X`` or ``unset X`` is not a use.

Invisible: names a program reads from its environment (an exported variable a child process
consumes without the command line expanding it), names used inside a function body when the
function runs, ``eval`` of text built at run time, and ``${!name}`` indirection's target.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from ..shellsyntax import parse, walk

# the name in these positions is being defined, not read
_DEFINING_PARENTS = frozenset({"for_statement", "declaration_command", "unset_command"})


@dataclass(frozen=True)
class ShellUses:
    variables: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()  # command names: functions and aliases if defined


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _is_use(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return True
    if parent.type in _DEFINING_PARENTS:
        return False
    if parent.type == "variable_assignment" and parent.child_by_field_name("name") == node:
        return any(c.type == "+=" for c in parent.children)  # x+=… extends the old value
    return True


@lru_cache(maxsize=4096)
def shell_uses(command: str) -> ShellUses:
    variables: set[str] = set()
    commands: set[str] = set()
    for node in walk(parse(command).root_node):
        if node.type == "variable_name" and _is_use(node):
            variables.add(_text(node))
        elif node.type == "command_name":
            word = node.children[0] if node.children else None
            if word is not None and word.type == "word":
                commands.add(_text(word))
    return ShellUses(frozenset(variables), frozenset(commands))
