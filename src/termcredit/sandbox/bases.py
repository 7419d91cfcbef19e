"""The termcredit base images: one Debian release per Python version a task may ask for.

A task image built on a Python other than the one its author chose changes the language under
the task (``sum()`` of floats is exact from 3.12 on), so the image map picks the base whose
``python3`` is closest to what the ``FROM`` image asks for. Every base is built from
``debian:<suite>-slim`` when a registry answers, else with ``debootstrap`` + ``docker import``
(no registry is reachable on this project's machines), tagged by a hash of its recipe and
cached. ``bookworm`` is the default (``termcredit/base:<hash>``, also ``:latest``, what a
``FROM termcredit/base`` gets); the others are built on first use.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .builderrors import ImageBuildError

Log = Callable[[str], None]


@dataclass(frozen=True)
class Base:
    name: str  # what the image map and `termcredit image base NAME` call it
    suite: str  # the Debian suite debootstrap installs
    python: str  # "X.Y" of the suite's python3 (an integration test checks the built image)
    repo: str  # the Docker repository; the tag is the recipe hash

    @property
    def version(self) -> tuple[int, int]:
        major, minor = self.python.split(".")
        return int(major), int(minor)


BASES: dict[str, Base] = {b.name: b for b in (
    Base("bookworm", "bookworm", "3.11", "termcredit/base"),
    Base("trixie", "trixie", "3.13", "termcredit/base-trixie"),
)}
DEFAULT_BASE = "bookworm"
BASE_REPO = BASES[DEFAULT_BASE].repo
BASE_PACKAGES = [
    "bash", "coreutils", "findutils", "sed", "gawk", "grep", "tar", "gzip", "git", "python3",
    "python3-pytest", "python3-pip", "procps", "strace", "ca-certificates",
]
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
POST_INSTALL = [
    "update-ca-certificates",
    # One locale-archive instead of ~24 per-category files: every process of every traced
    # command opens its locale, so this cuts the traced opens of a small command by ~6x.
    "localedef --add-to-archive /usr/lib/locale/C.utf8",
]
RECIPE_VERSION = 2  # bump when the build steps below change
_LOCKS = {name: threading.Lock() for name in BASES}


def get_base(name: str) -> Base:
    try:
        return BASES[name]
    except KeyError:
        raise ImageBuildError(f"unknown base {name!r} (bases: {', '.join(BASES)})") from None


def closest_base(version: tuple[int, int | None] | None) -> Base:
    """The base whose Python is closest to ``version`` (major, minor); a tie goes to the newer
    Python (code written for 3.12 more often needs 3.12's features than breaks on 3.13); no
    version or no minor (``python:latest``, ``python:3``) means the newest."""
    newest = max(BASES.values(), key=lambda b: b.version)
    if version is None or version[1] is None:
        return newest
    def number(v: tuple[int, int]) -> int:
        return v[0] * 100 + v[1]

    want = number((version[0], version[1]))
    return min(BASES.values(), key=lambda b: (abs(number(b.version) - want), -number(b.version)))


def _host_cas() -> dict[str, bytes]:
    if not HOST_CA_DIR.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(HOST_CA_DIR.glob("*.crt"))}


def base_recipe(name: str = DEFAULT_BASE) -> dict[str, Any]:
    return {
        "version": RECIPE_VERSION,
        "suite": get_base(name).suite,
        "packages": BASE_PACKAGES,
        "mirror": os.environ.get("TERMCREDIT_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
        "ca": {k: hashlib.sha256(v).hexdigest() for k, v in _host_cas().items()},
    }


def base_image_ref(name: str = DEFAULT_BASE) -> str:
    digest = hashlib.sha256(json.dumps(base_recipe(name), sort_keys=True).encode()).hexdigest()
    return f"{get_base(name).repo}:{digest[:12]}"


def image_exists(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(client: Any, *, name: str = DEFAULT_BASE, force: bool = False,
                      log: Log = print) -> str:
    """Return the ref of base ``name``, building it if its recipe hash has no image yet.
    One build at a time per base, across threads and processes (a debootstrap takes minutes;
    two concurrent ones would both pay)."""
    base = get_base(name)
    ref = base_image_ref(name)
    if not force and image_exists(client, ref):
        return ref
    lock_path = Path(tempfile.gettempdir()) / f"termcredit-base-{ref.replace('/', '_')}.lock"
    with _LOCKS[name], open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not image_exists(client, ref):  # another process may have built it
            log(f"building base image {ref} (Debian {base.suite}, Python {base.python}; one "
                "time, cached by recipe hash)")
            if _try_pull(client, f"debian:{base.suite}-slim", log):
                _build_from_slim(client, base, ref, log)
            else:
                _build_debootstrap(base, ref, log)
            client.images.get(ref).tag(base.repo, "latest")
    return ref


def _try_pull(client: Any, ref: str, log: Log) -> bool:
    if image_exists(client, ref):
        return True
    try:
        client.images.pull(ref)
        return True
    except Exception as exc:  # no registry reachable: the usual case here
        log(f"cannot pull {ref} ({type(exc).__name__}); using debootstrap")
        return False


def _build_from_slim(client: Any, base: Base, ref: str, log: Log) -> None:
    from .images import docker_build

    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        (ctx / "ca").mkdir()
        for name, data in _host_cas().items():
            (ctx / "ca" / name).write_bytes(data)
        (ctx / "Dockerfile").write_text(
            f"FROM debian:{base.suite}-slim\n"
            "COPY ca/ /usr/local/share/ca-certificates/\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            "--no-install-recommends " + " ".join(BASE_PACKAGES) + " && update-ca-certificates"
            " && rm -rf /var/lib/apt/lists/*\nENV LANG=C.UTF-8\nCMD [\"bash\"]\n"
        )
        docker_build(client, ctx, ref, ctx / "Dockerfile", log)


def _build_debootstrap(base: Base, ref: str, log: Log) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "no registry answered and debootstrap is missing: run `make setup` "
            "(or `apt-get install debootstrap`) to build the base image offline"
        )
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image with debootstrap needs root")
    recipe = base_recipe(base.name)
    with tempfile.TemporaryDirectory(prefix="termcredit-base-") as tmp:
        root = Path(tmp) / "root"
        cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES),
               base.suite, str(root), recipe["mirror"]]
        log("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            out = proc.stdout[-3000:] + proc.stderr[-3000:]
            hint = ""
            if "NO_PUBKEY" in out or "unknown key" in out or "Release signed by" in out:
                hint = (f"(this host's keyring cannot verify Debian {base.suite}: update "
                        "debian-archive-keyring, `apt-get install debian-archive-keyring`)\n")
            raise ImageBuildError(f"debootstrap {base.suite} failed: {hint}{out}")
        ca_dir = root / "usr/local/share/ca-certificates"
        ca_dir.mkdir(parents=True, exist_ok=True)
        for name, data in _host_cas().items():
            (ca_dir / name).write_bytes(data)
        for step in POST_INSTALL:
            subprocess.run(["chroot", str(root), "sh", "-c", step], check=True,
                           capture_output=True)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / junk, ignore_errors=True)
            (root / junk).mkdir(parents=True, exist_ok=True)
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8", 'CMD ["bash"]', "WORKDIR /",
        ]
        args = ["docker", "import"] + [a for c in changes for a in ("--change", c)] + ["-", ref]
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(args, stdin=tar.stdout, capture_output=True, text=True)
        tar.wait()
        if imp.returncode != 0 or tar.returncode != 0:
            raise ImageBuildError(f"docker import failed: {imp.stderr.strip()}")
