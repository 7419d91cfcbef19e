"""What a test runner in the verifier may import from the agent's files.

Runs inside the sandbox, only in the verifier's own root (sandbox/pristine.py writes it, with a
``.pth`` line that calls ``install()``, into the site folders of the image's Pythons; the agent's
Pythons never see it). ``python3 -m pytest`` puts its working directory (the agent's) first on
``sys.path``, so any module the runner or the tests import by name could be the agent's: a
package named like one pytest needs (``attr``), like a library the tests use, a plugin advertised
by a ``*.dist-info``. A denylist of names is an arms race; here the rule is by provenance.

In a test runner's process (pytest, py.test or unittest, as ``-m`` or as the script):

* a top-level module that the trusted folders have (the image's ``/usr``, the task's ``/tests``)
  is always theirs, wherever else on ``sys.path`` the same name is;
* a module only the agent's files have loads when the tests import it by name (an import
  statement or ``import_module("name")`` in a file under ``/tests``), when code from the agent's
  files imports it (an answer module's own helpers), or when it is named like a test file;
* no distribution is read from the agent's files (no entry points: no plugins).

Other processes (the agent's programs that the tests run) are left as Python makes them.
Python 3.6+ stdlib only: this runs under whatever interpreter the image has.
"""

import os
import re
import sys

TRUSTED = ("/usr/", "/tests/")
TESTS = "/tests"
RUNNER_SCRIPTS = ("pytest", "py.test", "pytest-3", "py.test-3", "pytest3")
MAX_TEST_FILES = 2000
# frames that only pass an import on (import_module, importlib's Python copies): the importer
# is the frame below them
_IMPORT_MACHINERY = re.compile(r"/importlib/(__init__|_bootstrap(_external)?)\.py$")


def _cmdline():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read().split(b"\0")[:-1]
        return [a.decode("utf-8", "surrogateescape") for a in raw]
    except OSError:
        return list(getattr(sys, "orig_argv", []))


def is_runner(argv):
    """Is ``argv`` (an interpreter's command line) a test runner: ``-m pytest``, ``-m py.test``,
    ``-m unittest``, or a ``pytest`` script?"""
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            args.insert(0, arg)
            break
        flags = arg[1:]
        for i, flag in enumerate(flags):
            if flag in "cmWX":
                value = flags[i + 1:] or (args.pop(0) if args else "")
                if flag == "c":
                    return False
                if flag == "m":  # -m pytest, -m py.test, -m unittest (or a submodule)
                    return value == "py.test" or value.split(".")[0] in ("pytest", "unittest")
                break
    if not args:
        return False
    return os.path.basename(args[0]) in RUNNER_SCRIPTS


class Guard:
    def __init__(self, trusted=TRUSTED, tests=TESTS):
        self.trusted = tuple(trusted)
        self.tests = tests
        self._imports = None
        self._toolchain = {}

    def is_trusted(self, path):
        real = os.path.realpath(path or ".")
        return any((real + "/").startswith(p) for p in self.trusted)

    def test_imports(self):
        """Top-level names the files under the tests folder import."""
        if self._imports is None:
            self._imports = _imports_under(self.tests)
        return self._imports

    def toolchain_has(self, name):
        from importlib.machinery import PathFinder

        paths = [p for p in sys.path if isinstance(p, str) and self.is_trusted(p)]
        key = (name, tuple(paths))
        if key not in self._toolchain:
            self._toolchain[key] = PathFinder.find_spec(name, paths) is not None
        return self._toolchain[key]

    def may_load(self, name):
        """May ``name`` (top level) come from an untrusted folder?"""
        if self.toolchain_has(name):
            return False
        if name in self.test_imports() or name == "conftest":
            return True
        if name.startswith("test_") or name.endswith("_test"):
            return True  # pytest imports the test files it collects by their names
        return self._imported_by_untrusted_code()

    def _imported_by_untrusted_code(self):
        frame = sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<") or name == __file__ or _IMPORT_MACHINERY.search(name):
                frame = frame.f_back
                continue
            return not self.is_trusted(name)
        return False

    def path_hook(self, entry):
        if self.is_trusted(entry or os.getcwd()):
            raise ImportError("trusted: the usual finder")
        for hook in sys.path_hooks:
            if getattr(hook, "__self__", None) is self:
                continue
            try:
                return GuardedFinder(hook(entry), self)
            except ImportError:
                continue
        raise ImportError("no finder for %r" % entry)

    def install(self):
        sys.path_hooks.insert(0, self.path_hook)
        for key in list(sys.path_importer_cache):
            if not self.is_trusted(key):
                del sys.path_importer_cache[key]
        _hide_untrusted_distributions(self)


class GuardedFinder:
    """An untrusted folder's finder: top-level names only as ``Guard.may_load`` allows."""

    def __init__(self, inner, guard):
        self._inner, self._guard = inner, guard

    def find_spec(self, fullname, target=None):
        if "." not in fullname and not self._guard.may_load(fullname):
            return None
        return self._inner.find_spec(fullname, target)

    def invalidate_caches(self):
        if hasattr(self._inner, "invalidate_caches"):
            self._inner.invalidate_caches()

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _hide_untrusted_distributions(guard):
    """importlib.metadata (pytest's plugin entry points) reads only trusted folders."""
    from importlib.machinery import PathFinder

    original = PathFinder.find_distributions

    def find_distributions(*args, **kwargs):
        from importlib.metadata import DistributionFinder

        context = args[0] if args else kwargs.get("context", DistributionFinder.Context())
        kept = [p for p in context.path if isinstance(p, str) and guard.is_trusted(p)]
        return original(DistributionFinder.Context(name=context.name, path=kept))

    PathFinder.find_distributions = staticmethod(find_distributions)


def _imports_under(folder):
    import ast

    names, seen = set(), 0
    for dirpath, _, files in os.walk(folder):
        for fname in sorted(files):
            if not fname.endswith(".py"):
                continue
            seen += 1
            if seen > MAX_TEST_FILES:
                return names
            try:
                with open(os.path.join(dirpath, fname), "rb") as f:
                    tree = ast.parse(f.read())
            except (OSError, SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names.add(node.module.split(".")[0])
                elif isinstance(node, ast.Call) and node.args:
                    func = node.func
                    called = func.attr if isinstance(func, ast.Attribute) else \
                        getattr(func, "id", "")
                    arg = node.args[0]
                    value = getattr(arg, "value", getattr(arg, "s", None))
                    if called in ("import_module", "__import__") and isinstance(value, str):
                        names.add(value.split(".")[0])
    return names


_INSTALLED = []


def install(argv=None, **where):
    """Guard this process if it is a test runner (the ``.pth`` line calls this; a second call,
    from a second site folder's line, does nothing)."""
    if _INSTALLED or not is_runner(_cmdline() if argv is None else argv):
        return _INSTALLED[0] if _INSTALLED else None
    guard = Guard(**where)
    guard.install()
    _INSTALLED.append(guard)
    return guard
