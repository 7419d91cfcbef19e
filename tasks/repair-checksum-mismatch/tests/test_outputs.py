import os
from pathlib import Path

from gen import files, good

SEED = int(os.environ.get("TC_INSTANCE", "0"))


def test_release_matches_manifest():
    for name, data in good(SEED).items():
        assert (Path("/app/release") / name).read_bytes() == data, f"{name} does not match SHA256SUMS"


def test_manifests_and_mirror_untouched():
    for path, data in files(SEED).items():
        if path.startswith("mirror/") or "SHA256SUMS" in path:
            assert (Path("/app") / path).read_bytes() == data, f"/app/{path} changed"


def test_no_files_added_or_removed():
    for top in ("release", "mirror"):
        expected = sorted(p.split("/", 1)[1] for p in files(SEED) if p.startswith(top + "/"))
        assert sorted(p.name for p in Path("/app", top).iterdir()) == expected, top
