"""README.md and docs/*.md stay a working map: every relative link reaches a file (and its anchor
a heading), every `termcredit VERB` and `make TARGET` they show exists, and the README stays short.

Verbs come from the CLI's own parser, targets from the Makefile, so a renamed verb or target
fails here instead of in a newcomer's shell."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from termcredit.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

FENCE = re.compile(r"^(```+|~~~+)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# `.venv/bin/termcredit run` counts too; `termcredit's`, `termcredit/base` do not (no space)
VERB = re.compile(r"\btermcredit[ \t]+([a-z][a-z-]*)(?:[ \t]+([a-z][a-z|-]*))?")
MAKE = re.compile(r"\bmake[ \t]+([a-z][a-z0-9_-]*)")
TARGET = re.compile(r"^([A-Za-z][\w.-]*)[ \t]*:(?!=)", re.M)


def prose(text: str) -> str:
    """The text without fenced blocks and inline code: links there are examples, not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def code(text: str) -> list[str]:
    """Every fenced block and inline code span: where commands are shown."""
    blocks = [m.group(2) for m in FENCE.finditer(text)]
    return blocks + [m.group(2) for m in INLINE_CODE.finditer(FENCE.sub("", text))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation out, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", page.read_text())):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text())) if not SCHEME.match(t)]


def verbs() -> dict[str, set[str] | None]:
    """Each verb -> the words its first positional takes (sub-verbs, choices), None if free."""
    def subchoices(parser: argparse.ArgumentParser) -> set[str] | None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction) or (a.option_strings == [] and a.choices):
                return set(a.choices)
            if a.option_strings == []:
                return None
        return None

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: subchoices(p) for name, p in sub.choices.items()}


def make_targets() -> set[str]:
    return set(TARGET.findall((ROOT / "Makefile").read_text())) - {"PHONY"}


def test_slug_matches_githubs_anchors() -> None:
    # worked by hand from GitHub's rule on headings this repository has
    assert slug("Harbor's task.toml keys") == "harbors-tasktoml-keys"
    assert slug("The `termcredit` command") == "the-termcredit-command"
    assert slug("Limits, and what happens at them") == "limits-and-what-happens-at-them"
    assert slug("Any model as a `termcredit run` agent: `--agent openai:MODEL`") == (
        "any-model-as-a-termcredit-run-agent---agent-openaimodel")


def test_parsers_see_links_and_commands_only_where_they_are() -> None:
    text = ("See [a](x.md#b) and `[c](no.md)`.\n```bash\ntermcredit run --task t  # [d](no2.md)\n"
            "make view RUN=r\n```\n`termcredit tasks list|check` and termcredit's own keys\n")
    assert LINK.findall(prose(text)) == ["x.md#b"]
    shown = "\n".join(code(text))
    assert VERB.findall(shown) == [("run", ""), ("tasks", "list|check")]
    assert MAKE.findall(shown) == ["view"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, broken


def test_the_map_links_every_docs_page() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert set(PAGES[1:]) <= linked, sorted(p.name for p in set(PAGES[1:]) - linked)


def test_every_shown_termcredit_verb_and_make_target_exists() -> None:
    known, targets = verbs(), make_targets()
    wrong, shown = [], 0
    for page in PAGES:
        for block in code(page.read_text()):
            for verb, word in VERB.findall(block):
                shown += 1
                if verb not in known:
                    wrong.append(f"{page.name}: termcredit {verb}")
                elif word and known[verb] is not None:
                    wrong += [f"{page.name}: termcredit {verb} {w}"
                              for w in word.split("|") if w not in known[verb]]
            for target in MAKE.findall(block):
                shown += 1
                if target not in targets:
                    wrong.append(f"{page.name}: make {target}")
    assert not wrong, wrong
    assert shown > 50, "the pages show commands: the scan found too few"


def test_readme_is_a_map_not_a_manual() -> None:
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; move detail to docs/"
