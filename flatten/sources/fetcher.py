"""The remote module fetcher: registry, git and archive sources to directories on disk (spec §5.7, §6.3).

:class:`RemoteFetcher` implements :class:`flatten.stages.graph.ModuleFetcher`. For each registry or
remote module call it tries, in order:

1. Terraform's own installation (``<data dir>/modules/modules.json``), when the record for the
   call's key has the same source (and a version the constraint allows): no network at all;
2. with ``options.offline``, nothing else: a call not installed is an error ("Module not
   installed") that says how to fix it;
3. the registry protocol or go-getter, through the content-addressed download cache.

The result is the module's directory plus its :class:`~flatten.sources.package.ModulePackage`
(address, version, commit, digest). With ``options.locked``, a resolution that differs from the
previous manifest's record for the module is an error. Problems are diagnostics at the calling
block's ``source``; messages never contain a credential. Calls of one module can be resolved in
parallel with :meth:`RemoteFetcher.prefetch`.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from flatten import gate
from flatten.lang.diagnostics import Code, Diagnostic, Diagnostics, Extra
from flatten.lang.options import Options
from flatten.lang.oserror import describe_os_error
from flatten.lang.redact import Scrubber, redact_url, strip_userinfo
from flatten.lang.versions import InvalidConstraint, parse_constraints, select_module_version
from flatten.sources.address import (
    InvalidSourceAddress,
    RegistrySource,
    RemoteSource,
    parse_remote_source,
)
from flatten.sources.cache import CacheAuth, PackageCache, tree_digest
from flatten.sources.env import SourceEnv
from flatten.sources.git import resolve_ref
from flatten.sources.installed import Installed, InstalledModule, read_installed
from flatten.sources.package import FetchedModule, FetchError, ModulePackage, SizeBudget
from flatten.sources.progress import Progress

if TYPE_CHECKING:
    from flatten.sources.getter import Getter, GetterAddress
    from flatten.sources.registry import RegistryClient
    from flatten.sources.transport import Deadline
    from flatten.stages.graph import ModuleCall, ModuleNode

__all__ = ["LockedModule", "RemoteFetcher", "installed_only", "read_lock"]

_GLOB_CHARS = frozenset("*?[")

# A download's temporary directory (``<cache>/v1/tmp/pkg-*``) older than this is the leftover of
# a build killed outright (kill -9, a power cut): no live download is that old, since each one ends
# by FLATTEN_DOWNLOAD_TIMEOUT (10 minutes by default). Age, not the owner's pid, decides: a cache
# may be shared by containers whose pids the sweeping process cannot see.
STALE_TMP_AGE = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class LockedModule:
    """What a previous build's manifest recorded for one remote module."""

    address: str
    version: str | None = None
    commit: str | None = None
    digest: str | None = None


def read_lock(manifest: bytes | str | None) -> dict[str, LockedModule]:
    """Return the remote-module records of a previous manifest (``flatten.manifest.json``), by module.

    Anything unreadable gives {} (and ``--locked`` then refuses every remote module).
    """
    if manifest is None:
        return {}
    try:
        doc = json.loads(manifest)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json can read
        return {}
    out: dict[str, LockedModule] = {}
    modules = doc.get("modules") if isinstance(doc, dict) else None
    for entry in modules if isinstance(modules, list) else []:
        pkg = entry.get("package") if isinstance(entry, dict) else None
        if not isinstance(pkg, dict) or not isinstance(entry.get("module"), str):
            continue

        def text(name: str, pkg: dict[str, object] = pkg) -> str | None:
            value = pkg.get(name)
            return value if isinstance(value, str) else None

        out[entry["module"]] = LockedModule(
            text("address") or "", text("version"), text("commit"), text("digest")
        )
    return out


@dataclass(slots=True)
class _Result:
    fetched: FetchedModule | None
    diags: Diagnostics = field(default_factory=Diagnostics)


class _Problem(Exception):
    def __init__(self, summary: str, detail: str, code: Code | None = None) -> None:
        super().__init__(detail)
        self.summary = summary
        self.detail = detail
        self.code = code


