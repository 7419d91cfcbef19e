"""Makes a tidy text look saved on Windows: trailing blanks on some lines, CRLF everywhere."""
import sys
from pathlib import Path


def mangle(text: str) -> str:
    out = []
    for i, line in enumerate(text.split("\n")[:-1]):
        tail = ["", "  ", "\t", " \t "][i % 4] if line else ""
        out.append(line + tail + "\r\n")
    return "".join(out)


if __name__ == "__main__":
    for p in map(Path, sys.argv[1:]):
        p.write_text(mangle(p.read_text()), newline="")
