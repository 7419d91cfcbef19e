"""First-access, final-state and temp-file rules on synthetic event sequences."""

from __future__ import annotations

from termcredit.tracer import EnvironmentLayer, Event, Kind, summarize


def ev(kind: Kind, path: str, dst: str | None = None, exchange: bool = False) -> Event:
    return Event(kind, path, pid=1, ts=None, dst=dst, exchange=exchange)


R, T, C, M, A = Kind.READ, Kind.TRUNC, Kind.CREATE, Kind.MODIFY, Kind.APPEND


def test_read_after_own_truncate_is_internal() -> None:  # cat a > a
    s = summarize([ev(T, "/w/a"), ev(R, "/w/a")])
    assert (s.read, s.written) == (set(), {"/w/a"})


def test_read_before_truncate_is_a_dependency() -> None:  # sort -o a a
    s = summarize([ev(R, "/w/a"), ev(T, "/w/a")])
    assert (s.read, s.written, s.derived_from) == ({"/w/a"}, {"/w/a"}, {})


def test_append_and_modify_are_derived_from_old_version() -> None:
    s = summarize([ev(A, "/w/a"), ev(M, "/w/b")])
    assert s.read == s.written == {"/w/a", "/w/b"}
    assert s.derived_from == {"/w/a": "/w/a", "/w/b": "/w/b"}


def test_move_carries_origin_and_deletes_source() -> None:
    s = summarize([ev(Kind.MOVE, "/w/a", "/w/b")])
    assert (s.read, s.written, s.deleted, s.temporary) == ({"/w/a"}, {"/w/b"}, {"/w/a"}, set())
    assert s.derived_from == {"/w/b": "/w/a"}


def test_temp_then_rename_over_target() -> None:  # sed -i: temp + rename
    s = summarize([ev(R, "/w/a"), ev(C, "/w/sedX"), ev(R, "/w/sedX"), ev(Kind.MOVE, "/w/sedX", "/w/a")])
    assert (s.read, s.written, s.temporary, s.derived_from) == ({"/w/a"}, {"/w/a"}, {"/w/sedX"}, {})


def test_created_and_deleted_is_temporary_not_deleted() -> None:  # gcc /tmp/cc*.s
    s = summarize([ev(C, "/w/t.s"), ev(T, "/w/t.s"), ev(R, "/w/t.s"), ev(Kind.DELETE, "/w/t.s")])
    assert s.temporary == {"/w/t.s"} and not (s.read | s.written | s.deleted)
    s = summarize([ev(Kind.MKDIR, "/w/d"), ev(Kind.LIST, "/w/d"), ev(Kind.RMDIR, "/w/d")])
    assert s.temporary == {"/w/d"} and not s.listed


def test_probe_then_create_then_delete_is_temporary() -> None:
    s = summarize([ev(Kind.PROBE, "/w/x"), ev(T, "/w/x"), ev(Kind.DELETE, "/w/x")])
    assert (s.probed, s.temporary, s.deleted) == ({"/w/x"}, {"/w/x"}, set())


def test_delete_is_not_a_read_and_recreate_is_a_write() -> None:
    s = summarize([ev(Kind.DELETE, "/w/a")])
    assert (s.read, s.deleted) == (set(), {"/w/a"})
    s = summarize([ev(Kind.DELETE, "/w/a"), ev(T, "/w/a")])
    assert (s.written, s.deleted, s.temporary) == ({"/w/a"}, set(), set())


def test_exchange_swaps_content() -> None:
    s = summarize([ev(Kind.MOVE, "/w/a", "/w/b", exchange=True)])
    assert s.read == s.written == {"/w/a", "/w/b"}
    assert s.derived_from == {"/w/a": "/w/b", "/w/b": "/w/a"} and not s.deleted


def test_hard_link_is_alias_of_old_content() -> None:
    s = summarize([ev(Kind.LINK, "/w/a", "/w/hard")])
    assert (s.read, s.written, s.derived_from) == ({"/w/a"}, {"/w/hard"}, {"/w/hard": "/w/a"})


def test_meta_only_is_not_a_write() -> None:  # chmod +x s.sh
    s = summarize([ev(Kind.META, "/w/s.sh"), ev(R, "/w/s.sh")])
    assert (s.read, s.written, s.meta) == ({"/w/s.sh"}, set(), {"/w/s.sh"})


def test_exec_needs_old_version() -> None:
    s = summarize([ev(Kind.EXEC, "/w/run.sh")])
    assert s.read == s.executed == {"/w/run.sh"}


def test_rename_onto_itself_is_a_no_op() -> None:
    s = summarize([ev(Kind.MOVE, "/w/a", "/w/a")])
    assert not (s.read | s.written | s.deleted | s.temporary)


def test_environment_layer_split_and_marker_exclusion() -> None:
    events = [
        ev(R, "/usr/lib/x.so"),
        ev(R, "/etc/ld.so.cache"),
        ev(R, "/etc/ld.so.conf.d/x.conf"),
        ev(T, "/w/pkg/__pycache__/m.cpython-311.pyc"),
        ev(R, "/usrx/data"),
        ev(R, "/etc/hosts"),
        ev(Kind.PROBE, "/__termcredit__/ab/s1"),
    ]
    s = summarize(events)
    assert s.read == {"/usrx/data", "/etc/hosts"}
    assert s.environment.read == {"/usr/lib/x.so", "/etc/ld.so.cache", "/etc/ld.so.conf.d/x.conf"}
    assert s.environment.written == {"/w/pkg/__pycache__/m.cpython-311.pyc"}
    assert not s.probed and not s.environment.probed
    custom = EnvironmentLayer(prefixes=("/etc",), globs=())
    s = summarize(events, custom)
    assert s.read == {"/usr/lib/x.so", "/usrx/data"}
    assert s.environment.read == {"/etc/ld.so.cache", "/etc/ld.so.conf.d/x.conf", "/etc/hosts"}
    assert EnvironmentLayer().extended(prefixes=("/opt/conda",)).contains("/opt/conda/bin/python")


def test_as_dict_is_json_ready() -> None:
    import json

    s = summarize([ev(Kind.MOVE, "/w/a", "/w/b"), ev(R, "/usr/bin/x")])
    d = json.loads(json.dumps(s.as_dict()))
    assert d["written"] == ["/w/b"] and d["derived_from"] == {"/w/b": "/w/a"}
    assert d["environment"]["read"] == ["/usr/bin/x"] and d["events"] == 2


def test_stat_of_the_old_path_is_statted_not_read() -> None:
    s = summarize([ev(Kind.STAT, "/w/up"), ev(Kind.STAT, "/w/new"), ev(R, "/w/new"),
                   ev(T, "/w/out"), ev(Kind.STAT, "/w/out"), ev(Kind.PROBE, "/w/gone")])
    assert s.statted == {"/w/up", "/w/new"}  # /w/out: the command's own file
    assert s.read == {"/w/new"} and s.probed == {"/w/gone"}
