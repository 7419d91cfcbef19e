import re


def stats(text):
    words = re.findall(r"[A-Za-z']+", text)
    longest = max(words, key=len) if words else ""
    return {"lines": text.count("\n"), "words": len(words), "chars": len(text), "longest": longest}
