"""The text the shim writes to the agent's bash: its start-up functions and one line per command.

Runs inside the sandbox (its source is sent ahead of shim_session's). Stdlib only.

The shell is the agent's, and so are its `trap ... DEBUG`/`ERR`, `set -x`/`-v`/`-e`/`-u`/`-E`/`-T`
and `shopt -s extdebug`. Were they live while the harness's own lines run, the agent's traps would
fire on the markers and the state dump (and see the nonce and end tokens in $BASH_COMMAND), xtrace
and verbose would print them, and `set -e` would end the shell on the first failing marker `cd`.
So they are live only while the agent's command runs:

* Between commands the shell is in the harness's state: DEBUG and ERR ignored (``trap '' ...``),
  those options off. The markers, the state dump and the next line run there.
* ``__tc_cmd`` evals the command behind a restore group, on the same line (so bash's error
  messages keep the command's own line numbers): ``{ __tc_in=1; shopt -s extdebug; set -xe;
  trap -- 'E' ERR; trap -- 'D' DEBUG; } 2>/dev/null``. DEBUG comes last, so it fires for none of
  the group; xtrace writes the group's own lines to /dev/null.
* After the command, ``$?`` and ``$-`` are taken in a redirection's expansion (``${v:=$?}`` inside
  an unset key of an associative array: no command, so nothing fires or prints) on a group that
  only defines a function, so ``__tc_cmd`` returns 0: neither `set -e` nor an ERR trap act on
  the harness's own call when the command's last status was an exempt failure (``test -f x &&
  ...``), as at a prompt.
* ``trap -p ERR DEBUG`` reports the agent's traps to the shim (bash cannot keep a trap's text
  in a variable without forking); ``__tc_off``, a function (inside it the DEBUG and ERR traps are
  not inherited), puts them aside and turns the options off. The shim sends the traps back in
  the next command's line. Both run with stdout and stderr on /dev/null, so a DEBUG trap fires
  for exactly these two harness commands per step and what it prints is discarded (no secret
  is in either command's text); bash gives no way to drop a live DEBUG trap without running a
  command while it is live.

Known limits: a RETURN trap stays the agent's own (bash runs it only for functions and
``source``); with ``BASH_XTRACEFD`` set, the two commands above are traced to that fd; ``$?``
at the start of a command is 0.
"""

import re

try:  # imported as part of the package (tests); in the sandbox shim_state's source comes first
    from .shim_state import STATE_FD, dump_script
except ImportError:
    pass

# the status and flags of the command, taken where no command runs (see the module doc)
# (a dup of fd 0 onto itself: no file opened, so no traced call and no ptrace stop)
_TAKE = '0<&"0${__tc_A[${__tc_e:=$?}]-}${__tc_A[${__tc_f:=$-}]-}"'
_OPTS = (("x", "xtrace"), ("v", "verbose"), ("e", "errexit"), ("u", "nounset"),
         ("E", "errtrace"), ("T", "functrace"))
