"""The shim's file requests stay bounded whatever the agent made (real files, no fakes): a huge
sparse file is hashed by its first data and flagged, a reply never outgrows its header cap."""

from __future__ import annotations

import hashlib
import json
import time

from termcredit.sandbox import shim_files
from termcredit.sandbox.shim_files import file_state, resolve, snapshot


def test_a_4_tib_sparse_file_is_hashed_by_its_data_in_a_moment(tmp_path):
    f = tmp_path / "huge"
    with open(f, "wb") as out:
        out.truncate(4 << 40)
        out.seek(1 << 30)
        out.write(b"data")
    t0 = time.monotonic()
    entry, content = file_state(str(f), 1 << 18)
    assert time.monotonic() - t0 < 5  # never reads 4 TiB of zeros
    assert entry["size"] == 4 << 40 and entry["partial"] is True and content == b""
    # by hand: size, then each data extent's offset and bytes; the extent is a whole block
    # (the file system allocates blocks), zeros around the 4 bytes written
    block = 4096
    start = (1 << 30) // block * block
    extent = b"\0" * ((1 << 30) - start) + b"data"
    extent += b"\0" * (-len(extent) % block)
    want = hashlib.sha256(b"termcredit-partial\0%d\0@%d\0" % (4 << 40, start) + extent)
    assert entry["sha256"] == want.hexdigest()


def test_a_file_under_the_hash_cap_gets_its_whole_hash(tmp_path):
    f = tmp_path / "bin"
    data = bytes(range(256)) * 4096  # 1 MiB, over the 256 KiB content cap
    f.write_bytes(data)
    entry, content = file_state(str(f), 1 << 18)
    assert entry["sha256"] == hashlib.sha256(data).hexdigest() and "partial" not in entry
    assert content == b""


def test_a_file_over_the_hash_cap_is_partial_and_changes_with_its_head(tmp_path):
    f = tmp_path / "big"
    f.write_bytes(b"a" * (3 << 20))
    entry, _ = file_state(str(f), 1 << 10, hash_cap=1 << 20)
    want = hashlib.sha256(b"termcredit-partial\0%d\0@0\0" % (3 << 20) + b"a" * (1 << 20))
    assert entry["partial"] is True and entry["sha256"] == want.hexdigest()
    f.write_bytes(b"b" + b"a" * ((3 << 20) - 1))
    assert file_state(str(f), 1 << 10, hash_cap=1 << 20)[0]["sha256"] != want.hexdigest()


def test_a_path_past_path_max_is_unreadable_not_an_error(tmp_path):
    entry, content = file_state("/" + "a/" * 3000, 1 << 18)
    assert entry["kind"] == "unreadable" and content == b""


def test_snapshot_answers_for_the_paths_that_fit_its_header_cap(tmp_path):
    paths = []
    for i in range(50):
        p = tmp_path / f"f{i:03d}"
        p.write_text("x")
        paths.append(str(p))
    head, blobs = snapshot(paths, 1 << 18, header_cap=2000)
    n = len(head["entries"])
    assert 0 < n < 50 and len(blobs) == n
    assert len(json.dumps(head["entries"])) <= 2000
    assert [e["path"] for e in head["entries"]] == paths[:n]
    # one entry always comes back, however small the cap
    assert len(snapshot(paths, 1 << 18, header_cap=1)[0]["entries"]) == 1
    assert len(resolve(paths, header_cap=1)) == 1


def test_kept_text_stops_at_the_content_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(shim_files, "CONTENT_BUDGET", 10)
    paths = []
    for i in range(3):
        p = tmp_path / f"t{i}"
        p.write_text("hello")  # 5 bytes each: two fit the 10-byte budget
        paths.append(str(p))
    head, blobs = snapshot(paths, 1 << 18)
    assert blobs == [b"hello", b"hello", b""]
    assert all(e["text"] for e in head["entries"])  # still text, its content just not sent
