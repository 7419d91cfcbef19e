"""The base images by Python version, without Docker."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from termcredit.sandbox.bases import base_image_ref, closest_base, get_base
from termcredit.sandbox.builderrors import ImageBuildError


@pytest.mark.parametrize("version, name", [
    ((3, 11), "bookworm"), ((3, 10), "bookworm"), ((3, 8), "bookworm"),
    ((3, 13), "trixie"), ((3, 14), "trixie"),
    ((3, 12), "trixie"),  # a tie (one minor version from each): the newer Python
    ((3, None), "trixie"), (None, "trixie"),  # python:3, python:latest: the newest
])
def test_closest_base(version, name):
    assert closest_base(version).name == name


def test_default_base_keeps_its_ref():
    """bookworm's recipe is what it was before there were other bases, so its image (and
    every task image built on it) stays cached."""
    ca_dir = Path("/usr/local/share/ca-certificates")
    cas = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
           for p in sorted(ca_dir.glob("*.crt"))} if ca_dir.is_dir() else {}
    recipe = {"version": 2, "suite": "bookworm", "packages": [
        "bash", "coreutils", "findutils", "sed", "gawk", "grep", "tar", "gzip", "git",
        "python3", "python3-pytest", "python3-pip", "procps", "strace", "ca-certificates"],
        "mirror": os.environ.get("TERMCREDIT_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
        "ca": cas}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    assert base_image_ref() == base_image_ref("bookworm") == f"termcredit/base:{digest}"
    trixie = base_image_ref("trixie")
    assert trixie.startswith("termcredit/base-trixie:") and not trixie.endswith(digest)


def test_bases_and_their_python():
    assert (get_base("bookworm").python, get_base("trixie").python) == ("3.11", "3.13")
    with pytest.raises(ImageBuildError, match=r"unknown base 'jammy' \(bases: bookworm, trixie\)"):
        get_base("jammy")
