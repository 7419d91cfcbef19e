"""Generates the access logs of one instance: gen.py SEED [DIR]. The verifier imports answer()."""
import gzip
import random
import sys
from collections import Counter
from pathlib import Path

PATHS = ["/", "/login", "/api/orders", "/api/orders/42", "/static/app.js", "/search?q=lamp",
         "/api/cart", "/health"]
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.4.0", "Googlebot/2.1", "python-requests/2.31"]
MONTHS = ["Jan", "Feb", "Mar", "Apr"]


def logs(seed: int) -> list[list[str]]:
    """Log files, oldest first: each a list of lines."""
    rng = random.Random(seed)
    ips = [f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(12)]
    files = []
    for k in range(rng.randint(3, 5)):
        lines = []
        for i in range(rng.randint(150, 250)):
            ip = rng.choice(ips)
            r = rng.random()
            status = rng.choice([500, 502, 503, 504]) if r < 0.12 else rng.choice([404, 403]) if r < 0.25 else rng.choice([200, 200, 200, 301, 304])
            ts = f"{(i % 28) + 1:02d}/{MONTHS[k % 4]}/2024:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} +0000"
            lines.append(f'{ip} - - [{ts}] "{rng.choice(["GET", "POST"])} {rng.choice(PATHS)} HTTP/1.1" '
                         f'{status} {rng.randint(0, 50000)} "-" "{rng.choice(AGENTS)}"')
        files.append(lines)
    return files


def answer(seed: int) -> tuple[str, int]:
    counts = Counter(ln.split()[0] for f in logs(seed) for ln in f if ln.split()[8].startswith("5"))
    (ip, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:  # make the winner unique: one more error for it
        return ip, n + 1
    return ip, n


def write(seed: int, root: Path) -> None:
    files = logs(seed)
    ip, n = answer(seed)
    counts = Counter(ln.split()[0] for f in files for ln in f if ln.split()[8].startswith("5"))
    if counts[ip] != n:
        files[0].append(f'{ip} - - [01/Jan/2024:00:00:01 +0000] "GET / HTTP/1.1" 500 0 "-" "curl/8.4.0"')
    root.mkdir(parents=True, exist_ok=True)
    newest = len(files) - 1
    for k, lines in enumerate(files):
        age = newest - k  # access.log, access.log.1, access.log.2.gz, ...
        text = "\n".join(lines) + "\n"
        if age == 0:
            (root / "access.log").write_text(text)
        elif age == 1:
            (root / "access.log.1").write_text(text)
        else:
            (root / f"access.log.{age}.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    (root / "error.log").write_text("[error] upstream timed out (110) while reading response\n")


if __name__ == "__main__":
    write(int(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else "/app/logs"))