class RemoteFetcher:
    """Fetches registry and remote module packages for :func:`flatten.stages.graph.build_graph`.

    ``root`` is the root module directory (where ``.terraform`` lives), ``env`` the settings
    read from the environment at the edge, ``lock`` the records of the previous manifest
    (:func:`read_lock`; used with ``options.locked``), ``progress`` where to report downloads.
    ``cache_auth`` tags the download cache's entries (the shell's ``flatten.shell.cache_auth``;
    None: no key, every cached package is a miss).

    >>> from flatten.sources.env import SourceEnv
    >>> fetcher = RemoteFetcher(
    ...     Path("."), options=Options(offline=True), env=SourceEnv(Path("/nonexistent")), cache_auth=None
    ... )
    """

    def __init__(
        self,
        root: Path,
        *,
        options: Options,
        env: SourceEnv,
        cache_auth: CacheAuth | None,
        lock: Mapping[str, LockedModule] | None = None,
        progress: Progress | None = None,
        downloads: bool = True,
    ) -> None:
        self._root = root.absolute()
        self._downloads = downloads
        self._options = options
        self._env = env
        self._lock = dict(lock or {})
        self._progress = progress or Progress(sys.stderr if env.progress else None)
        self._made: tuple[RegistryClient, Getter] | None = None
        self._budget: Deadline | None = None  # set with the clients: the build's download deadline
        self._installed = (
            read_installed(self._root, env.data_dir)
            if env.use_installed
            else Installed(self._root, self._root, {})
        )
        self._results: dict[str, _Result] = {}
        self._mutex = threading.Lock()
        self._swept = False
        # Every message hides URL userinfo and the registry tokens (a server may echo one back),
        # and shows control characters a server sent as escapes.
        self._scrub = Scrubber(t.reveal() for t in env.tokens.values())
        self._cache = PackageCache(env.cache_dir, cache_auth, self._scrub)

    def _clients(self) -> tuple[RegistryClient, Getter]:
        # The HTTP stack (urllib, http.client, ssl, archives) is imported only by a build that
        # downloads: most builds have only local modules (0.02 s of every run otherwise).
        with self._mutex:
            if self._made is None:
                from flatten.sources.getter import Getter
                from flatten.sources.registry import RegistryClient
                from flatten.sources.transport import Deadline, HttpClient

                env = self._env
                # One deadline for every download of this build, whatever the transport: http,
                # https, the registry's API, git (FLATTEN_DOWNLOAD_TIMEOUT, 600 s by default).
                budget = Deadline.after(env.download_timeout, "FLATTEN_DOWNLOAD_TIMEOUT")
                self._budget = budget
                http = HttpClient(
                    tokens=env.tokens,
                    insecure_hosts=env.insecure_hosts,
                    timeout=env.timeout,
                    retries=env.retries,
                    retry_wait=env.retry_wait,
                    idle_timeout=env.idle_timeout,
                    budget=budget,
                )
                self._made = (
                    RegistryClient(http, insecure_hosts=env.insecure_hosts),
                    Getter(
                        http,
                        git=env.git,
                        limits=env.limits,
                        download_timeout=env.download_timeout,
                        deadline=budget,
                        # One size budget for the build's packages, archives and git alike.
                        budget=SizeBudget(env.limits.max_bytes),
                    ),
                )
            return self._made

    # -- ModuleFetcher -----------------------------------------------------------------------

    def fetch(self, call: ModuleCall, *, parent: ModuleNode) -> tuple[FetchedModule | None, Diagnostics]:
        """Return the module directory and package for a registry or remote call, and diagnostics."""
        key = ".".join((*parent.path, call.name))
        with self._mutex:
            done = self._results.pop(key, None)
        if done is None:
            done = self._resolve(call, key)
        return done.fetched, done.diags

    def prefetch(self, calls: Sequence[ModuleCall], *, parent: ModuleNode) -> None:
        """Resolve the remote calls of one module in parallel; :meth:`fetch` then returns the results."""
        todo = [c for c in calls if isinstance(c.address, (RegistrySource, RemoteSource))]
        if len(todo) < 2:
            return
        keys = [".".join((*parent.path, c.name)) for c in todo]
        # Imported here: concurrent.futures (and queue) cost a local build's start-up 3 to 5 ms.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(self._env.jobs, len(todo)))) as pool:
            results = list(pool.map(self._resolve, todo, keys))
        with self._mutex:
            self._results.update(zip(keys, results, strict=True))

    # -- resolution ----------------------------------------------------------------------------

    def _resolve(self, call: ModuleCall, key: str) -> _Result:
        address = "module." + key.replace(".", ".module.")
        result = _Result(None)
        package: ModulePackage | None
        try:
            installed = self._installed.get(key)
            if installed is not None and self._matches(call, installed):
                self._check_installed(call, installed)
                package = self._from_installed(call, installed)
            elif self._options.offline or not self._downloads:
                raise _Problem("Module not installed", self._offline_detail(call), Code.NOT_INSTALLED)
            elif isinstance(call.address, RegistrySource):
                package = self._registry_package(call, result.diags)
            else:
                assert isinstance(call.address, RemoteSource)
                package = self._remote_package(call.address)
            if package is None:
                return result
            package = self._with_subdir(package, call)
            self._check_lock(address, package, call)
            result.fetched = FetchedModule(package.directory, package)
        except _Problem as exc:
            extra = Extra(exc.code) if exc.code is not None else None
            result.diags.append(replace(Diagnostic.error(exc.summary, exc.detail, call.range), extra=extra))
        except FetchError as exc:
            reason = str(exc)  # some reasons are sentences already: one period, not two
            detail = f'Could not download module "{call.name}" source code from "{call.address}": {reason}'
            detail += "" if reason.endswith(".") else "."
            result.diags.append(Diagnostic.error(exc.summary, detail, call.range))
        result.diags = Diagnostics(
            replace(d, summary=self._scrub(d.summary), detail=self._scrub(d.detail)) for d in result.diags
        )
        return result

    def _offline_detail(self, call: ModuleCall) -> str:
        data = self._env.data_dir
        if self._downloads:
            why, fix = "--offline forbids downloading it", "build without --offline"
        else:
            why, fix = "flatten was run without access to remote modules", "allow downloads"
        return (
            f'Module "{call.name}" has the source {redact_url(call.source)!r}, which is not installed in '
            f"{data}/modules, "
            f"and {why}. Run `terraform init` (or `tofu init`) in the root module first so flatten can "
            f"reuse the installed modules, or {fix}."
        )

    def _matches(self, call: ModuleCall, rec: InstalledModule) -> bool:
        sources = {call.source, str(call.address)}
        if isinstance(call.address, RegistrySource):
            sources.add(call.address.for_display(dialect=self._options.dialect.value))
        if rec.source not in sources:
            return False
        if call.version is not None:
            if rec.version is None:
                return False
            try:
                return parse_constraints(call.version).allows(rec.version)
            except (InvalidConstraint, ValueError):
                return False
        return _is_dir(rec.directory)

    def _check_installed(self, call: ModuleCall, rec: InstalledModule) -> None:
        """Refuse a ``modules.json`` record that points outside ``<data dir>/modules``.

        Terraform installs every remote package there; a record leading elsewhere (edited, or
        copied from another machine) would make flatten vendor any directory. The one link
        Terraform itself makes out of it is for a source naming a local directory.
        """
        if rec.escapes is None:
            return
        if (
            rec.escapes == "symlink"
            and isinstance(call.address, RemoteSource)
            and call.address.on_this_machine
        ):
            return
        data = self._env.data_dir
        how = "is not a directory inside" if rec.escapes == "outside" else "leads through a symlink out of"
        raise _Problem(
            "Invalid module installation",
            f'The record for module "{call.name}" in {data}/modules/modules.json says it is installed in '
            f"{rec.directory}, which {how} {data}/modules. flatten reuses only modules "
            f"installed inside {data}/modules, so it did not read that directory. Run `terraform init` "
            "(or `tofu init`) again to reinstall the module, or delete the record.",
        )

    def _from_installed(self, call: ModuleCall, rec: InstalledModule) -> ModulePackage:
        addr = call.address
        assert isinstance(addr, (RegistrySource, RemoteSource))
        # The record's Dir already includes the call's subdir; the package is its install root.
        subdir = rec.subdir
        user = addr.subdir
        if user and subdir.endswith(user):
            subdir = subdir[: -len(user)].rstrip("/")
        elif user:
            subdir = ""
        return ModulePackage(
            address=addr.package,
            root=rec.package_root,
            subdir=subdir,  # the package's own base subdir; the call's subdir is added later
            version=rec.version if isinstance(addr, RegistrySource) else None,
            digest=tree_digest(rec.package_root),
            name=_readable_name(addr, rec.version, _getter_address(addr)),
        )

    def _registry_package(self, call: ModuleCall, diags: Diagnostics) -> ModulePackage | None:
        src = call.address
        assert isinstance(src, RegistrySource)
        try:
            constraints = parse_constraints(call.version) if call.version is not None else None
        except InvalidConstraint as exc:
            raise _Problem(exc.summary, exc.detail) from None
        listed = self._clients()[0].versions(src)
        # A version string holding a token is a registry echoing the credential back: it would
        # reach the manifest and the output's directory names, so it is not a candidate.
        versions = tuple(v for v in listed if not self._scrub.holds_secret(v))
        if len(versions) != len(listed):
            diags.append(
                Diagnostic.warning(
                    "Invalid response from remote module registry",
                    f"The registry at {src.host} returned a version string for {src.for_display()} that "
                    "holds the registry's own credential, which flatten ignored.",
                    call.range,
                )
            )
        selection = select_module_version(versions, constraints, dialect=self._options.dialect.value)
        for bad in selection.invalid:
            diags.append(
                Diagnostic.warning(
                    "Invalid response from remote module registry",
                    f"The registry at {src.host} returned an invalid version string {bad!r} for "
                    f"{src.for_display()}, which flatten ignored.",
                    call.range,
                )
            )
        if selection.newest is None:
            raise _Problem(
                "Module has no versions",
                f'Module "{call.name}" ({src.for_display()}) has no versions available.',
            )
        if selection.chosen is None:
            raise _Problem(
                "Unresolvable module version constraint",
                f'There is no available version of module "{call.name}" ({src.for_display()}) which matches '
                f"the given version constraint. The newest available version is {selection.newest}.",
            )
        version = selection.chosen.original
        identity = f"registry {src.package} {version}"

        def fill(dest: Path) -> tuple[str | None, str]:
            location = self._clients()[0].location(src, version)
            try:
                where = parse_remote_source(location)
            except InvalidSourceAddress as exc:
                raise FetchError(
                    f"the registry returned an invalid download address: {exc.reason}",
                    summary="Invalid response from remote module registry",
                ) from None
            if where.on_this_machine:  # a registry may not make flatten read this machine's files
                raise FetchError(
                    f"the registry returned the local download address {redact_url(location)!r}; a registry "
                    "module may only be downloaded from a remote address",
                    summary="Invalid response from remote module registry",
                )
            from flatten.sources.getter import parse_getter_address

            fetched = self._clients()[1].get(parse_getter_address(where.package), dest)
            return fetched.commit, posixpath.join(where.subdir, fetched.subdir).strip("/")

        entry = self._download(identity, f"{src.for_display()} {version}", fill)
        return ModulePackage(
            address=src.package,
            root=entry.files,
            subdir=entry.subdir,
            version=version,
            commit=entry.commit,
            digest=entry.digest,
            name=_readable_name(src, version),
        )

    def _remote_package(self, src: RemoteSource) -> ModulePackage:
        from flatten.sources.getter import parse_getter_address

        addr = parse_getter_address(src.package)
        label = redact_url(src.package)
        if addr.kind == "file" and addr.archive is None:
            path = addr.path
            if not _is_dir(path):
                raise FetchError(f"the directory {path} does not exist")
            return ModulePackage(src.package, path, digest=tree_digest(path), name=_readable_name(src, None))
        if addr.kind == "git":
            self._clients()  # the build's download deadline starts with its first download
            budget = self._budget
            assert budget is not None
            if budget.remaining() <= 0:
                raise budget.error(redact_url(addr.url))
            commit = resolve_ref(self._env.git, addr.url, addr.ref, timeout=min(120.0, budget.remaining()))
            # Cache keys never hold a URL's userinfo (a password or token): the commit pins the content.
            identity = f"git {strip_userinfo(addr.url)} {commit or addr.ref}"
        elif addr.kind == "file":
            identity = f"file {tree_digest_file(addr.path)}"
        else:
            identity = f"http {strip_userinfo(addr.url)} {addr.archive} {addr.checksum}"

        def fill(dest: Path) -> tuple[str | None, str]:
            fetched = self._clients()[1].get(addr, dest)
            return fetched.commit, fetched.subdir

        entry = self._download(identity, label, fill)
        return ModulePackage(
            address=src.package,
            root=entry.files,
            subdir=entry.subdir,
            commit=entry.commit,
            digest=entry.digest,
            name=_readable_name(src, None, addr),
        )

    def _download(self, identity: str, label: str, fill: _Fill) -> _Entry:
        found = self._cache.lookup(identity)
        if found is not None:
            return found
        self._sweep_stale()
        self._progress.begin(label)
        ok = False
        try:
            entry, _ = self._cache.install(identity, fill)
            ok = True
            return entry
        finally:
            self._progress.end(label, ok=ok)

    def _sweep_stale(self) -> None:
        """Remove the temporary directories that downloads killed outright left in the cache (once)."""
        with self._mutex:
            if self._swept:
                return
            self._swept = True
        self._cache.sweep(time.time() - max(STALE_TMP_AGE, 2 * self._env.download_timeout))

    def close(self) -> None:
        """Release the package cache's use lock: the build has written its output (or failed)."""
        self._cache.close()

    def _with_subdir(self, package: ModulePackage, call: ModuleCall) -> ModulePackage:
        addr = call.address
        assert isinstance(addr, (RegistrySource, RemoteSource))
        subdir = posixpath.join(package.subdir, addr.subdir).strip("/") if addr.subdir else package.subdir
        if _GLOB_CHARS & set(subdir):
            matches = sorted(glob.glob(glob.escape(str(package.root)) + "/" + subdir))
            dirs = [m for m in matches if os.path.isdir(m)]
            if len(dirs) != 1:
                raise _Problem(
                    "Failed to expand subdir globs",
                    f"subdir {subdir!r} {'matches multiple paths' if dirs else 'not found'} in the package "
                    f"{redact_url(package.address)}.",
                )
            subdir = Path(dirs[0]).relative_to(package.root).as_posix()
        if subdir and not _is_dir(package.root / subdir):
            raise _Problem(
                "Module subdirectory not found",
                f"The module subdirectory {subdir!r} does not exist in the package "
                f"{redact_url(package.address)}.",
            )
        return package.at(subdir)

    def _check_lock(self, address: str, package: ModulePackage, call: ModuleCall) -> None:
        if not self._options.locked:
            return
        locked = self._lock.get(address)
        if locked is None:
            raise _Problem(
                "Module not in the lock",
                f'Module "{call.name}" ({redact_url(call.source)}) is not recorded in the existing manifest, '
                "and --locked forbids resolving it anew. Build once without --locked to record it.",
            )
        changes = [
            f"{what} {old} → {new}"
            for what, old, new in (
                # The manifest keeps addresses with their passwords hidden; compare them that way.
                ("address", locked.address, redact_url(package.address)),
                ("version", locked.version, package.version),
                ("commit", locked.commit, package.commit),
                ("digest", locked.digest, package.digest),
            )
            if old and new and old != new
        ]
        if changes:
            raise _Problem(
                "Module resolution differs from the lock",
                f'Module "{call.name}" resolves differently from the existing manifest '
                f"({'; '.join(changes)}), "
                "and --locked forbids the change. Build without --locked to accept it.",
            )


