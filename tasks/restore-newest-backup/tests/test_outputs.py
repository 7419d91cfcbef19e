import os
from pathlib import Path

from gen import TARGET, backups, live, newest

SEED = int(os.environ.get("TC_INSTANCE", "0"))


def test_settings_restored_from_newest_backup():
    assert (Path("/app") / TARGET).read_bytes() == newest(SEED)


def test_rest_of_site_untouched():
    expected = live(SEED)
    for path, data in expected.items():
        assert (Path("/app") / path).read_bytes() == data, f"/app/{path} changed"
    found = sorted(str(p.relative_to("/app")) for p in Path("/app/site").rglob("*") if not p.is_dir())
    assert found == sorted(list(expected) + [TARGET])


def test_backups_untouched():
    expected = backups(SEED)
    assert sorted(p.name for p in Path("/app/backups").iterdir()) == sorted(expected)
    for name, data in expected.items():
        assert (Path("/app/backups") / name).read_bytes() == data, f"{name} changed"
