"""Event normalisation (tracing.md §4.2 table) and the process table (cwd, clone, markers)."""

from __future__ import annotations

import pytest

from termcredit.tracer import Kind, parse_records
from termcredit.tracer.events import Event, open_kinds, resolve, syscall_events
from termcredit.tracer.lines import Syscall
from termcredit.tracer.procs import attribute_events


def events_of(line: str, cwd: str | None = "/w") -> list[tuple[Kind, str, str | None]]:
    records, stats = parse_records(line + "\n")
    assert stats.skipped == 0 and len(records) == 1
    sc = records[0]
    assert isinstance(sc, Syscall)
    return [(e.kind, e.path, e.dst) for e in syscall_events(sc, cwd)]


def stream(text: str) -> list[tuple[int | None, Event]]:
    records, stats = parse_records(text)
    assert stats.skipped == 0
    return attribute_events(records).events


@pytest.mark.parametrize(
    ("flags", "kinds"),
    [
        (0x0, [Kind.READ]),
        (0x80000, [Kind.READ]),  # O_CLOEXEC
        (0x90800, [Kind.LIST]),  # O_DIRECTORY|O_CLOEXEC|O_NONBLOCK
        (0x241, [Kind.TRUNC]),  # > redirection
        (0x242, [Kind.TRUNC]),  # ld's O_RDWR|O_CREAT|O_TRUNC: no read
        (0x441, [Kind.APPEND]),  # >>
        (0xC2, [Kind.CREATE, Kind.READ]),  # sed/gcc temp O_RDWR|O_CREAT|O_EXCL
        (0xC1, [Kind.CREATE]),  # cp's O_WRONLY|O_CREAT|O_EXCL
        (0x941, [Kind.MODIFY]),  # touch: no TRUNC
        (0x41, [Kind.MODIFY]),  # dd conv=notrunc
        (0x2, [Kind.MODIFY, Kind.READ]),  # O_RDWR in place (mmap r+b)
    ],
)
def test_open_table(flags: int, kinds: list[Kind]) -> None:
    assert open_kinds(flags) == kinds


def test_open_prefers_returned_canonical_path() -> None:
    # cat l (symlink to a): the read is of a
    got = events_of('30627 1.0 openat(-100</w>, "l", 0) = 3</w/a>')
    assert got == [(Kind.READ, "/w/a", None)]


def test_creat_and_legacy_open_use_cwd() -> None:
    assert events_of('1 1.0 creat("x", 0644) = 3') == [(Kind.TRUNC, "/w/x", None)]
    assert events_of('1 1.0 open("d/../y", 0x441) = 3') == [(Kind.APPEND, "/w/y", None)]


def test_openat2_flags_from_struct() -> None:
    line = '1 1.0 openat2(-100</w>, "o", {flags=0x241, mode=0644, resolve=0}, 24) = 3</w/o>'
    assert events_of(line) == [(Kind.TRUNC, "/w/o", None)]


def test_failed_lookups_are_probes() -> None:
    assert events_of('1 1.0 openat(-100</w>, "nope", 0) = -1 ENOENT (No such file)') == [
        (Kind.PROBE, "/w/nope", None)
    ]
    assert events_of('1 1.0 execve("/usr/local/bin/as", ["as"], 0x1 /* 3 vars */) = -1 ENOENT (x)') == [
        (Kind.PROBE, "/usr/local/bin/as", None)
    ]
    # EACCES/EEXIST are not lookups of something missing
    assert events_of('1 1.0 openat(-100</w>, "ro", 0x241, 0666) = -1 EACCES (Permission denied)') == []
    assert events_of('1 1.0 mkdir("d", 0777) = -1 EEXIST (File exists)') == []
    # O_DIRECTORY + ENOTDIR: the path exists, it is just not a directory (cp/mv/ln probing)
    assert events_of('1 1.0 openat(-100</w>, "cfg", 0x210000) = -1 ENOTDIR (Not a directory)') == []


def test_dirfd_resolution_rm_rf_and_find() -> None:
    assert events_of('1 1.0 unlinkat(5</w/d/e>, "f", 0) = 0') == [(Kind.DELETE, "/w/d/e/f", None)]
    assert events_of('1 1.0 unlinkat(4</w/d>, "e", 0x200) = 0') == [(Kind.RMDIR, "/w/d/e", None)]
    assert events_of('1 1.0 rmdir("d") = 0') == [(Kind.RMDIR, "/w/d", None)]


