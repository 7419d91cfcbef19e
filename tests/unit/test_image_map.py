from termcredit.sandbox.images import ImageMap, rewrite_from_lines

BASE = "termcredit/base:abc"


def test_default_map_covers_terminal_bench_and_python():
    m = ImageMap.load()
    assert m.resolve("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624", BASE) == BASE
    assert m.resolve("python:3.13-slim-bookworm", BASE) == BASE
    assert m.resolve("termcredit/base", BASE) == BASE
    assert m.resolve("nginx:1", BASE) is None


def test_rewrite_keeps_stage_aliases_and_flags():
    text = ("FROM --platform=linux/amd64 python:3.12 AS build\nRUN echo hi\n"
            "FROM build\nFROM nginx:1\n")
    out = rewrite_from_lines(text, ImageMap.load(), BASE).splitlines()
    assert out[0] == f"FROM --platform=linux/amd64 {BASE} AS build"
    assert out[2] == "FROM build"  # an earlier stage, not an image
    assert out[3] == "FROM nginx:1"  # no rule: left for docker


def test_user_map_extends_defaults(tmp_path):
    f = tmp_path / "map.toml"
    f.write_text('[image_map]\n"nginx:*" = "base"\n')
    assert ImageMap.load(f).resolve("nginx:1", BASE) == BASE
