"""The verifier's root, made at verification: a file system the agent could not have touched.

Runs inside the sandbox, in the verifier's namespace init (shell.py sends this source ahead of
nsinit.py, whose ``mount``, ``libc`` and ``MS_*`` names it uses; stdlib only).

Every path the verifier resolves starts at a fresh tmpfs root that exists only in the verifier's
mount namespace, so no agent process can rename, remove or replace anything on the way to it:

* the toolchain (``/usr`` and the ``/bin``, ``/lib*`` links) comes from the image's own layers,
  read-only binds of Docker's layer folders stacked under a verifier-only overlay: the
  interpreter, pytest, their libraries and the ELF loader are the image's, whatever the agent
  did to its copy (files rewritten in place, ``.pth`` hooks, wrappers on ``PATH``);
* ``/etc`` is a copy of the agent's (answers may live there) in which the loader's and Python's
  configuration (``ld.so.*``, ``alternatives``, ``python3*``) are the image's;
* what the task declares (``agent_may_modify`` under ``/usr``: a pip or apt install the tests
  need) is copied from the agent's file system into the overlay, without hook files;
* everything else (``/app``, ``/tmp``, ``/root``, services' data, ...) is the agent's, bound;
* ``/tests`` and ``/logs/verifier`` are folders of that root (their own tmpfs mounts come next),
  out of every agent process's reach by construction.

Without layer folders (another storage driver, a remote or rootless engine) the toolchain is the
agent's, and the report says so: the provenance audit is then the only line.
"""

