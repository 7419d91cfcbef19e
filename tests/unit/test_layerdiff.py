"""layer_diff on hand-built overlay2 layers: the upper dir is the agent's (hostile), the lower
dirs are the image's. Expected dicts follow Docker 20.10's naive diff (archive.ChangesDirs of
the container's mount against its -init parent), written out by hand."""

from __future__ import annotations

import os
import stat
import struct
import threading
from pathlib import Path

import pytest

from termcredit.sandbox import layerdiff
from termcredit.sandbox.layerdiff import LayerDiffUnsupported, layer_diff

C, A, D = 0, 1, 2
T0 = 1_600_000_000_123_456_789  # a fixed mtime (ns) so copies can match their lower originals


@pytest.fixture
def layers(tmp_path: Path):
    up, top, base = (tmp_path / n for n in ("upper", "lower1", "lower0"))
    for d in (up, top, base):
        d.mkdir()
    return up, top, base


def diff(up: Path, *lowers: Path, **kw) -> dict[str, int]:
    return layer_diff(str(up), [str(p) for p in lowers], **kw)


def put(path: Path, data: str = "x", mtime: int = T0, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    path.chmod(mode)
    os.utime(path, ns=(mtime, mtime))
    return path


def whiteout(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(0, 0))


def opaque(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.setxattr(path, "trusted.overlay.opaque", b"y")
    except OSError as e:  # needs root and a filesystem with trusted.* xattrs
        pytest.skip(f"cannot set trusted.overlay.opaque here: {e}")


# --- plain overlay semantics ---------------------------------------------------------------

def test_empty_upper(layers):
    up, top, base = layers
    put(base / "etc/passwd")
    assert diff(up, top, base) == {}


def test_added_file_and_changed_parents(layers):
    up, top, base = layers
    put(base / "a/b/old")
    (up / "a/b").mkdir(parents=True)  # copied-up parents, same mode as below
    put(up / "a/b/new")
    put(up / "top")
    assert diff(up, top, base) == {"/a": C, "/a/b": C, "/a/b/new": A, "/top": A}


def test_modified_file_found_in_any_lower(layers):
    up, top, base = layers
    put(base / "etc/passwd", "root")
    put(up / "etc/passwd", "root+evil")
    assert diff(up, top, base) == {"/etc": C, "/etc/passwd": C}


def test_copied_up_but_unchanged_is_not_reported(layers):
    # open(O_WRONLY) copies a file up; Docker compares stat, so no change and no parent C
    up, top, base = layers
    put(base / "etc/hosts.allow", "same")
    put(up / "etc/hosts.allow", "same")
    assert diff(up, top, base) == {}


def test_mtime_compare_matches_docker(layers):
    up, top, base = layers
    sec = T0 // 10**9 * 10**9
    put(base / "f/zero", mtime=sec + 5)          # Docker: same second and one side has 0 ns
    put(up / "f/zero", mtime=sec)
    put(base / "f/ns", mtime=sec + 5)            # both non-zero ns, different: changed
    put(up / "f/ns", mtime=sec + 6)
    put(base / "f/size", "ab")
    put(up / "f/size", "abc")
    assert diff(up, top, base) == {"/f": C, "/f/ns": C, "/f/size": C}


def test_chmod_only_and_chown_only(layers):
    up, top, base = layers
    put(base / "bin/tool", mode=0o755)
    put(up / "bin/tool", mode=0o4755)
    put(base / "bin/other")
    os.chown(put(up / "bin/other"), 1000, 1000)
    assert diff(up, top, base) == {"/bin": C, "/bin/tool": C, "/bin/other": C}


def test_directory_mode_counts_but_its_mtime_does_not(layers):
    up, top, base = layers
    (base / "srv").mkdir(mode=0o755)
    (base / "opt").mkdir(mode=0o755)
    (up / "srv").mkdir()
    (up / "srv").chmod(0o700)
    (up / "opt").mkdir()
    (up / "opt").chmod(0o755)
    os.utime(up / "opt", ns=(1, 1))
    assert diff(up, top, base) == {"/srv": C}


def test_topmost_lower_wins(layers):
    up, top, base = layers
    put(base / "etc/conf", "old")
    put(top / "etc/conf", "newer")  # the image's own later layer changed it
    put(up / "etc/conf", "newer")
    assert diff(up, top, base) == {}


def test_whiteouts(layers):
    up, top, base = layers
    put(base / "etc/passwd")
    for f in ("x/1", "x/2", "x/sub/3"):
        put(base / "etc" / f)
    whiteout(up / "etc/passwd")
    whiteout(up / "etc/x")       # a deleted directory: only its own path, as Docker
    whiteout(up / "etc/never")   # a whiteout for nothing below changes nothing
    assert diff(up, top, base) == {"/etc": C, "/etc/passwd": D, "/etc/x": D}


def test_whiteout_in_lower_hides_older_layers(layers):
    up, top, base = layers
    put(base / "d/gone")
    whiteout(top / "d/gone")     # the image deleted it in a later layer
    put(up / "d/gone")           # so the agent's file is new
    assert diff(up, top, base) == {"/d": C, "/d/gone": A}


def test_new_directory_everything_below_is_added(layers):
    up, top, base = layers
    put(up / "work/pkg/mod/file.py")
    (up / "work/empty").mkdir()
    assert diff(up, top, base) == {"/work": A, "/work/pkg": A, "/work/pkg/mod": A,
                                   "/work/pkg/mod/file.py": A, "/work/empty": A}


def test_opaque_dir_replacing_a_lower_dir(layers):
    # rm -rf /d && mkdir /d && ...: the upper dir is opaque, the old children are deleted
    up, top, base = layers
    put(base / "d/a", "a")
    put(base / "d/b")
    put(base / "d/c/deep")
    put(top / "d/hidden")
    whiteout(top / "d/wh")       # already gone from the image: no D for it
    put(base / "d/wh")
    opaque(up / "d")
    put(up / "d/a", "changed")
    put(up / "d/n")
    assert diff(up, top, base) == {"/d": C, "/d/a": C, "/d/b": D, "/d/c": D,
                                   "/d/hidden": D, "/d/n": A}


def test_opaque_lower_dir_hides_older_layers(layers):
    up, top, base = layers
    opaque(top / "d")
    put(top / "d/x")
    put(base / "d/y")            # hidden by the image's opaque d
    put(up / "d/y")
    assert diff(up, top, base) == {"/d": C, "/d/y": A}


def test_file_below_a_lower_dir_stops_the_stack(layers):
    up, top, base = layers
    put(top / "d", "a file now")
    put(base / "d/y")
    (up / "d").mkdir()
    put(up / "d/y")
    assert diff(up, top, base) == {"/d": C, "/d/y": A}


def test_dir_replaced_by_file_reports_no_children(layers):
    up, top, base = layers
    put(base / "d/a")
    put(base / "d/b")
    put(up / "d")
    assert diff(up, top, base) == {"/d": C}


def test_capability_xattr_counts(layers):
    up, top, base = layers
    cap = struct.pack("<5I", 0x02000001, 1 << 10, 0, 0, 0)  # v2, effective, net_bind_service
    f = put(base / "bin/ping")
    try:
        os.setxattr(f, "security.capability", cap)
    except OSError as e:
        pytest.skip(f"cannot set security.capability here: {e}")
    os.utime(f, ns=(T0, T0))
    put(up / "bin/ping")         # same stat, capability lost
    assert diff(up, top, base) == {"/bin": C, "/bin/ping": C}


# --- the agent is hostile ----------------------------------------------------------------

def test_symlinks_are_never_followed(layers, tmp_path):
    up, top, base = layers
    host = tmp_path / "host"
    put(host / "secret")
    put(base / "etc/passwd")
    put(base / "lib/x")
    (up / "etc").symlink_to("/")             # /etc replaced by a link to the host root
    (up / "h").symlink_to(host)              # a link to a host folder
    (up / "loop").symlink_to("loop")
    (up / "lib").symlink_to("../" * 40)
    os.symlink("/etc/passwd", up / "p")
    got = diff(up, top, base)
    assert got == {"/etc": C, "/h": A, "/loop": A, "/lib": C, "/p": A}


def test_lower_symlinked_dir_is_not_followed(layers):
    # merged /usr: /lib -> usr/lib in the image; the agent replaces it with a real dir
    up, top, base = layers
    put(base / "usr/lib/x")
    (base / "lib").symlink_to("usr/lib")
    opaque(up / "lib")
    put(up / "lib/x")
    assert diff(up, top, base) == {"/lib": C, "/lib/x": A}


def test_open_under_refuses_symlinked_components(layers, tmp_path):
    up, _, _ = layers
    put(tmp_path / "host/sub/secret")
    (up / "link").symlink_to(tmp_path / "host")
    assert layerdiff._open_under(str(up), ("link", "sub")) is None
    assert layerdiff._open_under(str(up), ("link",)) is None
    assert layerdiff._open_under(str(up), ("missing",)) is None


def test_odd_names(layers):
    up, top, base = layers
    put(up / "a\nb")
    (up / "dir\n").mkdir()
    put(up / "dir\n" / "  ")
    with open(os.fsencode(up) + b"/caf\xe9", "w"):
        pass
    # undecodable bytes come back as surrogates (os.fsdecode), as the tracer's paths do
    assert diff(up, top, base) == {"/a\nb": A, "/dir\n": A, "/dir\n/  ": A,
                                   "/" + os.fsdecode(b"caf\xe9"): A}


def test_hard_links_and_device_nodes(layers):
    up, top, base = layers
    put(base / "etc/shadow", "s")
    put(up / "etc/shadow", "s+written via link")
    os.link(up / "etc/shadow", up / "tmp_link")
    os.mknod(up / "null2", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mkfifo(up / "fifo")
    whiteout(up / "new/wh")      # a 0:0 node where nothing was below: absent, not a file
    assert diff(up, top, base) == {"/etc": C, "/etc/shadow": C, "/tmp_link": A,
                                   "/null2": A, "/fifo": A, "/new": A}


def test_redirect_dirs_are_not_emulated(layers):
    up, top, base = layers
    (up / "moved").mkdir()
    try:
        os.setxattr(up / "moved", "trusted.overlay.redirect", b"/orig")
    except OSError as e:
        pytest.skip(f"cannot set trusted.overlay.redirect here: {e}")
    with pytest.raises(LayerDiffUnsupported):
        diff(up, top, base)


def test_entry_budget(layers):
    up, top, base = layers
    for i in range(60):
        put(up / "many" / str(i))
    with pytest.raises(LayerDiffUnsupported, match="entries"):
        diff(up, top, base, max_entries=50)
    assert len(diff(up, top, base, max_entries=61)) == 61


def test_depth_budget_without_recursion(layers):
    up, top, base = layers
    fd = os.open(up, os.O_RDONLY | os.O_DIRECTORY)
    name = "d" * 30
    try:  # deeper than PATH_MAX allows as one path, made relative step by step
        for _ in range(300):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    with pytest.raises(LayerDiffUnsupported, match="deep"):
        diff(up, top, base)
    got = diff(up, top, base, max_depth=400)
    assert len(got) == 300 and all(v == A for v in got.values())
    assert max(map(len, got)) > 4096


def test_missing_or_unreadable_roots(layers, tmp_path):
    up, top, base = layers
    with pytest.raises(LayerDiffUnsupported):
        layer_diff(str(tmp_path / "nope"), [str(base)])
    with pytest.raises(LayerDiffUnsupported):
        layer_diff(str(up), [str(tmp_path / "nope")])
    with pytest.raises(LayerDiffUnsupported):
        layer_diff("relative/upper", [str(base)])


def test_entry_vanishing_mid_walk_is_skipped(layers, monkeypatch):
    up, top, base = layers
    put(up / "stays")
    put(up / "goes")
    real = layerdiff._entry_stat

    def flaky(entry):
        if entry.name == "goes":
            raise FileNotFoundError(entry.name)
        return real(entry)

    monkeypatch.setattr(layerdiff, "_entry_stat", flaky)
    assert diff(up, top, base) == {"/stays": A}


def test_churn_and_symlink_swaps_while_walking(layers, tmp_path):
    # the agent keeps moving dirs and swapping them for links to a host folder while we walk
    up, top, base = layers
    put(tmp_path / "host/HOSTSECRET")
    put(base / "etc/keep")
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            i += 1
            d = up / "w"
            try:
                d.mkdir()
                put(d / f"f{i}")
                d.rename(up / "w_old")
                d.symlink_to(tmp_path / "host")
                d.unlink()
                for f in (up / "w_old").iterdir():
                    f.unlink()
                (up / "w_old").rmdir()
            except OSError:
                pass

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(300):
            got = diff(up, top, base)
            assert not any("HOSTSECRET" in p for p in got)
    finally:
        stop.set()
        t.join()


# --- content, not size and mtime (the toolchain audit's second line) ----------------------

def test_same_size_edit_with_times_put_back_is_a_change(layers):
    # Docker's statDifferent calls these equal (same size, same mtime); their bytes differ
    up, top, base = layers
    put(base / "usr/lib/python3/dist-packages/pytest/__main__.py", "import pytest\n")
    put(up / "usr/lib/python3/dist-packages/pytest/__main__.py", "import os;os;\n")  # 14 bytes too
    put(up / "usr/bin/python3", "ELF")  # copied up, same bytes: still not reported
    put(base / "usr/bin/python3", "ELF")
    assert diff(up, top, base) == {"/usr/lib/python3/dist-packages/pytest/__main__.py": C,
                                   "/usr/lib/python3/dist-packages/pytest": C,
                                   "/usr/lib/python3/dist-packages": C,
                                   "/usr/lib/python3": C, "/usr/lib": C, "/usr": C}


def test_link_retargeted_at_the_same_length_is_a_change(layers):
    up, top, base = layers
    (base / "usr/bin").mkdir(parents=True)
    (up / "usr/bin").mkdir(parents=True)
    os.symlink("python3.11", base / "usr/bin/python3")
    os.symlink("/app/evil!", up / "usr/bin/python3")  # 10 bytes, like "python3.11"
    for link in (base / "usr/bin/python3", up / "usr/bin/python3"):
        os.utime(link, ns=(T0, T0), follow_symlinks=False)
    assert diff(up, top, base) == {"/usr/bin/python3": C, "/usr/bin": C, "/usr": C}


def test_compare_budget_reports_the_rest_changed_unread(layers, monkeypatch):
    up, top, base = layers
    for name in ("a", "b"):
        put(base / "opt" / name, "same")
        put(up / "opt" / name, "same")
    monkeypatch.setattr(layerdiff, "MAX_COMPARE_BYTES", 4)  # room for one 4-byte file
    changed = diff(up, top, base)
    assert changed.pop("/opt") == C and list(changed.values()) == [C] and len(changed) == 1
