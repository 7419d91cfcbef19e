"""The service config of one instance: gen.py SEED [ROOT]. The verifier imports build() and
rendered(). Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

HOSTS = ["db-1.internal", "db-2.internal", "cache-a.lan", "api.prod.lan", "store-7.internal"]
TEMPLATE = ("# rendered from templates/app.conf.tmpl\n[server]\nlisten_port = @PORT@\n"
            "workers = {workers}\n[database]\nhost = @HOST@\ntimeout_s = {timeout}\n")


def _pick(rng: random.Random) -> tuple[int, str]:
    return rng.randint(2000, 9999), rng.choice(HOSTS)


def build(seed: int) -> dict[str, str]:
    """{path under /app: text} as built: the environment file, the template, the live config
    rendered with the previous values."""
    rng = random.Random(seed)
    tmpl = TEMPLATE.format(workers=rng.randint(2, 16), timeout=rng.randint(5, 60))
    (port, host), (old_port, old_host) = _pick(rng), _pick(rng)
    return {"env/prod.env": f"PORT={port}\nHOST={host}\n", "templates/app.conf.tmpl": tmpl,
            "live/app.conf": _render(tmpl, old_port + 1 if old_port == port else old_port,
                                     old_host)}


def _render(tmpl: str, port: int, host: str) -> str:
    return tmpl.replace("@PORT@", str(port)).replace("@HOST@", host)


def rendered(seed: int) -> str:
    """The template rendered with the environment file's values."""
    files = build(seed)
    env = dict(line.split("=", 1) for line in files["env/prod.env"].split())
    return _render(files["templates/app.conf.tmpl"], int(env["PORT"]), env["HOST"])


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for path, text in build(int(sys.argv[1])).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "backup").mkdir(exist_ok=True)