def _is_dir(path: Path) -> bool:
    # A name the OS refuses (too long, a NUL byte) is a directory that is not there, not a crash.
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _getter_address(addr: RegistrySource | RemoteSource) -> GetterAddress | None:
    if isinstance(addr, RegistrySource):
        return None
    from flatten.sources.getter import parse_getter_address

    try:
        return parse_getter_address(addr.package)
    except FetchError:
        return None


def installed_only(root: Path, *, options: Options) -> RemoteFetcher:
    """Return a fetcher that only reuses ``.terraform/modules`` (``build_graph``'s default): no network."""
    return RemoteFetcher(
        root, options=options, env=SourceEnv(cache_dir=Path(os.devnull)), cache_auth=None, downloads=False
    )


def tree_digest_file(path: Path) -> str:
    """Return the ``sha256:`` digest of one file (a local archive's identity)."""
    import hashlib

    h = hashlib.sha256()
    try:
        with gate.open_read(path, limit=1 << 40) as f:  # a regular file: a FIFO is refused unread
            while chunk := f.read(1 << 16):
                h.update(chunk)
    except OSError as exc:
        raise FetchError(describe_os_error(exc, doing=f"read {path}", path=path, reading=True)) from None
    return "sha256:" + h.hexdigest()


def _readable_name(
    src: RegistrySource | RemoteSource, version: str | None, addr: GetterAddress | None = None
) -> str:
    """Return a short, file-name-safe name for a package's vendored copy."""
    if isinstance(src, RegistrySource):
        base = f"{src.namespace}-{src.name}-{src.system}"
        tag = version or ""
    else:
        url = addr.url if addr is not None else src.package.partition("::")[2] or src.package
        path = urllib.parse.urlsplit(url).path.rstrip("/")
        base = posixpath.basename(path) or "package"
        for ext in (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip", ".tar"):
            if base.lower().endswith(ext) and len(base) > len(ext):
                base = base[: -len(ext)]
                break
        base = base.removesuffix(".git")
        tag = addr.ref if addr is not None else ""
    name = f"{base}-{tag}" if tag else base
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip(".-")
    return safe or "package"


if TYPE_CHECKING:
    from collections.abc import Callable

    from flatten.sources.cache import CachedPackage

    _Fill = Callable[[Path], tuple[str | None, str]]
    _Entry = CachedPackage
