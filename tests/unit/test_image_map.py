import pytest

from termcredit.sandbox.builderrors import ImageBuildError
from termcredit.sandbox.imagemap import ImageMap, python_in_name, rewrite_from_lines

BASE = "termcredit/base:abc"
TBENCH = "ghcr.io/laude-institute/t-bench"


@pytest.mark.parametrize("image, base", [
    # the name says the Python: the base whose Python (bookworm 3.11, trixie 3.13) is closest
    (f"{TBENCH}/python-3-13:20250620", "trixie"),
    (f"{TBENCH}/python-3-11", "bookworm"),
    ("python:3.13-slim-bookworm", "trixie"),  # Python 3.13 asked for, whatever the suffix
    ("python:3.12-slim", "trixie"),  # 3.12: as close to 3.11 as to 3.13; the newer wins
    ("python:3.10", "bookworm"),
    ("python:3.14-rc", "trixie"),
    ("python:latest", "trixie"), ("python:3", "trixie"), ("python", "trixie"),
    # a distribution image: the python3 it carries
    (f"{TBENCH}/ubuntu-24-04:20250624", "trixie"),  # Ubuntu 24.04 has 3.12
    ("ubuntu:22.04", "bookworm"),  # 3.10
    ("debian:bookworm-slim", "bookworm"), ("debian:12", "bookworm"),
    ("debian:trixie", "trixie"), ("debian:bullseye-slim", "bookworm"),  # 3.9
    ("termcredit/base", "bookworm"), ("termcredit/base-trixie:latest", "trixie"),
])
def test_default_map_picks_the_closest_python(image, base):
    mapped = ImageMap.load().map(image, BASE)
    assert mapped.base == base, mapped
    assert mapped.ref == BASE if base == "bookworm" else mapped.ref.startswith(
        "termcredit/base-trixie:")


def test_unknown_images_are_left_for_docker():
    m = ImageMap.load()
    for image in ("nginx:1", "ubuntu:23.04", "debian:sid", f"{TBENCH}/other:1"):
        assert m.resolve(image, BASE) is None, image
    assert m.resolve(f"{TBENCH}/python-3-13", BASE).startswith("termcredit/base-trixie:")


def test_python_in_name():
    assert python_in_name("python:3.12.4-slim") == (3, 12)
    assert python_in_name(f"{TBENCH}/python-3-13:20250620") == (3, 13)
    assert python_in_name("python:3-alpine") == (3, None)
    assert python_in_name("python:slim") is None
    assert python_in_name("ghcr.io/python-tools/ubuntu:24.04") is None  # not the image name


def test_rewrite_keeps_stage_aliases_and_flags():
    text = ("FROM --platform=linux/amd64 python:3.10 AS build\nRUN echo hi\n"
            "FROM build\nFROM nginx:1\nFROM scratch\n")
    out, froms = rewrite_from_lines(text, ImageMap.load(), BASE)
    lines = out.splitlines()
    assert lines[0] == f"FROM --platform=linux/amd64 {BASE} AS build"
    assert lines[2] == "FROM build"  # an earlier stage, not an image
    assert lines[3] == "FROM nginx:1"  # no rule: left for docker
    assert [(f.line, f.base, f.rule, f.stage) for f in froms] == [
        (1, "bookworm", "python:*", False), (3, None, None, True), (4, None, None, False),
        (5, None, None, False)]


def test_user_rules_are_tried_first(tmp_path):
    f = tmp_path / "map.toml"
    f.write_text(f'[image_map]\n"nginx:*" = "base"\n"{TBENCH}/python-3-13*" = "base:bookworm"\n'
                 '"ubuntu:24.04" = "mine/ubuntu:24.04"\n')
    m = ImageMap.load(f)
    assert m.resolve("nginx:1", BASE) == BASE
    # more specific than the built-in t-bench rule, and tried before it
    assert m.map(f"{TBENCH}/python-3-13:20250620", BASE).base == "bookworm"
    assert m.resolve("ubuntu:24.04", BASE) == "mine/ubuntu:24.04"
    assert m.where().startswith(f"{f} and ") and m.where().endswith("image_map.toml")


def test_a_map_naming_no_base_is_refused(tmp_path):
    f = tmp_path / "map.toml"
    f.write_text('[image_map]\n"ubuntu:*" = "base:jammy"\n')
    with pytest.raises(ImageBuildError, match=r"map\.toml: \[image_map\] 'ubuntu:\*' = "
                       r"'base:jammy': no base 'jammy' \(bases: bookworm, trixie"):
        ImageMap.load(f)
