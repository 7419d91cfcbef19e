import sys

from . import __version__
from .counting import stats


def main():
    if len(sys.argv) != 2:
        print("usage: wordstat FILE", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        s = stats(f.read())
    print(f"wordstat {__version__}: {s['lines']} lines, {s['words']} words, "
          f"{s['chars']} chars, longest word '{s['longest']}'")
    return 0
