import tarfile
from pathlib import Path

PROJECT = Path("/app/project")
VERSION = "1.4.2"
FILES = ["README.md", "LICENSE", "VERSION", "src/lantern/__init__.py", "src/lantern/cli.py",
         "src/lantern/render.py", "docs/usage.md"]
ARCHIVE = Path(f"/app/dist/lantern-{VERSION}.tar.gz")


def test_archive_is_gzip_tar():
    assert ARCHIVE.read_bytes()[:2] == b"\x1f\x8b"
    assert tarfile.is_tarfile(ARCHIVE)


def test_exactly_the_manifest_files_under_one_top_folder():
    with tarfile.open(ARCHIVE, "r:gz") as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        assert sorted(members) == sorted(f"lantern-{VERSION}/{f}" for f in FILES)
        for f in FILES:
            data = tar.extractfile(members[f"lantern-{VERSION}/{f}"]).read()
            assert data == (PROJECT / f).read_bytes(), f
