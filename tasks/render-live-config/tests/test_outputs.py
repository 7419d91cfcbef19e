import hashlib
import os
from pathlib import Path

from gen import build, rendered

SEED = int(os.environ.get("TC_INSTANCE", "0"))
APP = Path("/app")


def test_backup_is_the_old_live_config():
    assert (APP / "backup/app.conf.bak").read_text() == build(SEED)["live/app.conf"]


def test_live_config_rendered():
    assert (APP / "live/app.conf").read_text() == rendered(SEED)


def test_checksum_file():
    digest = hashlib.sha256(rendered(SEED).encode()).hexdigest()
    assert (APP / "live/app.sum").read_text() == f"{digest}  live/app.conf\n"


def test_inputs_untouched():
    files = build(SEED)
    for path in ("env/prod.env", "templates/app.conf.tmpl"):
        assert (APP / path).read_text() == files[path], f"/app/{path} changed"
