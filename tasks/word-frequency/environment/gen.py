"""Generates the book of one instance: gen.py SEED [FILE]. The verifier imports text()."""
import random
import sys
from pathlib import Path

VOCAB = ("the of and to a in that it was he for on are as with his they at be this from have "
         "or by one had not but what all were when we there can an your which their said if do "
         "will each about how up out them then she many some so these would other into has "
         "more her two like him see time could no make than first been its who now people my "
         "made over did down only way find use may water long little very after words called "
         "just where most know river harbour lantern pepper orchard").split()


def text(seed: int) -> str:
    rng = random.Random(seed)
    vocab = VOCAB[:]
    rng.shuffle(vocab)
    weights = [1.0 / (i + 1) ** 1.1 for i in range(len(vocab))]
    lines = []
    for _ in range(rng.randint(250, 350)):
        words = rng.choices(vocab, weights, k=rng.randint(6, 14))
        words = [w.capitalize() if rng.random() < 0.15 else w.upper() if rng.random() < 0.02
                 else w for w in words]
        line = " ".join(words)
        line = line[0].upper() + line[1:] + rng.choice([".", ",", ";", "!", "?", " --", "."])
        if rng.random() < 0.1:
            line = f'"{line}" ({rng.randint(1, 99)})'
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    Path(sys.argv[2] if len(sys.argv) > 2 else "/app/book.txt").write_text(text(int(sys.argv[1])))
