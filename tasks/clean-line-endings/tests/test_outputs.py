from pathlib import Path

from mangle import mangle

EXPECTED = Path(__file__).parent / "expected"
DOCS = Path("/app/docs")


def test_markdown_files_fixed():
    mds = sorted(p.relative_to(EXPECTED) for p in EXPECTED.rglob("*.md"))
    assert mds
    for rel in mds:
        assert (DOCS / rel).read_bytes() == (EXPECTED / rel).read_bytes(), str(rel)


def test_other_files_untouched():
    assert (DOCS / "CHANGES.txt").read_bytes() == mangle((EXPECTED / "CHANGES.txt").read_text()).encode()
    assert (DOCS / "logo.bin").read_bytes() == b"LNTN\r\n\x00\x01 \t\r\n"
