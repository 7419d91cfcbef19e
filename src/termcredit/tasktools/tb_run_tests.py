"""Terminal-Bench-1 ``run-tests.sh`` -> a Harbor ``tests/test.sh`` that needs no network.

TB1 test scripts download their tools when the tests run (the uv installer, ``uv venv``/``uv
init``, venv activation, ``uv pip install``/``pip install``/``uv add`` of pytest, ``apt-get
install curl``): those steps are removed; ``uv run``/``uvx``/bare ``pytest`` calls become the
preinstalled ``python3 -m pytest``; other test-time packages are collected in the report, for
the importer to install at build time; and the reward is written from pytest's exit status
(TB1 parsed pytest's output instead: all tests passed = resolved). A script without a pytest
call runs as written in a subshell (its ``set -e`` still stops it) and its exit status is the
reward.

The script is read with bash's grammar (``tb_shell``); each command is rewritten in place, and
a removed command counts as one that succeeded (``pip install x || exit 1`` loses both, ``a &&
pip install x && b`` keeps ``a && b``). A rewrite that cannot be shown to do what the authors'
script did (an environment it activates, a project it installs, a ``uv run`` of something other
than pytest) is kept or made as well as it can be, and listed in ``report.warnings``.
"""

from __future__ import annotations

from tree_sitter import Node

from .tb_commands import MARK, PIP_INSTALL, PYTEST, REWARD, Commands, ImportReport
from .tb_shell import flatten, in_body, parse, text_of

__all__ = ["MARK", "PIP_INSTALL", "PYTEST", "REWARD", "ImportReport", "convert_run_tests"]


class _Converter(Commands):
    def __init__(self, text: str, report: ImportReport):
        super().__init__(text, report)
        self.edits: list[tuple[int, int, str]] = []
        self.n_pytest = 0

    def visit(self, node: Node) -> None:
        body = node.child_by_field_name("body") if node.type == "redirected_statement" else None
        if node.type == "list" or body is not None and body.type == "list":
            self.do_list(node)
        elif node.type in ("command", "redirected_statement", "pipeline"):
            self.do_unit(node)
        else:
            for c in node.children:
                self.visit(c)

    def edit(self, node: Node, new: str) -> None:
        self.edits.append((node.start_byte, node.end_byte, new))

    def removed(self, node: Node) -> str:
        """What stands for a removed statement: a comment when nothing follows on its line
        (a comment would swallow `; next`), else `true`."""
        tail = self.src[node.end_byte:].split(b"\n", 1)[0].strip()
        if in_body(node) and (not tail or tail.startswith(b"#")):
            return f"{MARK} removed: " + text_of(node).splitlines()[0].strip()
        return "true"

    def wrap(self, cond: str) -> str:
        self.n_pytest += 1
        return (f'if {cond} && [ -z "${{tc_failed:-}}" ]; then echo 1 > {REWARD}; '
                f"else tc_failed=1; echo 0 > {REWARD}; fi")

    def do_unit(self, node: Node) -> None:
        kind, new = self.classify(node)
        if kind == "drop":
            self.edit(node, self.removed(node))
        elif kind == "text":
            self.edit(node, new or "true")
        elif kind == "pytest":
            if in_body(node):
                self.edit(node, self.wrap(new or ""))
            else:
                self.warn(node, "pytest runs inside a condition or pipeline: the reward is not "
                          "pytest's own status there")
                self.edit(node, new or "")
        elif node.type == "redirected_statement" or node.type == "pipeline":
            for c in node.children:  # a compound statement behind a redirect
                if c.type not in ("command", "file_redirect", "heredoc_redirect"):
                    self.visit(c)

    def do_list(self, node: Node) -> None:
        spans, ops = flatten(node)
        units = [u for u, _ in spans]
        acts = [self.classify(u, end) for u, end in spans]
        if all(k == "keep" for k, _ in acts):
            return
        texts: list[str | None] = [
            None if k == "drop" else new if k != "keep" else
            self.src[u.start_byte:end].decode("utf-8", "surrogateescape")
            for (u, end), (k, new) in zip(spans, acts)]
        p = next((i for i, (k, _) in enumerate(acts) if k == "pytest"), None)
        if p is None or not in_body(node):
            folded = _fold(texts, ops)
            if p is not None:
                self.warn(node, "pytest runs inside a condition: the reward is not pytest's "
                          "own status there")
            self.edit(node, self.removed(node) if folded is None else folded)
            return
        cond = _fold(texts[:p + 1], ops[:p]) or ""
        lines = [self.wrap(cond)]
        for op, u, t in zip(ops[p:], units[p + 1:], texts[p + 1:]):
            if t is None:
                continue
            if op == "||":
                self.note(u, f"dropped '|| {t}' after pytest (the reward is pytest's own exit "
                          "status)")
            else:
                lines.append(f'[ -n "${{tc_failed:-}}" ] || {{ {t}; }}')
        self.edit(node, "\n".join(lines))

    def convert(self) -> str:
        self.visit(parse(self.src.decode("utf-8", "surrogateescape")).root_node)
        out = self.src
        for start, end, new in sorted(self.edits, reverse=True):
            out = out[:start] + new.encode("utf-8", "surrogateescape") + out[end:]
        return out.decode("utf-8", "surrogateescape")


def _fold(texts: list[str | None], ops: list[str]) -> str | None:
    """``a OP b OP c`` with None for a removed command (one that succeeded), simplified:
    ``true || x`` never runs x, ``true && x`` is x, ``x && true`` is x. None: nothing left."""
    acc = texts[0]
    for op, t in zip(ops, texts[1:]):
        if acc is None:
            if op == "&&":
                acc = t
        elif t is None:
            if op == "||":
                acc = f"{acc} || true"
        else:
            acc = f"{acc} {op} {t}"
    return acc


def convert_run_tests(text: str | None, report: ImportReport) -> str:
    """tests/test.sh from a TB1 run-tests.sh (or from nothing: plain pytest)."""
    head = [
        "#!/bin/bash",
        "# Converted from Terminal-Bench 1 run-tests.sh by `termcredit tasks import`: steps that",
        "# downloaded tools at test time are gone (no network here; pytest is preinstalled) and",
        "# the reward is pytest's exit status: 1 when every test passed, else 0.",
        'export TEST_DIR="${TEST_DIR:-/tests}"',
        "mkdir -p /logs/verifier",
        f"echo 0 > {REWARD}",
    ]
    if text is None:
        report.notes.append("no run-tests.sh: the tests run as plain pytest on "
                            "$TEST_DIR/test_outputs.py")
        text = 'pytest "$TEST_DIR/test_outputs.py" -rA\n'
    conv = _Converter(text, report)
    body = conv.convert()
    lines = [ln for ln in body.splitlines() if not ln.startswith("#!")]
    if conv.n_pytest == 0:
        report.notes.append("run-tests.sh has no pytest call: the reward is the script's exit "
                            "status")
        # a plain subshell, not `if (...)`: bash ignores `set -e` inside a condition
        return "\n".join(head[:-1] + ["(", *lines, ")", "tc_status=$?",
                                       f'if [ "$tc_status" -eq 0 ]; then echo 1 > {REWARD}; '
                                       f"else echo 0 > {REWARD}; fi", ""])
    return "\n".join(head + lines) + "\n"
