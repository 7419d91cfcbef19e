"""Images: the termcredit base image and task images, both content-hash tagged and cached.

No registry may be reachable (this project's own machines reach none), so the base is built from
``debian:bookworm-slim`` when it can be pulled and otherwise with ``debootstrap`` + ``docker
import``; ``FROM`` lines naming images that cannot be pulled are mapped to the base.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

BASE_REPO = "termcredit/base"
BASE_SUITE = "bookworm"
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
Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """An image could not be built; the message names the Dockerfile and the failing step."""


def _host_cas() -> dict[str, bytes]:
    if not HOST_CA_DIR.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(HOST_CA_DIR.glob("*.crt"))}


def base_recipe() -> dict[str, Any]:
    return {
        "version": RECIPE_VERSION,
        "suite": BASE_SUITE,
        "packages": BASE_PACKAGES,
        "mirror": os.environ.get("TERMCREDIT_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
        "ca": {k: hashlib.sha256(v).hexdigest() for k, v in _host_cas().items()},
    }


def base_image_ref() -> str:
    digest = hashlib.sha256(json.dumps(base_recipe(), sort_keys=True).encode()).hexdigest()
    return f"{BASE_REPO}:{digest[:12]}"


def image_exists(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(client: Any, *, force: bool = False, log: Log = print) -> str:
    """Return the base image ref, building it if its recipe hash has no image yet."""
    ref = base_image_ref()
    if not force and image_exists(client, ref):
        return ref
    log(f"building base image {ref} (one time; cached by recipe hash)")
    if _try_pull(client, "debian:bookworm-slim", log):
        _build_base_from_slim(client, ref, log)
    else:
        _build_base_debootstrap(ref, log)
    client.images.get(ref).tag(BASE_REPO, "latest")
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


def _build_base_from_slim(client: Any, ref: str, log: Log) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        (ctx / "ca").mkdir()
        for name, data in _host_cas().items():
            (ctx / "ca" / name).write_bytes(data)
        (ctx / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\n"
            "COPY ca/ /usr/local/share/ca-certificates/\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            "--no-install-recommends " + " ".join(BASE_PACKAGES) + " && update-ca-certificates"
            " && rm -rf /var/lib/apt/lists/*\nENV LANG=C.UTF-8\nCMD [\"bash\"]\n"
        )
        _docker_build(client, ctx, ref, ctx / "Dockerfile", log)


def _build_base_debootstrap(ref: str, log: Log) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "no registry answered and debootstrap is missing: run `make setup` "
            "(or `apt-get install debootstrap`) to build the base image offline"
        )
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image with debootstrap needs root")
    recipe = base_recipe()
    with tempfile.TemporaryDirectory(prefix="termcredit-base-") as tmp:
        root = Path(tmp) / "root"
        cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES),
               BASE_SUITE, str(root), recipe["mirror"]]
        log("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ImageBuildError(f"debootstrap failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
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


# ------------------------------------------------------------------ FROM mapping


@dataclass
class ImageMap:
    """Which FROM images to replace by the base (fnmatch patterns -> "base" or another ref)."""

    rules: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "ImageMap":
        text = resources.files("termcredit").joinpath("data/image_map.toml").read_text()
        rules = dict(tomllib.loads(text)["image_map"])
        path = path or os.environ.get("TERMCREDIT_IMAGE_MAP")
        if path:
            try:
                extra = tomllib.loads(Path(path).read_text())
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ImageBuildError(f"{path}: cannot read image map: {exc}") from exc
            if not isinstance(extra.get("image_map"), dict):
                raise ImageBuildError(f"{path}: field [image_map] missing or not a table")
            rules.update(extra["image_map"])
        return cls(rules)

    def resolve(self, image: str, base_ref: str) -> str | None:
        for pattern, target in self.rules.items():
            if fnmatch.fnmatchcase(image, pattern):
                return base_ref if target == "base" else target
        return None


_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)


def rewrite_from_lines(dockerfile: str, image_map: ImageMap, base_ref: str) -> str:
    """Replace each FROM image that the map names (never an earlier build stage's alias)."""
    stages: set[str] = set()
    out = []
    for line in dockerfile.splitlines():
        m = _FROM.match(line)
        if m:
            head, flags, image, rest = m.groups()
            alias = re.search(r"\bAS\s+(\S+)", rest, re.IGNORECASE)
            if image.lower() not in stages:
                image = image_map.resolve(image, base_ref) or image
            if alias:
                stages.add(alias.group(1).lower())
            line = f"{head}{flags}{image}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


def _tree_digest(directory: Path, extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def task_image_ref(env_dir: Path, name: str, *, base_ref: str,
                   image_map: ImageMap | None = None,
                   build_args: dict[str, str] | None = None) -> tuple[str, str]:
    """(content-hash ref, Dockerfile with FROM lines mapped) of a task's ``environment/``
    folder: the same folder content gives the same ref on every host."""
    image_map = image_map or ImageMap.load()
    text = rewrite_from_lines((env_dir / "Dockerfile").read_text(), image_map, base_ref)
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"
    args = dict(sorted((build_args or {}).items()))
    return f"termcredit/task-{slug}:{_tree_digest(env_dir, text + json.dumps(args))[:12]}", text


def build_task_image(client: Any, env_dir: Path, name: str, *, base_ref: str,
                     image_map: ImageMap | None = None, force: bool = False,
                     build_args: dict[str, str] | None = None, log: Log = print) -> str:
    """Build (or reuse) the image for a task's ``environment/`` folder."""
    dockerfile = env_dir / "Dockerfile"
    args = dict(sorted((build_args or {}).items()))
    ref, text = task_image_ref(env_dir, name, base_ref=base_ref, image_map=image_map,
                               build_args=args)
    if not force and image_exists(client, ref):
        return ref
    with tempfile.TemporaryDirectory(prefix="termcredit-ctx-") as tmp:
        ctx = Path(tmp) / "ctx"
        shutil.copytree(env_dir, ctx, symlinks=True)
        (ctx / "Dockerfile").write_text(text)
        _docker_build(client, ctx, ref, dockerfile, log, buildargs=args)
    return ref


def _docker_build(client: Any, ctx: Path, ref: str, shown: Path, log: Log,
                  buildargs: dict[str, str] | None = None) -> None:
    lines: list[str] = []
    step = ""
    for chunk in client.api.build(path=str(ctx), tag=ref, network_mode="host", rm=True,
                                  buildargs=buildargs or None,
                                  forcerm=True, decode=True, labels={"termcredit": "1"}):
        if "stream" in chunk:
            for line in chunk["stream"].splitlines():
                lines.append(line)
                if line.startswith("Step "):
                    step = line
        if "error" in chunk:
            tail = "\n".join(lines[-25:])
            raise ImageBuildError(
                f"{shown}: build failed at {step or 'an early step'}: "
                f"{chunk['error'].strip()}\n--- last build output ---\n{tail}"
            )
    log(f"built {ref}")
