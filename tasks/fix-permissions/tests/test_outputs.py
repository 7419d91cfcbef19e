import stat
import subprocess
from pathlib import Path

SITE = Path("/app/site")
CONTENT = {
    "conf/tls.key": "c2VjcmV0LWtleS1tYXRlcmlhbA==\n",
    "conf/api.key": "api-7f3e9a1c\n",
    "conf/site.conf": "listen 8080\nroot /app/site/public\n",
    "public/index.html": "<!doctype html>\n<title>Home</title>\n<h1>Welcome</h1>\n",
    "public/about.html": "<!doctype html>\n<title>About</title>\n",
    "public/css/site.css": "body { font-family: sans-serif; }\n",
    "public/img/logo.gif": "GIF89a-placeholder\n",
}


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_scripts_run_and_are_755():
    for script in ("deploy.sh", "rotate-logs.sh"):
        path = SITE / "bin" / script
        assert mode(path) == 0o755, script
        assert subprocess.run([str(path), "--check"], capture_output=True).returncode == 0


def test_conf_modes():
    assert mode(SITE / "conf/tls.key") == 0o600
    assert mode(SITE / "conf/api.key") == 0o600
    assert mode(SITE / "conf/site.conf") == 0o640


def test_public_modes():
    for p in [SITE / "public", *(SITE / "public").rglob("*")]:
        assert mode(p) == (0o755 if p.is_dir() else 0o644), str(p)


def test_uploads_sticky_world_writable():
    assert mode(SITE / "uploads") == 0o1777


def test_contents_unchanged():
    for rel, text in CONTENT.items():
        assert (SITE / rel).read_text() == text, rel