# Commands run inside a function so that a timeout can abandon the whole command list (the USR1
# trap returns from it) without killing the shell and its state. The EXIT trap reports the cwd
# through the trace, so a shell that a command ended restarts where it stood.
_FD = str(STATE_FD)
# The only % in it is the marker directory's %s (the shim fills it in).
INIT_SCRIPT = (
    # first line: bash numbers an eval's lines from its function's, so errors say "line 1"
    "__tc_cmd() { eval \"$__tc_p$__tc_t } 2>/dev/null$__tc_x; $__tc_c\"; "
    "{ __tc_q() { :; }; } " + _TAKE + "; }\n"
    "declare -A __tc_A; __tc_p='{ __tc_in=1; '; __tc_x=; __tc_so=\n"
    "__tc_run() { __tc_cmd " + _FD + ">&-; { builtin trap -p ERR DEBUG >&" + _FD + "; __tc_off; } "
    ">/dev/null 2>&1 " + _TAKE + "; }\n"
    "__tc_off() {\n"
    "  builtin trap -- '' DEBUG ERR; builtin set +xveuET; builtin echo \"P$__tc_in\" >&" + _FD + "\n"
    "  if [[ -n $__tc_in ]]; then __tc_p='{ __tc_in=1; '; __tc_so=; __tc_x=\n"
    "    if builtin shopt -q extdebug; then builtin shopt -u extdebug\n"
    "      __tc_p+='builtin shopt -s extdebug; '; __tc_so+=$'shopt -s extdebug\\n'; fi\n"
    "    local o=; for __tc_l in " + " ".join("%s:%s" % p for p in _OPTS) + "; do\n"
    "      if [[ $__tc_f == *${__tc_l::1}* ]]; then o+=${__tc_l::1}\n"
    "        __tc_so+=\"set -o ${__tc_l:2}\"$'\\n'; fi; done\n"
    "    if [[ -n $o ]]; then __tc_p+=\"builtin set -$o; \"; fi\n"
    "    if [[ $BASH_XTRACEFD =~ ^[0-9]+$ ]]; then __tc_x=\" $BASH_XTRACEFD>/dev/null\"; fi\n"
    "  fi; }\n"
    "trap 'return 137 2>/dev/null' USR1\n"
    "__tc_exit() { builtin cd \"%s/cwd$PWD\"; }\n"
    "trap '{ __tc_exit; } >/dev/null 2>&1' EXIT\n"
    "builtin trap -- '' DEBUG ERR\n"
)


def ansi_c_quote(text):
    """bash $'...' quoting that survives any byte, so the command text reaches eval intact."""
    out = []
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that no byte decoded to: not a real byte
        raw = text.encode("utf-8", "replace")
    for ch in raw:
        if ch in (0x27, 0x5C) or ch < 0x20 or ch >= 0x7F:
            out.append("\\x%02x" % ch)
        else:
            out.append(chr(ch))
    return "$'" + "".join(out) + "'"


def restore_traps(traps):
    """The restore group's trap part for ``traps`` (signal -> handler; absent: the default):
    ERR before DEBUG, so the DEBUG trap fires for none of the group."""
    code = "builtin trap - ERR DEBUG; "
    for sig in ("ERR", "DEBUG"):
        if sig in traps:
            code += "builtin trap -- %s %s; " % (ansi_c_quote(traps[sig]), sig)
    return code


def command_script(mark, seq, cmd, token, traps=None):
    """The line bash reads for command SEQ: its start marker, the command (behind the restore
    of the agent's ``traps``, see the module doc), the shell's state report (builtins only),
    then the end marker with the command's $? and secret token.
    The markers are ``builtin cd -P``: a `cd` function of the agent's (rvm defines one) is
    not called, and a physical cd fails in one chdir where a logical one retries the verbatim
    name (two traced calls, two stops, per marker)."""
    return ("__tc_c=%s; __tc_t=%s; __tc_in=; __tc_e=; __tc_f=; builtin cd -P %s/s%d 2>/dev/null; "
            "__tc_run </dev/null; %s; builtin cd -P %s/e%d.$__tc_e.%s 2>/dev/null\n") % (
        ansi_c_quote(cmd), ansi_c_quote(restore_traps(traps or {})), mark, seq,
        dump_script(token), mark, seq, token)


_TRAP = re.compile(r"trap -- '((?:[^']|'\\'')*)' (ERR|DEBUG)\n")


def parse_traps(text):
    """(traps, ok) from what ``__tc_run`` wrote ahead of a state report: ``trap -p ERR DEBUG``
    and ``P<1 if the restore group ran>``. traps: signal -> handler, or None when the group
    did not run (the command's first line did not parse: the agent's traps were never put
    back, so the ones before still hold). ok False: the text has another shape."""
    traps, pos = {}, 0
    while True:
        m = _TRAP.match(text, pos)
        if m is None:
            break
        traps[m.group(2)] = m.group(1).replace("'\\''", "'")
        pos = m.end()
    rest = text[pos:]
    if rest == "P1\n":
        return traps, True
    return None, rest == "P\n"  # not run: what trap -p saw is the harness's own state