def test_rename_forms() -> None:
    assert events_of('1 1.0 rename("./sedtrQ7S0", "a") = 0') == [(Kind.MOVE, "/w/sedtrQ7S0", "/w/a")]
    line = '1 1.0 renameat2(-100</w>, "a", 3</w/d>, "a", 0x1) = 0'
    assert events_of(line) == [(Kind.MOVE, "/w/a", "/w/d/a")]
    # mv a d/ first tries the directory itself as the target: EEXIST, not an event
    assert events_of('1 1.0 renameat2(-100</w>, "a", -100</w>, "d/", 0x1) = -1 EEXIST (File exists)') == []
    # ENOENT may come from a missing destination directory: no probe of the source
    assert events_of('1 1.0 rename("a", "nodir/b") = -1 ENOENT (No such file)') == []
    assert events_of('1 1.0 link("a", "nodir/b") = -1 ENOENT (No such file)') == []
    records, _ = parse_records('1 1.0 renameat2(-100</w>, "a", -100</w>, "b", 0x2) = 0\n')
    (ev,) = syscall_events(records[0], "/w")  # type: ignore[arg-type]
    assert ev.exchange


def test_links_and_symlinks() -> None:
    line = '1 1.0 linkat(-100</w>, "a", -100</w>, "hard", 0) = 0'
    assert events_of(line) == [(Kind.LINK, "/w/a", "/w/hard")]
    line = '1 1.0 linkat(3</w/#2173156>(deleted), "", -100</w>, "named", 0x1000) = 0'
    assert events_of(line) == [(Kind.CREATE, "/w/named", None)]  # O_TMPFILE gets a name
    line = '1 1.0 linkat(-100</w>, "/proc/self/fd/3", -100</w>, "n2", 0x400) = 0'
    assert events_of(line) == [(Kind.CREATE, "/w/n2", None)]
    records, _ = parse_records('1 1.0 symlinkat("a", -100</w>, "l") = 0\n')
    (ev,) = syscall_events(records[0], "/w")  # type: ignore[arg-type]
    assert (ev.kind, ev.path, ev.target) == (Kind.SYMLINK, "/w/l", "a")


def test_metadata_calls() -> None:
    assert events_of('1 1.0 utimensat(0</w/t>, NULL, NULL, 0) = 0') == [(Kind.META, "/w/t", None)]
    assert events_of('1 1.0 fchmodat(-100</w>, "s.sh", 0755) = 0') == [(Kind.META, "/w/s.sh", None)]
    assert events_of('1 1.0 chmod("m", 0755) = 0') == [(Kind.META, "/w/m", None)]
    assert events_of('1 1.0 ftruncate(3</w/a>, 0) = 0') == [(Kind.MODIFY, "/w/a", None)]
    assert events_of('1 1.0 ftruncate(3</tmp/x>(deleted), 0) = 0') == []


def test_stat_family_inspects_or_probes() -> None:
    # traced in the verifier's session only: a mode the tests check, a file they assert gone
    assert events_of('1 1.0 stat("d/f", {st_mode=S_IFREG|0644, st_size=3, ...}) = 0') == [
        (Kind.STAT, "/w/d/f", None)]
    assert events_of('1 1.0 newfstatat(-100</srv>, "up", {st_mode=S_IFDIR|01777, ...}, 0)'
                     ' = 0') == [(Kind.STAT, "/srv/up", None)]
    assert events_of('1 1.0 statx(-100</w>, "/a/b", 0x100, 0xfff, {stx_mask=0x17ff, ...})'
                     ' = 0') == [(Kind.STAT, "/a/b", None)]
    assert events_of('1 1.0 faccessat2(-100</w>, "x", 0, 0) = 0') == [(Kind.STAT, "/w/x", None)]
    assert events_of('1 1.0 lstat("/gone", 0x7ffd) = -1 ENOENT (No such file or directory)'
                     ) == [(Kind.PROBE, "/gone", None)]
    assert events_of('1 1.0 access("/a", 4) = -1 EACCES (Permission denied)') == []
    # fstat through AT_EMPTY_PATH names an open file, whose open is the event
    assert events_of('1 1.0 newfstatat(3</w/f>, "", {st_mode=S_IFREG|0644, ...}, 0x1000)'
                     ' = 0') == []


