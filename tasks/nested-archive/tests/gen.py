"""Builds the backup of one instance: gen.py SEED [FILE]. The verifier imports key()."""
import gzip
import io
import random
import sys
import tarfile
from pathlib import Path


def key(seed: int) -> str:
    return "%032x" % random.Random(seed).getrandbits(128)


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 1700000000, 0o644
    tar.addfile(info, io.BytesIO(data))


def backup(seed: int) -> bytes:
    rng = random.Random(seed + 1000)
    vault = rng.choice(["vault", "secrets", "keystore"])
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w") as tar:
        _add(tar, f"{vault}/README", b"Keys are stored compressed.\n")
        _add(tar, f"{vault}/current.key.gz",
             gzip.compress(f"# rotated by ops\nKEY={key(seed)}\n".encode(), mtime=0))
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w:gz") as tar:
        _add(tar, "backup/notes.txt", b"Nightly backup. The old key below was revoked.\n")
        _add(tar, "backup/old-key.txt", f"KEY={'%032x' % rng.getrandbits(128)}\n".encode())
        for i in range(rng.randint(2, 4)):
            _add(tar, f"backup/logs/day-{i}.log", f"day {i}: ok\n".encode())
        _add(tar, f"backup/{vault}.tar", inner.getvalue())
    return outer.getvalue()


if __name__ == "__main__":
    Path(sys.argv[2] if len(sys.argv) > 2 else "/app/backup.tar.gz").write_bytes(backup(int(sys.argv[1])))
