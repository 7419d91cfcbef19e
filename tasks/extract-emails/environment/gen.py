"""Generates the mail folder of one instance: gen.py SEED [DIR]. The verifier imports both."""
import random
import sys
from pathlib import Path

FIRST = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "wendy"]
DOMAINS = ["example.com", "mail.example.org", "corp.test", "lists.acme.net", "uni-x.edu"]
SUBJECTS = ["Quarterly numbers", "Lunch on Friday?", "Re: build failures", "Invoice 2231",
            "Offsite agenda", "Fwd: password reset", "Minutes"]


def mailbox(seed: int) -> tuple[dict[str, str], set[str]]:
    """({relative path: text}, {addresses in lower case})."""
    rng = random.Random(seed)
    people: set[str] = set()
    n_people = rng.randint(9, 14)
    while len(people) < n_people:
        sep = rng.choice([".", "_", ""])
        local = rng.choice(FIRST) + sep + rng.choice(FIRST) + (str(rng.randint(1, 99)) if rng.random() < 0.3 else "")
        people.add(f"{local}@{rng.choice(DOMAINS)}")
    people_l = sorted(people)
    used: set[str] = set()

    def addr() -> str:
        a = rng.choice(people_l)
        used.add(a)
        return a.upper() if rng.random() < 0.1 else (a.capitalize() if rng.random() < 0.2 else a)

    files = {}
    for i in range(rng.randint(5, 8)):
        folder = rng.choice(["inbox", "inbox", "archive/2023", "archive/2024", "sent"])
        body = [f"From: {rng.choice(FIRST).title()} <{addr()}>",
                f"To: {addr()}" + (f", {addr()}" if rng.random() < 0.5 else ""),
                f"Subject: {rng.choice(SUBJECTS)}", ""]
        for _ in range(rng.randint(2, 6)):
            r = rng.random()
            if r < 0.3:
                body.append(f"Please loop in {addr()} before we decide.")
            elif r < 0.45:
                body.append(f"(cc: {addr()}; thanks)")
            elif r < 0.55:
                body.append("Ping me at the usual place -- no address here, just @mentions like @ops.")
            else:
                body.append(rng.choice(["Sounds good to me.", "Numbers attached.",
                                        "Let's discuss at 10:30.", "See the wiki page."]))
        files[f"{folder}/msg-{i:03d}.eml"] = "\n".join(body) + "\n"
    return files, {a.lower() for a in used}


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app/mail")
    for rel, text in mailbox(int(sys.argv[1]))[0].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
