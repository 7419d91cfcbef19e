"""Typed-value matcher: which earlier command's *stdout* does a command reuse?

This is the only place DepGPO reads command text for values (``stdout_sources``).
The tracer cannot see information that goes from a command's output through the agent's
context into a later command line, so that one channel is matched on values:

* **Values** are typed tokens of a command's stdout: numbers (``42``, ``-3.5``, ``1e-5``) of
  at least ``min_number_chars`` characters without the sign (so ``0``/``1``/``7`` never
  count), paths (absolute, relative, ``./x``, ``~/x``; a path also yields its basename),
  file names and dotted names (``data.csv``, ``os.path``), identifiers (snake, camel, kebab;
  at least ``min_identifier_len`` characters; not a common shell/English word), hex hashes
  (``min_hex_len``+ hex digits with a digit and a letter) and quoted multi-word strings.
* **Use** means the value occurs in the later command as a whole token: command text is cut
  into tokens the same way (``=``, ``:``, quotes, spaces, commas ... split), and a path token
  also stands for its parent directories and its tail sub-paths (``/app/data/in.csv`` uses
  ``in.csv`` and ``/app/data``). So ``42`` is not found in ``420`` or ``x42`` and ``data.csv``
  is not found in ``mydata.csv``.
* **Not values**: keywords and built-in names of the languages agents write inline (awk's
  ``BEGIN``/``FILENAME``, Python's ``print``, SQL's ``SELECT``): reusing them says nothing
  about what the earlier output taught.
* **Novelty** (interpretation): a value counts only where the stdout *told the agent
  something new*. Values in the task instruction are excluded (the reference's rule), and so
  are values that already appeared in the text of any command up to and including the
  producer (``grep foo_bar`` printing ``foo_bar`` or ``echo 12345`` printing ``12345``: the
  agent had the value before that output).
* **Link** (interpretation, switch ``link``): when several earlier outputs carried the value,
  the consumer links to the ``"most-recent"`` one (default: the freshest in context) or the
  ``"earliest"``. A value keeps linking to its producer after the agent first typed it: the
  agent still owes it to that output.
"""

from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass
from functools import lru_cache

