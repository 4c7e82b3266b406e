"""The canary property (issue 38): whatever path component of the cache, OUT, ROOT's special files
or a test helper directory is replaced by a symlink to a canary (or a FIFO, a link to /dev/zero, a
huge file), every command leaves the canary byte-identical, never shows its secret (in OUT, the
cache, stdout or stderr), and ends within the deadline with a clear outcome.

``prime(box, url, git_url)`` builds a template once (a root with a local module, two remote
packages served on loopback by :func:`serving` (an archive over HTTP, extracted into the cache,
and a git repository, cloned into it, when git is installed), a test file with a helper module,
variables and ignore files; a warm cache and an OUT); ``run_case(template, box, case)`` copies
it, replaces ``case.target`` by ``case.kind`` and runs ``case.command``, raising
``AssertionError`` when the property breaks. Used by tests/reliability/test_canary.py and
scripts/fuzz (``--kinds canary``).
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.files import write_tree
from support.paths import REPO

SECRET = "CANARY-SECRET-91c2e7"
# Beside the canary, never named by anything but a symlink inside the canary: read by nothing.
ELSEWHERE = "ELSEWHERE-SECRET-5d03aa"
DEADLINE = 90.0  # seconds a command may take (a hang for ever fails long before)
HUGE = 3 << 30  # a sparse file: 3 GiB that take no disk

# Paths relative to the box; "{pkg}" is the archive package's cache entry, "{git}" the git
# package's (the archive's when git is not installed): replacing one makes the build download
# and extract, or clone, it again through the gate.
CACHE_TARGETS = (
    "cache",
    "cache/v1",
    "cache/v1/packages",
    "cache/v1/packages/{pkg}",
    "cache/v1/packages/{pkg}/files",
    "cache/v1/packages/{pkg}/meta.json",
    "cache/v1/packages/{git}",
    "cache/v1/packages/{git}/files",
    "cache/v1/tmp",
    "cache/v1/locks",
    "cache/parse",
    "cache/modules",
    "cache/emit",
    "cache/builds",
    "cache/commands",
    "cache/module-keys",
    "cache/code",
    "cache/CACHEDIR.TAG",
    "cache/.use.lock",
    # The last automatic prune's stamp, touched by the prune and when a build makes the cache
    # (shell/cache_admin.py ``stamp_made``).
    "cache/.pruned",
)
OUT_TARGETS = (
    "out/main.tf.json",
    "out/flatten.manifest.json",
    "out/m",
    "out/m/main.tf.json",
    "out/tests",
    # A leftover temporary tree's name beside OUT, where the tree is staged while the graph checks
    # finish (flatten/shell/staging.py) and written by every write.
    ".out.flatten-stale",
)
ROOT_TARGETS = (
    "root/.terraformignore",
    "root/terraform.tfvars.json",
    "root/x.auto.tfvars.json",
    "root/extra.tf",
    "root/main_override.tf",
    "root/m",
    "root/m/main.tf",
    "root/tests",
    "root/tests/helper",
    "root/tests/helper/main.tf",
    "root/tests/a.tftest.hcl",
    "root/.terraform/modules/modules.json",
)
TARGETS = CACHE_TARGETS + OUT_TARGETS + ROOT_TARGETS
# A local module's directory (a call's ``./m``, a test run's ``./tests/helper``) replaced by a
# symlink to the canary: the canary *is* that module. Terraform's installer resolves a local
# module directory with filepath.EvalSymlinks wherever it leads (internal/initwd/module_install.go
# ``installLocalModule``; ``terraform get`` records the link's target as the module's Dir), as it
# reads ``../shared``; flatten follows it the same way (docs/reliability.md, "Symlinked module
# directories"), so the canary's files may appear in OUT, the cache and quoted in messages.
# Everything else still holds: the canary unchanged, and ELSEWHERE (reached only through a
# symlink inside the module leading out of it) nowhere.
MODULE_DIRS = ("root/m", "root/tests/helper")
KINDS = ("symlink", "fifo", "devzero", "huge")
# A rebuild that cannot replay: the same command line built before the target was replaced (its
# alias recorded), then a module edited. The flatten program forks the edited module's parse
# before typer is imported (flatten/shell/process.py ``_rebuild_early``), the previous version
# read in a child too (flatten/shell/incremental.py): those reads go through the gate as well.
EDITED = "build after an edit"
COMMANDS = (
    "build",
    "build --check",
    "build --exclude",
    "build opentofu --var-file",
    "build --format json",
    "build --offline",
    "graph",
    "providers",
    "cache",
    "cache clean",
    "hook flatten-check",
    "action.sh",
    "affected --base-out",
    "affected --since",
    EDITED,
)


@dataclass(frozen=True)
class Case:
    target: str
    kind: str
    command: str

    @property
    def name(self) -> str:
        return f"{self.command}|{self.target}|{self.kind}".replace(" ", "_").replace("/", "~")


def random_case(rnd: random.Random) -> Case:
    return Case(rnd.choice(TARGETS), rnd.choice(KINDS), rnd.choice(COMMANDS))


def _main(url: str | None, git_url: str | None, remote: bool = True) -> str:
    cloned = (
        f'module "cloned" {{\n  source = "git::{git_url}/child.git?ref=v1"\n  name   = var.name\n}}\n'
        if git_url and remote
        else ""
    )
    served = f'module "remote" {{\n  source = "{url}/app.tgz"\n  name   = var.name\n}}\n' if remote else ""
    return (
        'variable "name" {\n  type    = string\n  default = "d"\n}\n'
        'module "m" {\n  source = "./m"\n}\n'
        f"{served}"
        f"{cloned}"
        'resource "terraform_data" "a" {\n  input = var.name\n}\n'
    )


@contextmanager
def serving(base: Path) -> Iterator[tuple[str, str | None]]:
    """Serve the template's packages on loopback: the archive over HTTP, and the git repository
    with ``git daemon`` when git is installed (else None). Yields the two base URLs."""
    from support.remote import CHILD
    from support.servers import GIT, HTTPServer, Reply, git_daemon, make_repo, make_tar

    with ExitStack() as stack:
        srv = HTTPServer()
        stack.callback(srv.close)
        srv.routes["/app.tgz"] = Reply(200, make_tar(CHILD))
        git_url = None
        if GIT is not None:
            make_repo(base / "git", "child", [(CHILD, "v1")])
            git_url = stack.enter_context(git_daemon(base / "git"))
        yield srv.url, git_url


def root_files(url: str, git_url: str | None = None) -> dict[str, str]:
    return {
        "main.tf": _main(url, git_url),
        "extra.tf": "locals {\n  e = 1\n}\n",
        "main_override.tf": 'resource "terraform_data" "a" {\n  input = "o"\n}\n',
        "m/main.tf": 'resource "terraform_data" "m" {}\n',
        ".terraformignore": "*.log\n",
        "terraform.tfvars.json": '{"name": "from-file"}\n',
        "x.auto.tfvars.json": "{}\n",
        "debug.log": "log\n",
        "tests/a.tftest.hcl": 'run "r" {\n  module {\n    source = "./tests/helper"\n  }\n}\n',
        "tests/helper/main.tf": 'resource "terraform_data" "h" {}\n',
    }


def canary(box: Path) -> Path:
    """The canary: a directory (and a file in it) holding the secret, never to change; and, beside
    it, a directory holding ELSEWHERE that only a symlink in the canary (``notes.txt``) leads to."""
    write_tree(box / "elsewhere", {"secret.txt": f"{ELSEWHERE}\n"})
    made = write_tree(
        box / "canary",
        {
            "secret.txt": f"{SECRET}\n",
            "secret.tf": f'locals {{\n  leaked = "{SECRET}"\n}}\n',
            "meta.json": f'{{"token": "{SECRET}"}}\n',
            "files/main.tf": f"# {SECRET}\n",
            "0123456789abcdef0123456789abcdef01234567": SECRET,
        },
    )
    (made / "notes.txt").symlink_to("../elsewhere/secret.txt")
    return made


def snapshot(directory: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for current, dirs, names in os.walk(directory):
        for name in sorted(dirs + names):
            path = Path(current) / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                found[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                found[rel] = path.read_bytes()
            else:
                found[rel] = "dir"
    return found


def environ(box: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "FLATTEN_CACHE_DIR": str(box / "cache"),
        "FLATTEN_CACHE_MAX_SIZE": "1K",  # every build that writes prunes (when the stamp is due)
        "FLATTEN_PARSE_CACHE": "on",
        "COLUMNS": "80",
    }
    env.pop("FLATTEN_TRACEBACK", None)
    return env


def _flatten() -> list[str]:
    return [sys.executable, "-m", "flatten"]


def prime(box: Path, url: str, git_url: str | None = None) -> Path:
    """Write the template into ``box``: root, a warm cache and OUT. Returns ``box``."""
    write_tree(box / "root", root_files(url, git_url))
    modules = box / "root" / ".terraform" / "modules"
    write_tree(modules, {"modules.json": '{"Modules": [{"Key": "", "Source": "", "Dir": "."}]}\n'})
    proc = subprocess.run(
        [*_flatten(), "build", str(box / "root"), "--out", str(box / "out")],
        capture_output=True,
        text=True,
        env=environ(box),
        timeout=DEADLINE,
    )
    assert proc.returncode == 0, proc.stderr
    return box


def _package(box: Path, kind: str) -> str:
    """The cache entry of the template's package fetched by ``kind`` (``http``, ``git``): its
    ``meta.json`` names it; the other one, or a name of none, when there is no such package."""
    packages = box / "cache" / "v1" / "packages"
    found = sorted(p.name for p in packages.iterdir()) if packages.is_dir() else []
    for name in found:
        meta = packages / name / "meta.json"
        if meta.is_file() and f'"{kind} ' in meta.read_text(encoding="utf-8", errors="replace"):
            return name
    return found[0] if found else "0" * 64


def _replace(box: Path, target: str, kind: str, canary_dir: Path) -> None:
    if "{pkg}" in target:
        target = target.replace("{pkg}", _package(box, "http"))
    if "{git}" in target:
        target = target.replace("{git}", _package(box, "git"))
    path = box / target
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        # A directory's place links to the canary directory, a file's to the secret file.
        is_file = "." in path.name and not path.name.startswith(".terraform")
        path.symlink_to(canary_dir / ("secret.txt" if is_file else ""))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as f:
            f.truncate(HUGE)


def _command(box: Path, command: str) -> tuple[list[str], dict[str, str]]:
    root, out = str(box / "root"), str(box / "out")
    env = environ(box)
    if command == "action.sh":
        env.update(
            {
                "INPUT_ROOTS": root,
                "INPUT_OUT": out,
                "INPUT_CHECK": "true",
                "FLATTEN_BIN": str(Path(sys.executable).parent / "flatten"),
                "RUNNER_TEMP": str(box / "runner"),
                "GITHUB_OUTPUT": str(box / "runner" / "output"),
                "GITHUB_STEP_SUMMARY": str(box / "runner" / "summary"),
                "GITHUB_ACTIONS": "true",
            }
        )
        (box / "runner").mkdir(exist_ok=True)
        return ["bash", str(REPO / "scripts" / "action.sh"), "run"], env
    if command.startswith("hook "):
        # The hooks' entries (.pre-commit-hooks.yaml) with the args a repository gives them.
        check = ["--check"] if command.endswith("check") else []
        return [*_flatten(), "build", *check, root, "--out", out], env
    if command in ("cache", "cache clean"):
        return [*_flatten(), *command.split()], env
    if command in ("graph", "providers"):
        return [*_flatten(), command, root], env
    if command == "affected --since":
        _commit_as_ref(box)
        return [*_flatten(), "affected", "root", "--since", "HEAD", "--format", "json"], env
    if command == "affected --base-out":  # OUT read as the old side (flatten/shell/affected.py)
        return [*_flatten(), "affected", "root", "--base-out", out, "--format", "json"], env
    args = [*_flatten(), "build", root, "--out", out]
    if command == EDITED:
        # The previous build's record kept: at 1K the prune removes it as soon as it is written
        # (the prune through a replaced path is every other command's case).
        env["FLATTEN_CACHE_MAX_SIZE"] = "1G"
    elif command == "build --check":
        args.append("--check")
    elif command == "build --exclude":
        args += ["--exclude", "*.txt"]
    elif command == "build opentofu --var-file":
        args += ["--dialect", "opentofu", "--var-file", str(box / "root" / "terraform.tfvars.json")]
    elif command == "build --format json":
        args += ["--format", "json"]
    elif command == "build --offline":
        args.append("--offline")
    return args, env


def _git(box: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=canary", "-c", "user.email=canary@example.invalid", *args],
        cwd=box,
        check=True,
        capture_output=True,
        timeout=DEADLINE,
    )


def _commit_as_ref(box: Path) -> None:
    """Make the case's hostile ROOT the commit at REF, then edit the working tree.

    ``affected --since HEAD`` then builds the working tree and the tree at REF, which
    flatten/shell/git_ref.py writes from ``git archive`` into a private directory: a symlink or a
    /dev/zero link committed there must lead nowhere. Git keeps a link as a link; a FIFO or a
    3 GiB file stay in the working tree only (git cannot commit the one, and would read the other
    whole). The comment appended to main.tf makes the root a candidate, so REF is built.
    """
    _git(box, "init", "--quiet", "--initial-branch=main")
    special = []
    for current, dirs, names in os.walk(box / "root"):
        for name in dirs + names:
            path = Path(current) / name
            if not path.is_symlink() and (path.is_fifo() or (path.is_file() and path.stat().st_size >= HUGE)):
                special.append(":!" + path.relative_to(box).as_posix())
    _git(box, "add", "-A", "--", "root", *special)
    _git(box, "commit", "--quiet", "--allow-empty", "-m", "ref")
    main = box / "root" / "main.tf"
    if main.is_file() and not main.is_symlink():
        with open(main, "a", encoding="utf-8") as f:
            f.write("# edited after REF\n")


def warm() -> None:
    """Import every module of flatten into this process, once, before ``run_case(forked=True)``:
    each forked command then starts where a fresh interpreter would be after its imports."""
    import importlib
    import pkgutil

    import flatten

    for module in pkgutil.walk_packages(flatten.__path__, "flatten."):
        importlib.import_module(module.name)


def _forked(
    argv: list[str], env: dict[str, str], cwd: Path, deadline: float
) -> subprocess.CompletedProcess[str]:
    """Run ``flatten ARGV`` as a forked child of this process, which has imported flatten
    (``warm``): the same entry point as the ``flatten`` script (flatten/__main__.py ``main``, which
    ends the process with ``os._exit``), with ``env``, ``cwd``, stdin from /dev/null and stdout and
    stderr in files. The child leads a process group of its own, killed whole at the deadline (the
    prefetching children with it). Raises ``subprocess.TimeoutExpired`` as ``subprocess.run`` does.
    """
    import flatten.__main__ as entry

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()  # nothing buffered here is written twice by the child
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            status = 70
            try:
                os.setpgid(0, 0)
                for signum in (signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                # New streams on fds 1 and 2: the parent's may be a test runner's capture objects.
                sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
                    2, "w", encoding="utf-8", errors="backslashreplace", closefd=False
                )
                sys.argv = ["flatten", *argv]
                entry.main()
            except BaseException as exc:  # only a fault of this harness ends here
                os.write(2, f"canary harness: {exc!r}\n".encode())
            finally:
                os._exit(status)
        pidfd = os.pidfd_open(pid)
        try:
            ready, _, _ = select.select([pidfd], [], [], deadline)
            if not ready:
                _kill_group(pid)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(argv, deadline)
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(pidfd)
            _kill_group(pid)  # whatever the command left running (none should be)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            argv,
            os.waitstatus_to_exitcode(status),
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group has ended already
        os.killpg(pid, signal.SIGKILL)


def _run(
    args: list[str], env: dict[str, str], box: Path, forked: bool, deadline: float
) -> subprocess.CompletedProcess[str]:
    if forked and args[: len(_flatten())] == _flatten():
        return _forked(args[len(_flatten()) :], env, box, deadline)
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=deadline, cwd=box)


def _build_before_the_edit(box: Path, forked: bool, deadline: float) -> None:
    """Build the copied template with ``EDITED``'s command line, its files older than the build
    (a build records its inputs, and the command line's alias, only then: flatten/shell/replay.py),
    so that the case's command finds this build's alias and rebuilds from it."""
    from support.cli import age_tree

    # Local modules only: a build that reads a remote package keeps no record to rebuild from
    # (flatten/shell/replay.py ``_module_directories``).
    (box / "root" / "main.tf").write_text(_main(None, None, remote=False), encoding="utf-8")
    age_tree(box / "root")  # the template's own files only: nothing is replaced yet
    args, env = _command(box, EDITED)
    proc = _run(args, env, box, forked, deadline)
    assert proc.returncode == 0, f"the build before the edit failed:\n{proc.stderr[-2000:]}"


def _edit(box: Path) -> None:
    """Edit the local module (or, where the case replaced it, the root's main.tf) as a user
    would: a comment appended to a regular file, never through a link the case made."""
    for rel in ("root/m/main.tf", "root/main.tf"):
        path = box / rel
        linked = any(p.is_symlink() for p in (path, path.parent))
        if not linked and path.is_file() and path.stat().st_size < 1 << 20:  # not the huge file
            with open(path, "a", encoding="utf-8") as f:
                f.write("# edited\n")
            return


def run_case(
    template: Path, box: Path, case: Case, *, forked: bool = False, deadline: float = DEADLINE
) -> int:
    """Run one case in ``box`` (a copy of ``template``); return the exit code. The command must
    end within ``deadline`` seconds.

    ``forked``: run flatten's commands in a forked child of this process (``warm`` first) instead
    of a fresh interpreter (scripts/fuzz: several times faster; ``scripts/action.sh`` is always a
    fresh process)."""
    shutil.copytree(template, box, symlinks=True)
    canary_dir = canary(box)
    before = snapshot(canary_dir)
    if case.command == EDITED:
        _build_before_the_edit(box, forked, deadline)
    _replace(box, case.target, case.kind, canary_dir)
    if case.command == EDITED:
        _edit(box)
    args, env = _command(box, case.command)
    try:
        proc = _run(args, env, box, forked, deadline)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{case.name}: did not end within {deadline} s") from None
    text = proc.stdout + proc.stderr
    # The canary as a local module directory is read as Terraform reads it (MODULE_DIRS): its
    # files may be written to OUT, kept in the cache and quoted (``--check`` shows the first line
    # of a file it would add) like any module's.
    secrets = [ELSEWHERE] if case.kind == "symlink" and case.target in MODULE_DIRS else [SECRET, ELSEWHERE]
    assert snapshot(canary_dir) == before, f"{case.name}: the canary changed"
    for secret in secrets:
        at = text.find(secret)
        assert at < 0, f"{case.name}: {secret} was printed:\n{text[max(0, at - 1500) : at + 200]}"
    assert "Traceback" not in text and "[Errno" not in text, f"{case.name}:\n{text[-3000:]}"
    assert proc.returncode in (0, 1, 2), f"{case.name}: exit {proc.returncode}\n{text[-2000:]}"
    if proc.returncode and case.command != "action.sh":
        assert proc.stderr.strip() or proc.stdout.strip(), f"{case.name}: failed without a word"
    for where in ("out", "cache"):
        top = box / where
        if top.is_symlink():
            continue  # the case made it the canary itself: compared above
        real_top = os.path.realpath(top)
        for current, dirs, names in os.walk(top):
            for name in dirs + names:
                path = Path(current) / name
                if where == "out" and path.is_symlink() and path != box / case.target:
                    # A link flatten wrote into OUT (not the case's own) stays inside OUT.
                    real = os.path.realpath(path)
                    inside = os.path.commonpath([real, real_top]) == real_top
                    assert inside, f"{case.name}: {path} links out of OUT to {real}"
                if path.is_symlink() or not path.is_file() or path.stat().st_size > 64 << 20:
                    continue
                data = path.read_bytes()
                for secret in secrets:
                    assert secret.encode() not in data, f"{case.name}: {secret} is in {path}"
    return proc.returncode
