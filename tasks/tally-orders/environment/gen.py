"""The order files of one instance: gen.py SEED [ROOT]. The verifier imports build() and
order_files(). Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

ITEMS = ["apple", "bread", "milk", "eggs", "tea", "rice", "soap"]


def build(seed: int) -> dict[str, str]:
    """{path under /data: text} as built: 3 to 5 order files, one item name per line; some
    item is ordered in two files at least, and some file orders an item twice."""
    rng = random.Random(seed)
    numbers = sorted(rng.sample(range(100, 1000), rng.randint(3, 5)))
    files = {}
    for number in numbers:
        lines = [rng.choice(ITEMS) for _ in range(rng.randint(3, 8))]
        files[f"orders/o{number}.txt"] = lines
    # the guaranteed duplicates: the first item of the first file again in the last file,
    # and the second line of the second file again at its end
    first, second, last = (files[f"orders/o{n}.txt"] for n in (numbers[0], numbers[1],
                                                                numbers[-1]))
    last.insert(rng.randint(0, len(last)), first[0])
    second.append(second[1])
    return {path: "".join(f"{item}\n" for item in lines) for path, lines in files.items()}


def order_files(seed: int) -> dict[str, str]:
    """{file name: text} of the orders as built, in the order a shell glob lists them."""
    return {p.split("/", 1)[1]: t for p, t in sorted(build(seed).items())
            if p.startswith("orders/")}


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/data")
    for path, text in build(int(sys.argv[1])).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "done").mkdir(exist_ok=True)
