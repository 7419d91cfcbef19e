import sys

from .render import render


def main():
    print(render(sys.argv[1]))