_TOKEN = re.compile(r"[\w./~-]+")
_QUOTED = re.compile(r"\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DOTTED = re.compile(r"[\w-]+(?:\.[\w-]+)+")
_IDENT = re.compile(r"[A-Za-z_][\w-]*")
_PERMS = re.compile(r"[-dlcbps][-rwxsStT]{9}[.+@]?")

# Absolute paths every session names; they say nothing about where information came from.
_TRIVIAL_PATHS = frozenset(
    "/ /app /bin /boot /dev /etc /home /lib /lib64 /mnt /opt /proc /root /run /sbin /srv /sys "
    "/tmp /usr /var /workspace /dev/null /dev/stdout /dev/stderr /usr/bin /usr/lib /usr/local "
    "/usr/local/bin /usr/share /var/log /var/tmp ~ ~/ . .. ./ ../".split()
)

# Lower-cased words of length >= 4 that are too common in output and commands to carry
# information: shell commands and options, ls/ps/error vocabulary, English function words.
STOPWORDS = frozenset("""
about above after again against also always another anything around back because been
before being below between both bash cannot case could does doing done down during each
echo else error errors even every exit false file files first found from further have
having here however into just keep last least less like line lines made make many more
most much must name need never next none nothing number once only other over same
should show since some such than that their them then there these they this those
through total true under until upon used user using very want were what when where which
while will with within without would your yours
awk bin cat chmod chown command cut diff dirname dist grep gzip head help less list
ls mkdir move perl pip pip3 printf python python3 read rmdir root sed sort source stat sudo
tail tar tee test then time touch type uniq unzip usage wget curl xargs zip find local
exec export print return import class self none null true false info debug warn warning
fatal failed failure success successful passed pass skipped denied permission directory
directories folder path paths exists exist missing invalid option options value values
string text data input output result results content contents size date hour minute
second seconds today year years month char byte bytes count lines words items item
main init test tests todo done okay yes note notes hello world example examples sample
default version install installed installing requirement requirements already satisfied
collecting downloading building running process processes status code open close write
written reading writing load loaded save saved read-only readonly utf-8 utf8 ascii linux
x86_64 amd64 aarch64 debian ubuntu drwxr-xr-x
""".split())

# Keywords and built-in names of the languages agents write inline (Python, awk, shell, SQL,
# C): a script that prints `BEGIN` or `print` taught nothing to a command that uses them.
KEYWORDS = frozenset(
    [w.lower() for w in keyword.kwlist]
    + [n for n in dir(builtins) if n.islower() and not n.startswith("_")]
    + """
begin end filename fnr nr nf ofs ors subsep getline gsub gensub substr sprintf tolower toupper
length split match index delete next nextfile function printf print system close fflush
then elif else fi do done case esac until select function declare local readonly shift
unset trap wait eval source alias
select insert update delete from where group order having limit join inner outer left right
values into create table drop alter index primary foreign key references distinct count
include define ifdef ifndef endif pragma void char short long float double unsigned signed
struct union enum typedef static const extern return sizeof switch default break continue
goto volatile register inline main argc argv stdin stdout stderr null
self __name__ __main__ __init__ __file__ sys.argv sys.exit os.path
""".split()
)


@dataclass(frozen=True)
class ReuseConfig:
    min_number_chars: int = 2
    min_identifier_len: int = 4
    min_hex_len: int = 7
    link: str = "most-recent"  # or "earliest": which earlier output a reused value links to

    def __post_init__(self) -> None:
        if self.link not in ("most-recent", "earliest"):
            raise ValueError(f"ReuseConfig.link: 'most-recent' or 'earliest', not {self.link!r}")


def _strip(tok: str) -> str:
    tok = tok.rstrip(".-")
    if tok.startswith("-") and not _NUMBER.fullmatch(tok):
        tok = tok.lstrip("-")
    return tok


@lru_cache(maxsize=1 << 16)  # outputs repeat tokens a lot (rows, ls listings)
def classify(tok: str, cfg: ReuseConfig = ReuseConfig()) -> str | None:
    """Type of a stripped token as a value, or None when it carries no information."""
    if not tok:
        return None
    if _NUMBER.fullmatch(tok):
        return "number" if len(tok.lstrip("-")) >= cfg.min_number_chars else None
    if (len(tok) >= cfg.min_hex_len and _HEX.fullmatch(tok)
            and any(ch.isdigit() for ch in tok) and any(ch.isalpha() for ch in tok)):
        return "hash"
    if "/" in tok or tok.startswith("~"):
        core = tok.rstrip("/")
        if core in _TRIVIAL_PATHS or not any(ch.isalnum() for ch in core):
            return None
        return "path"
    if tok.lower() in KEYWORDS:
        return None
    if _DOTTED.fullmatch(tok):  # file names, dotted names, versions, addresses
        return "name" if len(tok) >= 4 else None
    if _IDENT.fullmatch(tok):
        if len(tok) < cfg.min_identifier_len or tok.lower() in STOPWORDS or _PERMS.fullmatch(tok):
            return None
        return "identifier"
    return None


def extract_values(text: str, cfg: ReuseConfig = ReuseConfig()) -> set[str]:
    """Typed values in ``text`` (a command's stdout)."""
    out: set[str] = set()
    for raw in _TOKEN.findall(text):
        tok = _strip(raw)
        kind = classify(tok, cfg)
        if kind is None:
            continue
        out.add(tok)
        if kind == "path":
            core = tok.rstrip("/")
            if core.startswith("./"):
                out.add(core[2:])
            base = core.rsplit("/", 1)[-1]
            if base != core and classify(base, cfg) is not None:
                out.add(base)
    for m in _QUOTED.finditer(text):
        s = m.group(1) or m.group(2)
        if any(ch.isspace() for ch in s) and s.strip() == s:
            out.add(s)  # multi-word: single-word quoted values are tokens already
    return out


def text_tokens(text: str) -> set[str]:
    """Tokens of a command line (or instruction) that a value may match as a whole."""
    out: set[str] = set()
    for raw in _TOKEN.findall(text):
        tok = _strip(raw)
        if not tok:
            continue
        out.add(tok)
        if tok[0] == "-" and len(tok) > 1:
            out.add(tok[1:])  # `-42` also uses 42
        if "/" in tok:
            core = tok.rstrip("/")
            out.add(core)
            parts = core.split("/")
            for i in range(1, len(parts)):
                head, tail = "/".join(parts[:i]), "/".join(parts[i:])
                if head:
                    out.add(head)  # parent directories
                if tail:
                    out.add(tail)  # tail sub-paths, basename included
    out.discard("")
    return out


def _phrase_in(phrase: str, text: str) -> bool:
    """Multi-word value occurs in ``text`` not glued to word characters."""
    start = text.find(phrase)
    while start != -1:
        end = start + len(phrase)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(phrase, start + 1)
    return False


class StdoutReuse:
    """Incremental matcher: ``add`` each command in order; it returns the command's sources."""

    def __init__(self, instruction: str = "", cfg: ReuseConfig = ReuseConfig()):
        self.cfg = cfg
        self.known: set[str] = text_tokens(instruction)  # tokens the agent had without stdout
        self.known_text: list[str] = [instruction]  # for multi-word values
        self.producers: dict[str, list[int]] = {}  # value -> commands whose stdout showed it new
        self.phrases: dict[str, list[int]] = {}  # multi-word values, matched by substring

    def _pick(self, ids: list[int]) -> int:
        return ids[-1] if self.cfg.link == "most-recent" else ids[0]

    def add(self, idx: int, command: str, stdout: str) -> dict[int, tuple[str, ...]]:
        """Sources of command ``idx``: producer -> the sorted values it reused from it."""
        toks = text_tokens(command)
        found: dict[int, set[str]] = {}
        producers = self.producers
        small, large = (toks, producers) if len(toks) <= len(producers) else (producers, toks)
        for value in small:
            if value in large:
                found.setdefault(self._pick(producers[value]), set()).add(value)
        for phrase, ids in self.phrases.items():
            if _phrase_in(phrase, command):
                found.setdefault(self._pick(ids), set()).add(phrase)
        # then this command's own text becomes known, and its stdout's new values register
        self.known |= toks
        self.known_text.append(command)
        if stdout:
            for value in extract_values(stdout, self.cfg):
                if " " in value or "\t" in value:
                    if not any(_phrase_in(value, t) for t in self.known_text):
                        self.phrases.setdefault(value, []).append(idx)
                elif value not in self.known:
                    producers.setdefault(value, []).append(idx)
        return {p: tuple(sorted(v)) for p, v in sorted(found.items()) if p != idx}


def stdout_sources(instruction: str, commands: list[tuple[str, str]],
                   cfg: ReuseConfig = ReuseConfig()) -> list[dict[int, tuple[str, ...]]]:
    """Per command (``(command, stdout)`` pairs in order): producer index -> reused values."""
    m = StdoutReuse(instruction, cfg)
    return [m.add(i, cmd, out) for i, (cmd, out) in enumerate(commands)]