def test_marker_paths_never_become_events() -> None:
    assert events_of('1 1.0 openat(-100</w>, "/__termcredit__/ab/s1", 0) = -1 ENOENT (x)') == []


def test_cwd_save_handle_is_not_a_read() -> None:
    assert events_of('1 1.0 openat(-100</w>, ".", 0x80000) = 3</w>') == []


def test_unresolvable_paths_are_dropped() -> None:
    assert events_of('1 1.0 openat(-100, "rel", 0) = 3', cwd=None) == []  # no -y, no cwd
    assert events_of('1 1.0 openat(7, "rel", 0) = -1 ENOENT (x)') == []  # bare dirfd
    assert events_of('1 1.0 openat(-100</w>, 0x7ffd1234, 0) = -1 EFAULT (Bad address)') == []
    assert events_of('1 1.0 unlink("") = -1 ENOENT (x)') == []  # not a lookup of the cwd
    assert events_of('1 1.0 openat(-100</w>, "", 0) = -1 ENOENT (x)') == []
    assert resolve(None, None, "/abs//x/../y") == "/abs/y"


def test_child_lines_before_parent_clone_result_inherit_cwd() -> None:
    text = (
        '1 1.0 chdir("/w/sub") = 0\n'
        "1 1.1 vfork( <unfinished ...>\n"
        '2 1.2 openat(-100, "x", 0x241, 0666) = 3\n'  # no annotation: cwd must come from pid 1
        "1 1.3 <... vfork resumed>) = 2\n"
    )
    ((_, ev),) = stream(text)
    assert (ev.pid, ev.path) == (2, "/w/sub/x")


def test_clone_fs_shares_cwd_and_fork_copies_it() -> None:
    text = (
        '1 1.0 chdir("/w") = 0\n'
        "1 1.1 clone3({flags=0x3d0f00, exit_signal=0} => {parent_tid=[2]}, 88) = 2\n"
        "1 1.2 clone(child_stack=NULL, flags=0x1200000|17, child_tidptr=0x7f) = 3\n"
        '2 1.3 chdir("d") = 0\n'  # thread: moves pid 1 too
        '1 1.4 openat(-100, "a", 0) = 4\n'
        '3 1.5 openat(-100, "b", 0) = 4\n'  # forked before the chdir: its own copy
    )
    got = [(e.pid, e.path) for _, e in stream(text)]
    assert got == [(1, "/w/d/a"), (3, "/w/b")]


def test_fchdir_and_at_fdcwd_resync() -> None:
    text = (
        '1 1.0 mkdir("/w/d", 0777) = 0\n'
        "1 1.1 fchdir(3</w/d>) = 0\n"
        '1 1.2 mkdir("e", 0777) = 0\n'
        '1 1.3 openat(-100</elsewhere>, "x", 0) = 3</elsewhere/x>\n'
        '1 1.4 unlink("y") = 0\n'
    )
    got = [(e.kind, e.path) for _, e in stream(text)]
    assert got == [
        (Kind.MKDIR, "/w/d"),
        (Kind.MKDIR, "/w/d/e"),
        (Kind.READ, "/elsewhere/x"),
        (Kind.DELETE, "/elsewhere/y"),
    ]


def test_markers_open_and_close_segments_and_fakes_are_ignored() -> None:
    text = (
        '1 1.0 openat(-100</w>, "before", 0) = 3</w/before>\n'
        '1 1.1 chdir("/__termcredit__/ab12/s1") = -1 ENOENT (x)\n'
        '1 1.2 chdir("/__termcredit__/ab12/s1") = -1 ENOENT (x)\n'
        '1 1.3 openat(-100</w>, "in1", 0) = 3</w/in1>\n'
        '2 1.4 chdir("/__termcredit__/ab12/e1") = -1 ENOENT (x)\n'  # not the shell: ignored
        '1 1.5 chdir("/__termcredit__/ffff/e1") = -1 ENOENT (x)\n'  # wrong nonce: ignored
        '1 1.6 openat(-100</w>, "in1b", 0) = 3</w/in1b>\n'
        '1 1.7 chdir("/__termcredit__/ab12/e1") = -1 ENOENT (x)\n'
        '1 1.8 openat(-100</w>, "between", 0) = 3</w/between>\n'
    )
    got = [(seq, e.path) for seq, e in stream(text)]
    assert got == [(None, "/w/before"), (1, "/w/in1"), (1, "/w/in1b"), (None, "/w/between")]
