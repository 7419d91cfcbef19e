import sys

from .report import render
from .models import load_items


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: python3 -m inventory STOCK.json")
    print(render(load_items(argv[0])))


main(sys.argv[1:])
