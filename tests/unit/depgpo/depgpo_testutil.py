"""Hand-built CommandFacts for DepGPO tests: contents in, hashes computed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from hypothesis import strategies as st

from termcredit.depgpo.facts import CommandFacts, EpisodeFacts
from termcredit.records import FileState
from termcredit.tracer import AccessSets


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def cmd(index: int, command: str = "", *, read: Iterable[str] = (),
        write: Mapping[str, str | bytes] | None = None, derived: Mapping[str, str] | None = None,
        deleted: Iterable[str] = (), meta: Iterable[str] = (), dirs: Iterable[str] = (),
        symlinks: Mapping[str, str] | None = None, listed: Iterable[str] = (),
        stdout: str = "", n_tokens: int = 1, traced: bool = True, exit_code: int = 0,
        missing_after: Iterable[str] = ()) -> CommandFacts:
    """``write``: path -> text (str) or binary content (bytes: sha only, no text)."""
    after: dict[str, FileState] = {}
    written: set[str] = set()
    for p, data in (write or {}).items():
        written.add(p)
        text = isinstance(data, str)
        after[p] = FileState(p, "file", sha256=sha(data), text=text,
                             content=data if text else None)
    for p in dirs:
        written.add(p)
        after[p] = FileState(p, "dir")
    for p, target in (symlinks or {}).items():
        written.add(p)
        after[p] = FileState(p, "symlink", sha256=sha(target), target=target)
    for p in meta:
        after.setdefault(p, FileState(p, "file"))
    for p in missing_after:
        written.discard(p)
        after.pop(p, None)
    acc = AccessSets(read=set(read), listed=set(listed), written=written, deleted=set(deleted),
                     meta=set(meta), derived_from=dict(derived or {}))
    return CommandFacts(index=index, command=command, exit_code=exit_code, stdout=stdout,
                        accesses=acc, after=after, n_tokens=n_tokens, traced=traced)


def untraced(index: int, command: str = "done", n_tokens: int = 1) -> CommandFacts:
    return CommandFacts(index=index, command=command, traced=False, n_tokens=n_tokens)


def episode(*commands: CommandFacts, resources: Iterable[str] = (),
            instruction: str = "") -> EpisodeFacts:
    return EpisodeFacts(instruction=instruction, commands=list(commands),
                        resources=list(resources))


def worked_example() -> EpisodeFacts:
    """The reference's worked example: read -> stage (stdout reuse) -> answer (reads stage)."""
    return episode(
        cmd(0, "cat /app/input.txt", read=["/app/input.txt"], stdout="secret_code=90417\n"),
        cmd(1, "echo 90417 > /tmp/stage.txt", write={"/tmp/stage.txt": "90417\n"}),
        cmd(2, "sed 's/^/answer: /' /tmp/stage.txt > /app/answer.txt", read=["/tmp/stage.txt"],
            write={"/app/answer.txt": "answer: 90417\n"}),
        resources=["/app/answer.txt"],
        instruction="Find the code in /app/input.txt and write it to /app/answer.txt.")


NAMES = ["/app/answer.txt", "/tmp/s1", "/tmp/s2", "/app/in"]


@st.composite
def random_episodes(draw):
    """Small episodes over four paths: reads, writes (some appends), deletes, mkdir, chmod,
    stdout values that later commands may reuse, untraced steps."""
    cmds = []
    for i in range(draw(st.integers(1, 10))):
        reads = draw(st.lists(st.sampled_from(NAMES), max_size=2, unique=True))
        writes = draw(st.lists(st.sampled_from(NAMES[:3]), max_size=2, unique=True))
        text = {p: "".join(f"{x}\n" for x in draw(st.lists(st.sampled_from("abc"), max_size=3)))
                for p in writes}
        derived = {p: p for p in writes if p in reads and draw(st.booleans())}
        deleted = [p for p in draw(st.lists(st.sampled_from(NAMES), max_size=1))
                   if p not in writes]
        meta = [p for p in draw(st.lists(st.sampled_from(NAMES), max_size=1))
                if p not in deleted]
        dirs = draw(st.lists(st.sampled_from(["/app", "/tmp/d"]), max_size=1))
        out = draw(st.sampled_from(["", "tok_1234\n", "val_9876\n"]))
        word = draw(st.sampled_from(["", "tok_1234", "val_9876"]))
        cmds.append(cmd(i, f"run {word}", read=reads, write=text, derived=derived,
                        deleted=deleted, meta=meta, dirs=dirs, stdout=out,
                        traced=draw(st.booleans()) or i == 0))
    return episode(*cmds, resources=draw(st.lists(st.sampled_from(NAMES), max_size=2)))
