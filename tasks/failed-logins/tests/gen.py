"""Generates the auth log of one instance: gen.py SEED [FILE]. The verifier imports both."""
import random
import sys
from collections import Counter
from pathlib import Path

USERS = ["root", "admin", "deploy", "alice", "bob", "git", "oracle", "test", "ubuntu"]
VALID = {"root", "deploy", "alice", "bob", "git"}


def events(seed: int) -> list[tuple[str, str, str]]:
    """(kind, user, ip) in log order; kind is 'fail', 'ok' or 'noise'."""
    rng = random.Random(seed)
    ips = [f"{rng.choice([10, 172, 192, 203])}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
           for _ in range(14)]
    attackers, friends = ips[:7], ips[7:]
    out = []
    for ip in attackers:
        out += [("fail", rng.choice(USERS), ip) for _ in range(rng.randint(2, 14))]
    for ip in friends:
        out += [("fail", rng.choice(sorted(VALID)), ip) for _ in range(rng.randint(0, 7))]
        out.append(("ok", rng.choice(sorted(VALID)), ip))
    out += [("noise", "", rng.choice(ips)) for _ in range(30)]
    rng.shuffle(out)
    return out


def blocklist(seed: int) -> list[str]:
    ev = events(seed)
    fails = Counter(ip for kind, _, ip in ev if kind == "fail")
    good = {ip for kind, _, ip in ev if kind == "ok"}
    rows = sorted(((ip, n) for ip, n in fails.items() if n >= 5 and ip not in good),
                  key=lambda r: (-r[1], r[0]))
    return [f"{ip} {n}" for ip, n in rows]


def render(seed: int) -> str:
    rng = random.Random(seed + 99)
    lines = []
    for i, (kind, user, ip) in enumerate(events(seed)):
        ts = f"Mar {1 + i // 90:2d} {8 + i % 12:02d}:{(i * 7) % 60:02d}:{(i * 13) % 60:02d}"
        pid = rng.randint(1000, 30000)
        port = rng.randint(30000, 65000)
        if kind == "fail":
            who = user if user in VALID else f"invalid user {user}"
            lines.append(f"{ts} web1 sshd[{pid}]: Failed password for {who} from {ip} port {port} ssh2")
        elif kind == "ok":
            lines.append(f"{ts} web1 sshd[{pid}]: Accepted password for {user} from {ip} port {port} ssh2")
        else:
            lines.append(rng.choice([
                f"{ts} web1 sshd[{pid}]: Connection closed by {ip} port {port} [preauth]",
                f"{ts} web1 sshd[{pid}]: Received disconnect from {ip} port {port}:11: Bye Bye [preauth]",
                f"{ts} web1 CRON[{pid}]: pam_unix(cron:session): session opened for user root(uid=0)",
                f"{ts} web1 sshd[{pid}]: Disconnected from authenticating user root {ip} port {port} [preauth]",
            ]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    Path(sys.argv[2] if len(sys.argv) > 2 else "/app/auth.log").write_text(render(int(sys.argv[1])))