LAYERS = "/.termcredit/layers"
NEWROOT = "/.termcredit/root"  # verifier-only tmpfs: the new root and the overlay's work dirs
TOOLCHAIN = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_IMAGE = ("ld.so.preload", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives")
SKIP_TOP = frozenset(("proc", "sys", "dev", "tests", "logs", ".termcredit"))
COPY_MAX_BYTES, COPY_MAX_FILES = 512 << 20, 100_000  # declared content and /etc, each
HOOK_SUFFIXES = (".pth", "customize.py", "entry_points.txt")
HOOK_PARTS = ("customize.", "__editable__")
# the test runner's import guard (verifier_guard.py, sent as GUARD_SOURCE): one module and one
# .pth line in every site folder of the image's Pythons
GUARD_NAME = "_termcredit_verifier_guard"
SITE_FOLDERS = ("/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages",
                "/usr/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                "/usr/local/lib/python3*/dist-packages")


def _is_hook(name):
    """Files the interpreter or pytest run on their own: never copied from the agent's tree."""
    return name.endswith(HOOK_SUFFIXES) or any(p in name for p in HOOK_PARTS)


class Budget:
    def __init__(self):
        self.bytes, self.files, self.notes = 0, 0, []

    def take(self, size, what):
        self.files += 1
        self.bytes += size
        if self.files > COPY_MAX_FILES or self.bytes > COPY_MAX_BYTES:
            if not any(n.startswith("copy cap") for n in self.notes):
                self.notes.append("copy cap reached at %s: the rest not copied" % what)
            return False
        return True


def copy_tree(src, dst, budget, *, skip_hooks):
    """Copy ``src`` (the agent's, never following links) to ``dst``: files, folders, links."""
    import shutil
    import stat as st

    try:
        info = os.lstat(src)
    except OSError:
        return
    name = os.path.basename(src)
    if skip_hooks and _is_hook(name):
        budget.notes.append("hook not copied: %s" % src)
        return
    if st.S_ISLNK(info.st_mode):
        if budget.take(0, src):
            os.symlink(os.readlink(src), dst)
    elif st.S_ISDIR(info.st_mode):
        os.makedirs(dst, exist_ok=True)
        try:
            names = os.listdir(src)
        except OSError:
            names = []
        for child in names:
            copy_tree(os.path.join(src, child), os.path.join(dst, child), budget,
                      skip_hooks=skip_hooks)
        os.chmod(dst, st.S_IMODE(info.st_mode))
    elif st.S_ISREG(info.st_mode):
        if not budget.take(info.st_size, src):
            return
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f, open(dst, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        os.chmod(dst, st.S_IMODE(info.st_mode))


def _bind(src, dst, rec=True):
    mount(src, dst, None, MS_BIND | (MS_REC if rec else 0))


def _declared_roots(pattern):
    """The agent's paths a declared glob stands for, up to its first ``**`` (whole trees)."""
    import glob

    parts = pattern.split("/")
    if "**" in parts:
        parts = parts[: parts.index("**")]
    return sorted(glob.glob("/".join(parts) or "/"))


def _overlay(root):
    """The image's layers, top first, under a writable verifier-only upper at ``root/usr``'s
    parent. Returns the merged image root, or None without layer folders."""
    try:
        layers = sorted((n for n in os.listdir(LAYERS) if n.isdigit()), key=int)
    except OSError:
        return None
    if not layers:
        return None
    base = root + "/.image"
    for name in ("upper", "work", "merged"):
        os.makedirs(base + "/" + name)
    lower = ":".join("%s/%s" % (LAYERS, n) for n in layers)
    mount("overlay", base + "/merged", "overlay", 0,
          "lowerdir=%s,upperdir=%s/upper,workdir=%s/work" % (lower, base, base))
    return base + "/merged"


def prepare_root(declared, workdir):
    """Build the verifier's root (see the module's note) and pivot into it. Returns a report:
    ``toolchain`` ("image" or "agent"), notes."""
    import stat as st

    os.makedirs(NEWROOT, exist_ok=True)
    mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID, "mode=0755")
    root = NEWROOT
    image = _overlay(root)
    budget, notes = Budget(), []
    # the agent's declared content under the toolchain, read before anything is covered
    for pattern in declared:
        if not pattern.startswith("/usr/"):
            continue
        for src in _declared_roots(pattern):
            # its folders must be real folders under /usr (no link on the way); the entry
            # itself is copied as it is, a link as a link (a library's soname link)
            parent = os.path.dirname(src)
            if image is None or not src.startswith("/usr/") or os.path.realpath(parent) != parent:
                notes.append("declared path not copied (a link on the way, or outside /usr): %s"
                             % src)
                continue
            dst = image + src
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isdir(dst) and not os.path.islink(dst):
                pass  # merged into the image's folder
            elif os.path.lexists(dst):
                os.unlink(dst)
            copy_tree(src, dst, budget, skip_hooks=True)
    for name in sorted(os.listdir("/")):
        src, dst = "/" + name, root + "/" + name
        if name in SKIP_TOP:
            continue
        if image is not None and name in TOOLCHAIN:
            src = image + "/" + name
            if not os.path.lexists(src):
                notes.append("/%s is not in the image: left out" % name)
                continue
        elif name == "etc":
            continue  # below
        info = os.lstat(src)
        if st.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(src), dst)
        elif st.S_ISDIR(info.st_mode):
            os.mkdir(dst)
            _bind(src, dst)
        elif st.S_ISREG(info.st_mode):
            open(dst, "w").close()
            _bind(src, dst, rec=False)
    if image is not None:
        for name in TOOLCHAIN:  # image links the agent removed come back too
            if not os.path.lexists(root + "/" + name) and os.path.islink(image + "/" + name):
                os.symlink(os.readlink(image + "/" + name), root + "/" + name)
    _make_etc(root, image, budget)
    if image is not None and not _install_guard(image):
        notes.append("no Python site folder under the image's /usr: test runners not guarded")
    for name in ("proc", "sys", "dev"):
        os.mkdir(root + "/" + name)
        _bind("/" + name, root + "/" + name)
    for path in ("/tests", "/logs/verifier", "/logs/agent"):
        os.makedirs(root + path, mode=0o755, exist_ok=True)
    if os.path.isdir("/logs/agent") and not os.path.islink("/logs/agent"):
        _bind("/logs/agent", root + "/logs/agent")
    _pivot(root)
    try:
        os.chdir(workdir or "/")
    except OSError:
        os.chdir("/")
    return {"op": "prepared", "toolchain": "image" if image else "agent",
            "notes": [n[:300] for n in (notes + budget.notes)[:100]]}


def _install_guard(image):
    """Write the import guard into the image's site folders (the verifier's overlay only).
    Returns the folders guarded."""
    import glob

    done = []
    for pattern in SITE_FOLDERS:
        for folder in sorted(glob.glob(image + pattern)):
            if os.path.islink(folder) or not os.path.isdir(folder) or folder in done:
                continue
            with open(folder + "/" + GUARD_NAME + ".py", "w") as f:
                f.write(GUARD_SOURCE)  # noqa: F821 (sent ahead by shell.py)
            with open(folder + "/" + GUARD_NAME + ".pth", "w") as f:
                f.write("import %s; %s.install()\n" % (GUARD_NAME, GUARD_NAME))
            done.append(folder)
    return done


def _make_etc(root, image, budget):
    """/etc: the agent's, copied (answers may live there), with the image's loader and
    Python configuration."""
    etc = root + "/etc"
    if os.path.isdir("/etc") and not os.path.islink("/etc"):
        copy_tree("/etc", etc, budget, skip_hooks=False)
    else:
        os.makedirs(etc, exist_ok=True)
    if image is None:
        return
    import shutil

    names = set(ETC_IMAGE)
    for tree in (etc, image + "/etc"):
        names |= {n for n in (os.listdir(tree) if os.path.isdir(tree) else [])
                  if n.startswith("python3")}
    for name in sorted(names):
        mine, theirs = etc + "/" + name, image + "/etc/" + name
        if os.path.isdir(mine) and not os.path.islink(mine):
            shutil.rmtree(mine)
        elif os.path.lexists(mine):
            os.unlink(mine)
        if os.path.lexists(theirs):
            copy_tree(theirs, mine, Budget(), skip_hooks=False)


def _pivot(root):
    """Make ``root`` this namespace's root (switch_root's way: move it over ``/``, then chroot;
    Docker's seccomp profile refuses pivot_root). The old root stays below, out of reach."""
    os.chdir(root)
    mount(root, "/", None, 8192)  # MS_MOVE
    check(libc.chroot(b"."), "chroot")
    os.chdir("/")
