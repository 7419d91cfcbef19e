"""FsRoot: paths resolved as the kernel resolved them, through the traced tasks' own root.

The "root" here is a real directory a child process chroots into, so absolute link targets
must land inside it, never in the host's tree. Expected paths are worked out by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from termcredit.tracer.fsroot import MAX_LINKS, FsRoot


@pytest.fixture
def rooted(tmp_path: Path):
    """A process chrooted into ``tmp_path`` (needs root, as the tracer does) and its FsRoot."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    (tmp_path / "work" / "real").mkdir(parents=True)
    (tmp_path / "work" / "real" / "a").write_text("a")
    (tmp_path / "etc").mkdir()
    os.symlink("real", tmp_path / "work" / "rel")          # relative, same directory
    os.symlink("/work/real", tmp_path / "work" / "abs")    # absolute: inside the root
    os.symlink("real/a", tmp_path / "work" / "l")          # a file through a link
    os.symlink("../etc", tmp_path / "work" / "up")         # .. in a target
    os.symlink("loop2", tmp_path / "work" / "loop1")
    os.symlink("loop1", tmp_path / "work" / "loop2")
    os.symlink("/etc", tmp_path / "work" / "hostetc")      # the root's /etc, not the host's
    proc = subprocess.Popen([sys.executable, "-c",
                             f"import os, sys; os.chroot({str(tmp_path)!r}); sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        for _ in range(200):  # until the child has chrooted
            if os.readlink(f"/proc/{proc.pid}/root") == str(tmp_path):
                break
            subprocess.run(["sleep", "0.01"])
        root = FsRoot(proc.pid)
        yield root
        root.close()
    finally:
        proc.communicate(b"", timeout=30)


def test_links_resolve_inside_the_tasks_root(rooted: FsRoot) -> None:
    assert rooted.resolve(b"/work/rel/a") == b"/work/real/a"
    assert rooted.resolve(b"/work/abs/a") == b"/work/real/a"
    assert rooted.resolve(b"/work/l") == b"/work/real/a"
    assert rooted.resolve(b"/work/up") == b"/etc"
    assert rooted.resolve(b"/work/hostetc") == b"/etc"  # the root's own /etc
    # .. after a link goes up from where the link led (lexically it would be /work/x)
    assert rooted.resolve(b"/work/abs/../x") == b"/work/x"
    assert rooted.resolve(b"/work/up/../work/./l") == b"/work/real/a"


def test_the_last_link_is_kept_when_not_followed(rooted: FsRoot) -> None:
    assert rooted.resolve(b"/work/l", follow_last=False) == b"/work/l"
    assert rooted.resolve(b"/work/rel/a", follow_last=False) == b"/work/real/a"


def test_missing_components_and_loops_stay_lexical(rooted: FsRoot) -> None:
    assert rooted.resolve(b"/work/rel/gone/../x/y") == b"/work/real/x/y"
    got = rooted.resolve(b"/work/loop1/f")
    assert got in (b"/work/loop1/f", b"/work/loop2/f")  # past MAX_LINKS: the rest as written
    assert MAX_LINKS == 40


def test_a_closed_root_reads_no_links(rooted: FsRoot) -> None:
    rooted.close()
    assert rooted.resolve(b"/work/rel/a") == b"/work/rel/a"


def test_the_cache_is_forgotten_when_asked(rooted: FsRoot, tmp_path: Path) -> None:
    assert rooted.resolve(b"/work/rel/a") == b"/work/real/a"
    os.unlink(tmp_path / "work" / "rel")
    os.symlink("abs/../..", tmp_path / "work" / "rel")  # now -> /work/real/.. -> /work
    assert rooted.resolve(b"/work/rel/a") == b"/work/real/a"  # the link as read before
    rooted.forget()
    assert rooted.resolve(b"/work/rel/a") == b"/a"
