"""The agent shell's own state after each command: variables, exports, functions, aliases, options.

Runs inside the sandbox (its source is sent ahead of shim_session's). Stdlib only.

No syscall shows that ``lost=$(git reflog ...)`` set a variable a later command expands, so bash
reports its state itself: right after each command, before the end marker, a group of builtins
(``declare -p``, ``declare -f``, ``shopt -p``, ``set +o``, ``alias -p``; no process, no file
opened) writes it to fd 3, a pipe only the shim reads. The command itself runs with fd 3 closed
(bash keeps its saved copy close-on-exec, so programs never inherit it). Each report is framed
by the command's secret end token, so text an agent writes to the pipe cannot pass for a report.

The shim keeps the last state and sends only the change: name -> ``kind:hash`` (kind var, export,
array, function, alias, option; ``hash`` a short digest of the value, so a later ``export x``
of an unchanged value is told apart from a new value) or ``unset:`` for a name that is gone.
Functions are named ``fn:NAME``, aliases ``alias:NAME``, options ``-o:NAME``. Variables bash
changes by itself (``RANDOM``, ``BASH_*``, ``PWD``: the cwd has its own edge) are left out.
Limits: an agent that shadows bash builtins with functions can misreport its own state
(credit, never reward, depends on it).
"""
import hashlib

STATE_FD = 3
STATE_CAP = 4 << 20  # bytes of one report; a bigger state is reported as unknown
# Bash's own bookkeeping: changes every command, or is the cwd (tracked by the tracer)
VOLATILE = frozenset(
    "_ BASH BASHOPTS BASHPID BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_COMMAND BASH_LINENO "
    "BASH_SOURCE BASH_SUBSHELL BASH_REMATCH COLUMNS COMP_WORDBREAKS DIRSTACK EPOCHREALTIME "
    "EPOCHSECONDS FUNCNAME GROUPS HISTCMD LINENO LINES OLDPWD PIPESTATUS PPID PWD RANDOM "
    "SECONDS SHELLOPTS SHLVL SRANDOM".split()
)


def dump_script(token):
    """Builtins that write the state report for ``token`` to fd 3 (one shell line, no newline)."""
    p = "builtin printf '%%s\\n' %s%s"
    # __tc_so: the options the agent's command left on, which the harness has put aside
    # until its next command (shim_protocol.py); printed last, so they win
    return ("{ %s; builtin declare -p; %s; builtin declare -f; %s; builtin shopt -p; "
            "builtin set +o; builtin printf '%%s' \"$__tc_so\"; %s; builtin alias -p; %s; } >&%d" % (
                p % ("V", token), p % ("F", token), p % ("O", token), p % ("A", token),
                p % ("Z", token), STATE_FD))


def _digest(text):
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _variables(lines, out):
    for line in lines:
        if not line.startswith("declare -"):
            return False
        flags, _, rest = line[len("declare "):].partition(" ")
        name, eq, value = rest.partition("=")
        if not name or name in VOLATILE or name.startswith("__tc_"):
            continue
        kind = ("array" if ("a" in flags or "A" in flags)
                else "export" if "x" in flags else "var")
        out[name] = "%s:%s" % (kind, _digest(eq + value))  # the value only: see the kind
    return True


def _functions(lines, out):
    name, body = None, []
    for line in lines + ["\0 () "]:
        if line.endswith(" () ") and not line.startswith((" ", "\t", "}", "{")):
            if name is not None and not name.startswith("__tc_"):
                out["fn:" + name] = "function:" + _digest("\n".join(body))
            name, body = line[:-4], []
        elif name is None:
            return False
        else:
            body.append(line)
    return True


def _options(lines, out):
    for line in lines:
        words = line.split()
        if len(words) != 3 or words[0] not in ("shopt", "set"):
            return False
        out["-o:" + words[2]] = "option:" + words[1]
    return True


def _aliases(lines, out):
    for line in lines:
        if not line.startswith("alias "):
            return False
        name, _, value = line[len("alias "):].partition("=")
        out["alias:" + name] = "alias:" + _digest(value)
    return True


def parse_report(buf, token):
    """(state or None, bytes consumed, text ahead of the report) for the report framed by
    ``token`` in ``buf``; the text ahead is the harness's trap report (shim_protocol.py).

    state None: no complete report yet (consumed 0), or a malformed one (consumed > 0)."""
    text = buf.decode("utf-8", "surrogateescape")
    start = text.find("V%s\n" % token)
    end = text.find("Z%s\n" % token, start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        return None, 0, ""
    pre = text[:start]
    consumed = len(text[:end + len(token) + 2].encode("utf-8", "surrogateescape"))
    body = text[start:end]
    parts = {}
    for tag in "VFOA":
        i = body.find("%s%s\n" % (tag, token))
        if i < 0:
            return None, consumed, pre
        parts[tag] = i + len(token) + 2
    order = sorted(parts, key=parts.get)
    if order != list("VFOA"):
        return None, consumed, pre
    state = {}
    for tag, nxt, parse in (("V", "F", _variables), ("F", "O", _functions),
                            ("O", "A", _options), ("A", None, _aliases)):
        stop = len(body) if nxt is None else body.find("%s%s\n" % (nxt, token))
        section = body[parts[tag]:stop].split("\n")
        if section and section[-1] == "":
            section.pop()
        if not parse(section, state):
            return None, consumed, pre
    return state, consumed, pre


def state_changes(before, after):
    """What changed from ``before`` to ``after``: name -> ``kind:hash`` or ``unset:``."""
    out = {n: v for n, v in after.items() if before.get(n) != v}
    out.update({n: "unset:" for n in before if n not in after})
    return out
