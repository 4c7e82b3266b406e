"""The command line: parse options, run the library, render diagnostics, set the exit code.

Exit codes: 0 success (warnings allowed), 1 configuration errors (or a stale output with
``--check``), 2 usage errors. Stdout carries only results (for ``build``, the diagnostics report
with ``--format json|sarif|junit``); everything else goes to stderr.

typer parses a ``build`` command line once, into a :class:`BuildRequest`; whoever started the
command (``main``'s ``runner``: flatten.shell.process for the ``flatten`` program) runs it, or
:func:`run_request` does. This module imports only what parsing needs: the pipeline is imported
by the command that runs it, so a replayed build never loads it.

No ``from __future__ import annotations`` here: typer reads every command's annotations at each
start, and evaluating them from strings (a compile per annotation) cost a replayed build 15 ms;
names imported only for type checking are quoted instead.
"""

import json as _json
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer._click.core import Context as ClickContext
from typer._click.formatting import HelpFormatter
from typer.core import TyperCommand, TyperGroup

from flatten import gate
from flatten.lang.environ import build_environ
from flatten.lang.options import Checks, Dialect, Options, VariableArg
from flatten.lang.printable import printable
from flatten.lang.release import __version__
from flatten.lang.terraform_releases import KNOWN, NEWEST, parse_release, release_text
from flatten.reports import AffectedFormat, GraphFormat, ReportFormat

if TYPE_CHECKING:
    from flatten.lang.diagnostics import Diagnostic, Diagnostics, TextStyle
    from flatten.lang.model import JsonValue
    from flatten.reports.base import SourceBase
    from flatten.shell.progress import BuildProgress
    from flatten.sources.env import SourceEnv
    from flatten.stages.graph import ModuleFetcher, ModuleGraph
    from flatten.stages.memo import Memo

_COMPLETION_OPTIONS = frozenset({"--install-completion", "--show-completion"})


def _whole_commands(group: TyperGroup, ctx: ClickContext, formatter: HelpFormatter) -> None:
    """Write a group's list of commands with each one's first paragraph of help whole: click cuts
    it at the first sentence within about 45-65 columns ("Build ROOT into one canonical .tf.json
    tree in OUT (several..."), while its list wraps a long line instead (tests/cli/test_help.py)."""
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            text = command.short_help or (command.help or "").split("\n\n")[0]
            rows.append((name, " ".join(text.split())))
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class _FlattenGroup(TyperGroup):
    """The program's group: ``--install-completion`` and ``--show-completion`` last on the command
    line get an empty shell name (the shell is then detected, ``_completion_shell``); the rest is
    typer's."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        args = list(args)
        for i, arg in enumerate(args):
            if arg in _COMPLETION_OPTIONS and i + 1 == len(args):
                args.insert(i + 1, "")
                break
            if not arg.startswith("-"):  # a command: the rest is its own
                break
        return super().parse_args(ctx, args)

    def format_commands(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        _whole_commands(self, ctx, formatter)


app = typer.Typer(
    cls=_FlattenGroup,
    # --install-completion / --show-completion are flatten's own (_completion below): typer's take
    # no shell name once it can detect one, so `--install-completion zsh` installed bash's.
    add_completion=False,
    # -h as well as --help, on every command (as terraform, tflint and most tools accept).
    context_settings={"help_option_names": ["-h", "--help"]},
    # Click's plain help: rich's option table cuts long option names ("--diagnostics-…") at 80
    # columns, while click's never cuts a name and wraps only the help text (tests/cli/test_help.py).
    rich_markup_mode=None,
    # A bug must not print a wall of locals; main() reports it in one paragraph instead.
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Flatten a Terraform/OpenTofu configuration into one canonical .tf.json tree.",
)


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """One ``flatten build`` command line as typer parsed it, with the environment it reads.

    Paths are as typed (messages name them so); :func:`run_request` resolves and checks them.
    """

    roots: tuple[Path, ...]  # one, or several for a many-root run (flatten/shell/roots.py)
    out: Path
    options: Options
    report_format: ReportFormat | None  # --format, when given
    diagnostics_json: bool
    check: bool
    environ: tuple[tuple[str, str], ...]  # the variables a build reads (lang/environ.py), sorted
    no_color: bool = False  # --no-color
    quiet: bool = False  # --quiet: no progress line, no summary line
    diff: bool = False  # --diff (with --check): a unified diff of each stale file on stdout

    @property
    def root(self) -> Path:
        """The first (with one ROOT, the) root module directory."""
        return self.roots[0]

    @staticmethod
    def environ_of(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """Return the variables of ``environ`` a build reads (flatten/lang/environ.py)."""
        return build_environ(environ)


#: Runs a build request and returns its exit code (``main``'s ``runner``).
BuildRunner = Callable[[BuildRequest], int]


def exit_code(diags: "Diagnostics") -> int:
    """Return the exit code for a finished command: 1 when any error diagnostic exists."""
    return 1 if diags.has_errors else 0


def _usage_error(message: str) -> typer.Exit:
    from flatten.lang.printable import printable  # paths in the message may hold anything

    typer.echo(f"Error: {printable(message, lines=True)}", err=True)
    return typer.Exit(2)


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(0)


def version_line() -> str:
    """Return ``flatten X (python-hcl2 Y, Python Z)``: what a bug report needs to reproduce a run.

    python-hcl2's version is read from its ``version.py`` as text, not by importing it (the parser
    import costs a build's start-up) nor through ``importlib.metadata`` (15 ms of imports: the
    email package): ``--version`` must stay instant. Its installed metadata is the fallback.
    """
    import importlib.util
    import re

    hcl2 = "not installed"
    spec = importlib.util.find_spec("hcl2")
    found = None
    if spec is not None and spec.origin:
        try:
            text = gate.read_text(Path(spec.origin).with_name("version.py"))
        except OSError:
            text = ""
        found = re.search(r"""^__version__ = version = ['"]([^'"]+)['"]""", text, re.M)
    if found is not None:
        hcl2 = found.group(1)
    elif spec is not None:
        import contextlib
        from importlib.metadata import PackageNotFoundError, version

        with contextlib.suppress(PackageNotFoundError):
            hcl2 = version("python-hcl2")
    python = ".".join(str(part) for part in sys.version_info[:3])
    return f"flatten {__version__} (python-hcl2 {hcl2}, Python {python})"


#: The shells --install-completion and --show-completion know, as named on their command line
#: (typer's scripts: "pwsh" is PowerShell 7, "powershell" Windows PowerShell 5).
COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _completion_shell(value: str) -> str:
    """Return the shell named (or, for an empty ``value``, the one flatten runs under)."""
    if value:
        if value.lower() not in COMPLETION_SHELLS:
            raise _usage_error(
                f"no completion for the shell {value!r}; name one of {', '.join(COMPLETION_SHELLS)}."
            )
        return value.lower()
    # As typer does with its shell-detection dependency: shellingham walks up the process tree to
    # the nearest shell (pyproject.toml names it, so this works with any typer flatten allows).
    import shellingham

    try:
        name, _command = shellingham.detect_shell()
    except shellingham.ShellDetectionFailure:  # no shell above this process (a CI job, a service)
        name = ""
    name = str(name).lower()
    if name not in COMPLETION_SHELLS:
        under = (
            f"flatten runs under {name}, which has no completion script"
            if name
            else ("cannot tell which shell this is")
        )
        raise _usage_error(
            f"{under}; name one: flatten --install-completion {'|'.join(COMPLETION_SHELLS[:4])}."
        )
    return name


def _completion_script(shell: str) -> str:
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name="flatten", complete_var="_FLATTEN_COMPLETE", shell=shell)


def _show_completion(ctx: typer.Context, _param: object, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    typer.echo(_completion_script(_completion_shell(value)))
    raise typer.Exit(0)


def _install_completion(ctx: typer.Context, _param: object, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    shell = _completion_shell(value)
    try:
        if shell in ("powershell", "pwsh"):
            path = _install_powershell(shell)
        else:
            from typer._completion_shared import install

            _, path = install(shell=shell, prog_name="flatten", complete_var="_FLATTEN_COMPLETE")
    except OSError as exc:
        raise _usage_error(
            f"cannot install {shell} completion: {exc.strerror or exc} ({exc.filename})."
        ) from None
    typer.echo(f"{shell} completion installed in {path}")
    typer.echo("Completion will take effect once you restart the terminal.")
    raise typer.Exit(0)


def _install_powershell(shell: str) -> Path:
    """Append the completion script to the PowerShell profile (once), and return the profile.

    The profile is PowerShell's ``$PROFILE`` when the shell is on PATH, else where PowerShell 7
    keeps it on Linux and macOS. Unlike typer's installer, the execution policy is left alone.
    """
    import shutil
    import subprocess

    profile = None
    program = shutil.which(shell)
    if program is not None:
        done = subprocess.run(
            [program, "-NoProfile", "-Command", "echo $PROFILE"], capture_output=True, text=True, check=False
        )
        profile = done.stdout.strip() or None
    if profile is None:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        profile = str(Path(config) / "powershell" / "Microsoft.PowerShell_profile.ps1")
    path = Path(profile)
    gate.make_dirs(path.parent)
    script = _completion_script(shell)
    try:
        existing = gate.read_text(path, errors="replace")
    except FileNotFoundError:
        existing = ""
    if script not in existing:
        gate.append(
            path, (("\n" if existing and not existing.endswith("\n") else "") + script + "\n").encode()
        )
    return path


def _completion_option(name: str, callback: Callable[..., None], help: str) -> object:
    """An eager option whose value (a shell) may be left out: ``--install-completion [zsh]``.

    The value is optional through ``_FlattenGroup.parse_args`` (an empty value when none follows):
    typer 0.28's click takes no ``flag_value``, so an option's value cannot be optional there.
    """
    return typer.Option(
        name,
        metavar="[" + "|".join(COMPLETION_SHELLS[:4]) + "]",
        callback=callback,
        is_eager=True,
        expose_value=False,
        help=help,
    )


@app.callback()
def _main(
    version: Annotated[
        Optional[bool],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit."),
    ] = None,
    install_completion: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        _completion_option(
            "--install-completion",
            _install_completion,
            "Install completion for the shell named (default: this one).",
        ),
    ] = None,
    show_completion: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        _completion_option(
            "--show-completion",
            _show_completion,
            "Print the completion script for the shell named (default: this one).",
        ),
    ] = None,
) -> None:
    """Flatten a Terraform/OpenTofu configuration into one canonical .tf.json tree."""


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
    except ValueError:
        return False
    return True


def check_command(roots: Sequence[Path], out: Path) -> str:
    """Return the command that rebuilds ``out`` from ``roots`` (as typed), for a stale output's detail."""
    import shlex

    return shlex.join(["flatten", "build", *map(str, roots), "--out", str(out)])


_OFFLINE_HELP = "Never use the network: remote modules come only from .terraform/modules (terraform init)."
_TERRAFORM_VERSION_HELP = (
    f"The Terraform version (X.Y, {release_text(KNOWN[0])} to {release_text(NEWEST)}) whose rules the "
    f"terraform dialect follows: blocks and arguments it knows, required_version. Default: "
    f"{release_text(NEWEST)}, the newest flatten knows."
)
_CHECKS_HELP = (
    "What to check: 'init' reports what terraform/tofu init reports (loading, modules, provider "
    "configuration checks); 'validate' adds everything validate reports without a provider schema. "
    "Default: validate's checks, less the three the OpenTofu conformance contract leaves to "
    "tofu validate in the opentofu dialect (docs/dialects.md)."
)
_VAR_HELP = "Set a root variable for the values tofu init evaluates (opentofu dialect), as tofu's -var."
_VAR_FILE_HELP = (
    "Read root variable values from a .tfvars(.json) file (opentofu dialect), as tofu's -var-file."
)


class _OrderedVars(TyperCommand):
    """Keeps the command-line order of --var and --var-file (click groups each option's values):
    OpenTofu applies them in that order, so a later one wins (internal/command/meta_vars.go)."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        kinds: list[str] = []
        skip = False
        for arg in args:
            if skip:
                skip = False
                continue
            if arg == "--":
                break
            for kind in ("--var-file", "--var"):
                if arg == kind or arg.startswith(kind + "="):
                    kinds.append(kind[2:])
                    skip = arg == kind
                    break
        ctx.meta["flatten.variable_order"] = kinds
        return super().parse_args(ctx, args)


def _variables(
    ctx: typer.Context, var: "list[str] | None", var_file: "list[Path] | None"
) -> "tuple[VariableArg, ...]":
    """Return --var and --var-file in command-line order (files made absolute: tofu reads them
    relative to where it runs, and the build must not depend on the working directory)."""
    values = {"var": list(var or ()), "var-file": [str(Path(f).absolute()) for f in var_file or ()]}
    order = ctx.meta.get("flatten.variable_order") or ["var"] * len(values["var"]) + ["var-file"] * len(
        values["var-file"]
    )
    found: list[VariableArg] = []
    for kind in order:
        if values[kind]:
            found.append((kind, values[kind].pop(0)))
    return tuple(found)


def _release(text: "str | None") -> "tuple[int, int]":
    if text is None:
        return NEWEST
    try:
        return parse_release(text)
    except ValueError as exc:
        raise _usage_error(f"--terraform-version: {exc}.") from None


def _options(
    ctx: typer.Context,
    dialect: Dialect,
    offline: bool,
    terraform_version: str | None,
    var: list[str] | None,
    var_file: list[Path] | None,
    **more: Any,
) -> Options:
    """The build options every command reads from the same command-line options (the shared
    aliases above), with ``more`` of its own."""
    return Options(
        dialect=dialect,
        offline=offline,
        terraform_version=_release(terraform_version),
        variables=_variables(ctx, var, var_file),
        variable_env=_variable_env(os.environ, dialect),
        **more,
    )


def _variable_env(environ: Mapping[str, str], dialect: Dialect) -> "tuple[tuple[str, str], ...]":
    """The TF_VAR_ environment variables OpenTofu reads as root variable values, sorted (none in
    the terraform dialect, which evaluates no variables early: its memo keys stay as they were)."""
    if not dialect.allows("static_evaluation"):
        return ()
    return tuple(sorted((k, v) for k, v in environ.items() if k.startswith("TF_VAR_")))


def _source_env(environ: Mapping[str, str]) -> "SourceEnv":
    """Settings for remote sources from the environment; progress only when stderr is a terminal."""
    from flatten.sources.env import SourceEnv

    return SourceEnv.from_environ(environ, progress=sys.stderr.isatty())


def _fetcher(
    root: Path, *, options: Options, out: Path | None = None, env: "SourceEnv | None" = None
) -> "ModuleFetcher":
    """Return the fetcher for registry and remote sources, with settings from the environment.

    The lock for ``--locked`` is the manifest of the previous build in ``out``. Progress is drawn
    only when stderr is a terminal, so piped and CI output stays quiet.
    """
    from flatten.shell import cache_auth
    from flatten.sources.fetcher import RemoteFetcher, read_lock
    from flatten.stages.emit import MANIFEST_NAME

    env = env or _source_env(os.environ)
    manifest = out / MANIFEST_NAME if out is not None else None
    lock = None
    if manifest is not None:
        try:  # OUT's manifest: a regular file, never followed (flatten wrote it)
            lock = read_lock(gate.read_bytes(manifest, follow=False))
        except OSError:
            lock = None
    # The download cache's entries are tagged with the machine's key, which the shell keeps.
    return RemoteFetcher(root, options=options, env=env, cache_auth=cache_auth, lock=lock)


_FORMAT_HELP = (
    "How to print diagnostics: text (Terraform's, with GitHub annotations when GITHUB_ACTIONS=true), "
    "json (`terraform validate -json`), sarif (SARIF 2.1.0) or junit (JUnit XML)."
)


_NO_COLOR_HELP = "Print diagnostics without colour (also when NO_COLOR is set, or stderr is not a terminal)."

# The options several commands share, each written once (typer reads the aliases as written).
_OfflineOption = Annotated[bool, typer.Option("--offline", help=_OFFLINE_HELP)]
_NoColorOption = Annotated[bool, typer.Option("--no-color", help=_NO_COLOR_HELP)]
_TerraformVersionOption = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option("--terraform-version", metavar="X.Y", help=_TERRAFORM_VERSION_HELP, show_default=False),
]
_ChecksOption = Annotated[
    Optional[Checks],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option("--checks", help=_CHECKS_HELP, show_default=False),
]
_VarOption = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option("--var", metavar="NAME=VALUE", help=_VAR_HELP),
]
_VarFileOption = Annotated[
    Optional[list[Path]],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option("--var-file", metavar="FILE", help=_VAR_FILE_HELP),
]
_DialectOption = Annotated[Dialect, typer.Option(help="Whose rules to follow.")]
#: The roots `graph` and `providers` read (build's help says where each is written).
_RootsArgument = Annotated[
    Optional[list[Path]],  # noqa: UP045 - typer reads the annotation at run time
    typer.Argument(
        metavar="ROOT...",
        help="The root module directory (default: the current one); several: each in turn, labelled.",
        show_default=False,
    ),
]
_DiagnosticsJsonOption = Annotated[
    bool, typer.Option("--diagnostics-json", help="The same as --format json.")
]


def text_style(no_color: bool, environ: Mapping[str, str]) -> "TextStyle":
    """Return how text diagnostics are drawn on stderr, as terraform decides it: colour on a
    terminal unless ``--no-color`` or NO_COLOR (no-color.org: any non-empty value) or TERM=dumb;
    details wrapped at COLUMNS, else the terminal's width, else 80 (piped output)."""
    from flatten.lang.diagnostics import TextStyle

    stream = sys.stderr
    tty = bool(getattr(stream, "isatty", None) and stream.isatty())
    color = tty and not no_color and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"
    width = 80
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    elif tty:
        import contextlib

        with contextlib.suppress(OSError, ValueError):
            width = os.get_terminal_size(stream.fileno()).columns or 80
    return TextStyle(color=color, width=width)


def _report_format(fmt: ReportFormat | None, diagnostics_json: bool) -> ReportFormat:
    """Return the diagnostics format: ``--diagnostics-json`` is another name for ``--format json``."""
    if diagnostics_json and fmt not in (None, ReportFormat.JSON):
        raise _usage_error(f"--diagnostics-json means --format json; it cannot go with --format {fmt}.")
    if fmt is None:
        return ReportFormat.JSON if diagnostics_json else ReportFormat.TEXT
    return fmt


def _render_report(fmt: ReportFormat, diags: "Diagnostics", *, root: Path, command: str) -> str:
    """Return the diagnostics in a machine format (json, sarif, junit); the renderers load on demand."""
    from flatten.reports.base import find_base

    if fmt is ReportFormat.SARIF:
        from flatten.reports.sarif import render_sarif

        return render_sarif(diags, find_base(root))
    if fmt is ReportFormat.JUNIT:
        from flatten.reports.junit import render_junit

        return render_junit(diags, find_base(root), command=command)
    return _json_report(diags, root)


def _json_report(diags: "Diagnostics", root: Path) -> str:
    """``terraform validate -json``'s object for ``diags``, each with Terraform's ``snippet``."""
    from flatten.lang.diagnostics import render_json
    from flatten.syntax.snippets import context_finder

    return render_json(diags, sources=_source_reader(root), context=context_finder())


def _source_reader(root: Path) -> Callable[[str], str | None]:
    """A file's text by its name in ranges (relative to ``root``), each read once, for snippets:
    through the gate's rule for quoted source (a link out of the root is never quoted, issue 38)."""
    from flatten import gate

    gated = gate.source_reader(root)
    cache: dict[str, str | None] = {}

    def read(name: str) -> str | None:
        if name not in cache:
            cache[name] = gated(name)
        return cache[name]

    return read


def _annotate(diags: "Diagnostics", *, root: Path, environ: Mapping[str, str]) -> None:
    """On GitHub Actions, also print the diagnostics as workflow annotations (on stderr)."""
    if diags and environ.get("GITHUB_ACTIONS") == "true":
        from flatten.reports.base import find_base
        from flatten.reports.github import render_github

        sys.stderr.write(render_github(diags, find_base(root)))


def _real(path: Path, what: str) -> Path:
    """Return ``path`` absolute with every symlink resolved; a symlink loop is a usage error."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: Python before 3.13 on a symlink loop
        raise _usage_error(
            f"{what} {path} cannot be resolved: it is, or passes through, a symlink loop."
        ) from None


def _root_dir(root: Path) -> Path:
    """Return ROOT made absolute, after checking it is a directory (a usage error otherwise)."""
    root_abs = _real(root, "ROOT")
    try:
        is_dir = stat.S_ISDIR(os.stat(root_abs).st_mode)
    except FileNotFoundError:
        # As Terraform words it (`terraform -chdir=nope`: "chdir nope: no such file or directory").
        raise _usage_error(f"the root module directory {root} does not exist.") from None
    except OSError as exc:
        from flatten.lang.oserror import describe_os_error

        raise _usage_error(
            describe_os_error(exc, doing=f"read the root module directory {root}", reading=True)
        ) from None
    if not is_dir:
        raise _usage_error(f"{root} is not a directory: ROOT is the root module's directory.")
    return root_abs


def _empty_root(root: Path, options: Options) -> "Diagnostics":
    """Return a warning when ROOT holds no configuration file (primary or override) at all.

    Terraform loads such a directory as an empty configuration: ``validate`` (and its ``-json``,
    which the machine formats follow) says nothing, ``init`` says "Terraform initialized in an
    empty directory!" with the sentences below (internal/command/views/init.go, outputInitEmpty;
    OpenTofu's with its own name) and ``plan`` refuses it ("No configuration files",
    internal/backend/local/backend_plan.go). So the text output warns, as ``init`` does, and the
    build goes on; the empty test is Terraform's ``IsEmptyDir`` (the directory's listing).
    """
    from flatten.lang.diagnostics import Diagnostics
    from flatten.stages.files import list_config_files

    diags = Diagnostics()
    try:
        listing = list_config_files(root, dialect=options.dialect)
    except OSError:  # the build reports an unreadable root
        return diags
    if listing.primary or listing.override:
        return diags
    product = options.dialect.product
    diags.warning(
        "No configuration files",
        f"The directory has no {product} configuration files. You may begin working with "
        f"{product} immediately by creating {product} configuration files.\n\n"
        "The output is an empty configuration: a plan with it would mark everything in the state "
        "for destruction. Check that ROOT is the directory that holds your configuration files.",
    )
    return diags


def _check_out(out: Path, out_abs: Path, root: Path, root_abs: Path, cache: Path) -> None:
    """Refuse an --out whose replacement would delete or write into the sources or the cache.

    Writing replaces ``out_abs`` whole, so it must neither lie inside the root nor hold it, nor
    hold the download cache (whose packages the build reads). Both paths are resolved already.
    """
    if _is_within(out_abs, root_abs):
        raise _usage_error(
            f"--out {out} is inside the root module {root}; flatten never writes into the sources it reads. "
            "Choose a directory outside it."
        )
    if _is_within(root_abs, out_abs):
        raise _usage_error(
            f"--out {out} contains the root module {root}; writing the output replaces that directory "
            "whole and would delete your sources. Choose a directory outside the configuration."
        )
    if out_abs == Path(out_abs.anchor):
        raise _usage_error("--out must not be the filesystem root.")
    cache_abs = _real(cache, "The cache directory")
    if _is_within(cache_abs, out_abs) or _is_within(out_abs, cache_abs):
        raise _usage_error(
            f"--out {out} overlaps flatten's cache directory {cache}; writing the output would replace "
            "cached packages the build reads. Choose another --out, or set FLATTEN_CACHE_DIR elsewhere."
        )


def _check_out_modules(out: Path, out_abs: Path, root_abs: Path, graph: "ModuleGraph | None") -> None:
    """Refuse an --out that holds, or lies inside, a module directory of the build (a usage error).

    Module directories are known only once the graph is built: a local module outside the root
    (``../modules/x``) or a local package (``source = "/abs/dir"``) is the user's source too. A
    directory inside the root needs no check: ``_check_out`` already keeps --out apart from the root.
    """
    problem = _out_modules_problem(out, out_abs, root_abs, graph)
    if problem is not None:
        raise _usage_error(problem)


def _out_modules_problem(out: Path, out_abs: Path, root_abs: Path, graph: "ModuleGraph | None") -> str | None:
    """Return why ``_check_out_modules`` refuses --out, or None."""
    seen: set[Path] = set()
    inside = str(root_abs).rstrip(os.sep) + os.sep  # a string test: 200 modules cost 1 ms, not 10
    for node in graph.nodes() if graph is not None else ():
        for directory in (node.directory, node.package.root if node.package is not None else None):
            if directory is None or directory in seen or str(directory).startswith(inside):
                continue
            seen.add(directory)
            try:
                real = directory.resolve()
            except (OSError, RuntimeError):
                return (
                    f"The module directory {directory} cannot be resolved: it is, or passes through, "
                    "a symlink loop."
                )
            if _is_within(real, out_abs) or _is_within(out_abs, real):
                where = "contains" if _is_within(real, out_abs) else "is inside"
                return (
                    f"--out {out} {where} the directory {real} of {node.address or 'the root module'}; "
                    "writing the output would replace or write into your sources. Choose a directory "
                    "outside every module directory."
                )
    return None


@app.command(cls=_OrderedVars)
def build(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the output tree to.")],
    roots: Annotated[
        Optional[list[Path]],  # noqa: UP045 - typer reads the annotation at run time
        typer.Argument(
            metavar="ROOT...",
            help="The root module directory (default: the current one). With several, each is built "
            "into OUT/<its path relative to the roots' common parent>.",
            show_default=False,
        ),
    ] = None,
    dialect: Annotated[
        Dialect, typer.Option(help="Whose rules to follow: file names, blocks and diagnostic wording.")
    ] = Dialect.TERRAFORM,
    report_format: Annotated[
        Optional[ReportFormat],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option("--format", help=_FORMAT_HELP + " Text goes to stderr, the others to stdout."),
    ] = None,
    diagnostics_json: _DiagnosticsJsonOption = False,
    provenance: Annotated[
        bool, typer.Option(help="Write '//' comments naming the files and lines behind each merged block.")
    ] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 when the existing output is stale.")
    ] = False,
    diff: Annotated[
        bool,
        typer.Option(
            "--diff",
            help="With --check: print a unified diff of each stale file (from OUT to what the build "
            "writes) on stdout, as terraform fmt -check -diff does.",
        ),
    ] = False,
    explicit_providers: Annotated[
        bool,
        typer.Option(
            "--explicit-providers",
            help="Write every inherited provider configuration as an explicit providers map item.",
        ),
    ] = False,
    offline: _OfflineOption = False,
    locked: Annotated[
        bool,
        typer.Option(
            "--locked",
            help="Refuse to build when a remote module resolves differently from OUT's manifest.",
        ),
    ] = False,
    inline: Annotated[
        bool,
        typer.Option(
            "--inline",
            help="Inline every module call without count/for_each into its caller, with moved blocks.",
        ),
    ] = False,
    inline_module: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option("--module", metavar="ADDRESS", help="With --inline: inline just this call (module.a)."),
    ] = None,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--exclude",
            metavar="GLOB",
            help="Leave files matching GLOB (.terraformignore syntax, relative to each module "
            "directory) out of the copied files; repeatable. See docs/files.md.",
        ),
    ] = None,
    no_color: _NoColorOption = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print diagnostics only: no progress line (drawn on a terminal), no 'wrote' line.",
        ),
    ] = False,
    terraform_version: _TerraformVersionOption = None,
    checks: _ChecksOption = None,
    var: _VarOption = None,
    var_file: _VarFileOption = None,
) -> None:
    """Build ROOT into one canonical .tf.json tree in OUT (several ROOTs: each into OUT/<ROOT>)."""
    request = BuildRequest(
        roots=tuple(roots) if roots else (Path("."),),
        out=out,
        options=_options(
            ctx,
            dialect,
            offline,
            terraform_version,
            var,
            var_file,
            provenance=provenance,
            explicit_providers=explicit_providers,
            locked=locked,
            inline=inline,
            inline_only=inline_module,
            exclude=tuple(exclude or ()),
            checks=checks,
        ),
        report_format=report_format,
        diagnostics_json=diagnostics_json,
        check=check,
        environ=BuildRequest.environ_of(os.environ),
        no_color=no_color,
        quiet=quiet,
        diff=diff,
    )
    if diff and not check:
        raise _usage_error("--diff shows what --check finds: add --check.")
    if diff and report_format not in (None, ReportFormat.TEXT):
        raise _usage_error(
            f"--diff prints on stdout, where --format {report_format.value} prints its report: give one."
        )
    # The flatten program runs it through flatten.shell (replay, prefetch); a library caller
    # (typer's CliRunner, scripts) gets the plain build.
    runner: BuildRunner = ctx.obj if callable(ctx.obj) else run_request
    raise typer.Exit(runner(request))


def load_pipeline() -> None:
    """Import what ``run_request`` runs: flatten.shell does it while prefetch works in its fork."""
    import flatten.build
    import flatten.lang.diagnostics
    import flatten.sources.fetcher
    import flatten.stages.emit  # noqa: F401


def run_request(request: BuildRequest, progress: "BuildProgress | None" = None) -> int:
    """Check the paths, build, write the output tree and print the diagnostics; return the exit code.

    ``progress`` (flatten/shell/progress.py: the flatten program's, on a terminal) is drawn as
    modules load and the output is written, and cleared before anything else is printed.
    """
    try:
        return _run_request(request, progress)
    except typer.Exit as exc:  # a usage error (already printed)
        return exc.exit_code
    finally:
        if progress is not None:
            progress.clear()


def _run_request(request: BuildRequest, progress: "BuildProgress | None") -> int:
    if len(request.roots) > 1:
        # The flatten program's runner builds them (flatten/shell/roots.py: forks, shared memo).
        raise _usage_error(
            "several ROOTs are built by the flatten program (`flatten` or `python -m flatten`)."
        )
    from flatten.build import build as run_build
    from flatten.lang.diagnostics import render_text
    from flatten.shell.memo import DiskMemo
    from flatten.stages.emit import OutputError, write_tree
    from flatten.syntax.snippets import context_finder

    root, out, options = request.root, request.out, request.options
    environ = dict(request.environ)
    root_abs = _root_dir(root)
    out_abs = _real(out, "--out")
    env = _source_env(environ)
    _check_out(out, out_abs, root, root_abs, env.cache_dir)
    if options.inline_only is not None and not options.inline:
        raise _usage_error("--module only applies with --inline.")
    fmt = _report_format(request.report_format, request.diagnostics_json)
    fetcher = _fetcher(root_abs, options=options, out=out_abs, env=env)
    from flatten.shell.faults import fault_hook

    staging = None
    if not request.check:
        # The tree is written beside OUT while the graph checks finish (flatten/shell/staging.py),
        # where the checks below that need the graph (``_check_out_modules``) allow it.
        from flatten.shell.staging import Staging

        def allowed(graph: "ModuleGraph") -> bool:
            return _out_modules_problem(out, out_abs, root_abs, graph) is None

        staging = Staging(out_abs, allowed=allowed, fault=fault_hook())
    memo: Memo = DiskMemo(staging=staging)
    if progress is not None:
        from flatten.shell.progress import ProgressMemo

        memo = ProgressMemo(memo, progress)
    try:
        result, diags = run_build(root_abs, options=options, fetcher=fetcher, memo=memo)
        if progress is not None:
            progress.clear()
        if request.check and not diags.has_errors:
            # Each stale file is an error diagnostic, so every report format shows it (stages/stale.py).
            from flatten.stages.stale import (
                foreign_diagnostics,
                stale_diagnostics,
                tree_stale_files,
                unified_diff,
            )

            stale = tree_stale_files(out_abs, result.tree, result.graph, root=root_abs)
            command = check_command(request.roots, out)
            diags.extend(
                stale_diagnostics(stale, out=out_abs, root=root_abs, out_text=str(out), command=command)
            )
            diags.extend(foreign_diagnostics(stale, out=out_abs, root=root_abs, out_text=str(out)))
            if request.diff:
                sys.stdout.write(
                    unified_diff(
                        stale, out_abs, result.tree.files, copies=result.tree.copies, out_text=str(out)
                    )
                )
        elif not diags.has_errors:
            # The user's files in OUT that Terraform loads: kept by the write below, and named.
            from flatten.stages.stale import foreign_diagnostics, foreign_files

            foreign = foreign_files(out_abs, result.tree.paths())
            diags.extend(foreign_diagnostics(foreign, out=out_abs, root=root_abs, out_text=str(out)))
        if fmt is not ReportFormat.TEXT:
            sys.stdout.write(_render_report(fmt, diags, root=root_abs, command="build"))
        else:
            shown = _empty_root(root_abs, options) + diags
            if shown:
                sys.stderr.write(
                    render_text(
                        shown,
                        root=root_abs,
                        style=text_style(request.no_color, environ),
                        read=gate.source_reader(root_abs),
                        context=context_finder(),
                    )
                )
            if diags:
                _annotate(diags, root=root_abs, environ=environ)
        if diags.has_errors or request.check:
            return exit_code(diags)
        _check_out_modules(out, out_abs, root_abs, result.graph)
        if progress is not None:
            progress.writing(
                f"{len(result.tree.files) + len(result.tree.copies)} files to {printable(str(out))}",
                force=True,
            )
        try:
            if staging is None or not staging.commit(result.tree):
                write_tree(out_abs, result.tree.files, result.tree.copies, fault=fault_hook())
        except (OutputError, OSError) as exc:
            sys.stderr.write(
                render_text([output_error_diagnostic(exc, out)], style=text_style(request.no_color, environ))
            )
            return 2
        finally:
            if progress is not None:
                progress.clear()
    finally:
        if staging is not None:  # not swapped in: an error, --check, an exception
            staging.discard()
    if fmt is ReportFormat.TEXT and not request.quiet:
        # With a module outside the root the root module is not at the top of OUT (layout.py),
        # and Terraform must run where it is.
        # --out as typed may hold a newline or a control character: printed as an escape, so no
        # line of ours can start a workflow command (issue 38, item 10).
        where = f" (root module in {printable(str(out / result.tree.root))})" if result.tree.root else ""
        typer.echo(
            f"flatten: wrote {len(result.tree.paths())} files to {printable(str(out))}{where}", err=True
        )
        if result.inlined is not None and result.inlined.inlined:
            from flatten.stages.emit import MANIFEST_NAME

            typer.echo(
                f"flatten: {len(result.inlined.inlined)} module calls inlined: -target and -exclude "
                "addresses of them, or inside them, match nothing in the output; "
                f'{MANIFEST_NAME} "inlined" lists their new addresses',
                err=True,
            )
    close = getattr(fetcher, "close", None)  # a RemoteFetcher: its packages are in OUT now, so
    if close is not None:  # `cache clean` and the prune may take them
        close()
    prune_cache(env.cache_dir)
    return exit_code(diags)


def prune_cache(cache: Path) -> None:
    """After a build that wrote its output: keep the cache under its size limit (at most once
    an hour; flatten/shell/cache_admin.py). The limit is read from the process's environment: it
    is not an input of the build (lang/environ.py), so it changes no build record."""
    from flatten.shell.cache_admin import maybe_prune

    maybe_prune(cache, os.environ)


@app.command(cls=_OrderedVars)
def graph(
    ctx: typer.Context,
    roots: _RootsArgument = None,
    format: Annotated[GraphFormat, typer.Option("--format", "-f", help="Output format.")] = GraphFormat.TEXT,
    dialect: _DialectOption = Dialect.TERRAFORM,
    diagnostics_json: Annotated[
        bool, typer.Option("--diagnostics-json", help="Print diagnostics as `terraform validate -json` does.")
    ] = False,
    offline: _OfflineOption = False,
    no_color: _NoColorOption = False,
    terraform_version: _TerraformVersionOption = None,
    var: _VarOption = None,
    var_file: _VarFileOption = None,
) -> None:
    """Show the module tree of ROOT: every module path, its source and directory."""
    from flatten.lang.diagnostics import render_text
    from flatten.reports.graph_render import render_graph
    from flatten.shell.memo import DiskMemo
    from flatten.stages.graph import build_graph
    from flatten.syntax.snippets import context_finder

    paths, roots_abs = _read_roots(roots)
    many = len(paths) > 1
    options = _options(ctx, dialect, offline, terraform_version, var, var_file)
    memo = _roots_memo(DiskMemo(), many)
    style = text_style(no_color, os.environ)
    code = 0
    diag_docs: list[object] = []
    graph_docs: list[object] = []
    for root, root_abs in zip(paths, roots_abs, strict=True):
        label = root.as_posix() if many else None
        module_graph, diags = build_graph(
            root_abs, options=options, fetcher=_fetcher(root_abs, options=options), memo=memo
        )
        code = max(code, exit_code(diags))
        if diagnostics_json and label is not None:
            diag_docs.append({"root": label, **_json.loads(_json_report(diags, root_abs))})
        elif diagnostics_json:
            sys.stderr.write(_json_report(diags, root_abs))
        elif diags:
            sys.stderr.write(
                render_text(
                    diags,
                    root=root_abs,
                    label=label,
                    style=style,
                    read=gate.source_reader(root_abs),
                    context=context_finder(),
                )
            )
        rendered = render_graph(module_graph, format, root=root_abs)
        if label is None:
            sys.stdout.write(rendered)
        elif format is GraphFormat.JSON:
            graph_docs.append({"root": label, **_json.loads(rendered)})
        else:
            sys.stdout.write(_GRAPH_HEADING[format].format(label) + rendered)
    if diag_docs:
        sys.stderr.write(_json_array(diag_docs))
    if graph_docs:
        sys.stdout.write(_json_array(graph_docs))
    raise typer.Exit(code)


#: How ``flatten graph`` heads each root's tree when it shows several, in each format's comment.
_GRAPH_HEADING = MappingProxyType(
    {GraphFormat.TEXT: "# {}\n", GraphFormat.DOT: "// {}\n", GraphFormat.MERMAID: "%% {}\n"}
)


def _read_roots(roots: list[Path] | None) -> tuple[list[Path], list[Path]]:
    """The roots as given (the current directory when none) and each as an absolute directory."""
    paths = list(roots) if roots else [Path(".")]
    return paths, [_root_dir(root) for root in paths]


def _json_array(docs: list[object]) -> str:
    """Return one object per root as a JSON array (the layout of ``render_json``)."""
    return _json.dumps(docs, indent=2, ensure_ascii=False) + "\n"


def _roots_memo(memo: "Memo", many: bool) -> "Memo":
    """Return ``memo``, with the in-memory layer that loads each module once for all roots when
    there are several (flatten/shell/shared_memo.py)."""
    if not many:
        return memo
    from flatten.shell.shared_memo import SharedMemo

    return SharedMemo(memo)


@app.command(cls=_OrderedVars)
def providers(
    ctx: typer.Context,
    roots: _RootsArgument = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the report (not the diagnostics) as JSON.")
    ] = False,
    explain_address: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option("--explain", metavar="ADDRESS", help="Show one resource's chain from the root."),
    ] = None,
    dialect: _DialectOption = Dialect.TERRAFORM,
    report_format: Annotated[
        Optional[ReportFormat],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--format",
            help=_FORMAT_HELP + " Text stays in the report on stdout; the others go to stdout, as "
            "build's do, and the report (its format is --json's) then goes to stderr.",
        ),
    ] = None,
    diagnostics_json: _DiagnosticsJsonOption = False,
    offline: _OfflineOption = False,
    terraform_version: _TerraformVersionOption = None,
    checks: _ChecksOption = None,
    var: _VarOption = None,
    var_file: _VarFileOption = None,
) -> None:
    """Audit provider wiring: what each module receives, configures and uses, and from where."""
    from flatten.providers.audit import audit_json, audit_text, explain
    from flatten.providers.checks import check_wiring
    from flatten.shell.memo import DiskMemo
    from flatten.stages.emit import dumps
    from flatten.stages.graph import build_graph

    paths, roots_abs = _read_roots(roots)
    many = len(paths) > 1
    fmt = _report_format(report_format, diagnostics_json)
    if many and explain_address is not None:
        raise _usage_error("--explain shows one resource of one root: give one ROOT.")
    options = _options(ctx, dialect, offline, terraform_version, var, var_file, checks=checks)
    memo = _roots_memo(DiskMemo(), many)
    reports: list[str] = []
    audits: list[JsonValue] = []
    all_diags: list[tuple[Path, Diagnostics]] = []
    for root, root_abs in zip(paths, roots_abs, strict=True):
        module_graph, diags = build_graph(
            root_abs, options=options, fetcher=_fetcher(root_abs, options=options), memo=memo
        )
        # The same checks as build (flatten/providers/checks.py); the report is shown regardless.
        wiring, wiring_diags = check_wiring(module_graph, diags, options=options, memo=memo)
        diags.extend(wiring_diags)
        all_diags.append((root_abs, diags))
        if explain_address is not None:
            report = explain(wiring, explain_address)
            if report is None:  # before any diagnostics, so a redirected SARIF or XML file stays whole
                raise _usage_error(f"no resource {explain_address} in the configuration.")
        elif json_output and many:
            audits.append({"root": root.as_posix(), **audit_json(wiring, diags)})
            continue
        elif json_output:
            report = dumps(audit_json(wiring, diags))
        else:
            report = audit_text(wiring, diags)
        reports.append(f"# {root.as_posix()}\n{report}" if many else report)
    if audits:
        reports.append(dumps(audits))
    labels = [root.as_posix() for root in paths]
    if fmt is ReportFormat.TEXT:
        for root_abs, diags in all_diags:  # the text diagnostics are part of the report
            _annotate(diags, root=root_abs, environ=os.environ)
        sys.stdout.write("".join(reports))
    else:
        # As build does: the machine format alone on stdout (a redirect gets one document), and
        # the report, for a person, on stderr.
        sys.stderr.write("".join(reports))
        if not many:
            root_abs, diags = all_diags[0]
            sys.stdout.write(_render_report(fmt, diags, root=root_abs, command="providers"))
        else:
            sys.stdout.write(_render_many(fmt, labels, all_diags, command="providers"))
    raise typer.Exit(max(exit_code(diags) for _, diags in all_diags))


@app.command(cls=_OrderedVars)
def affected(
    ctx: typer.Context,
    roots: Annotated[
        Optional[list[Path]],  # noqa: UP045 - typer reads the annotation at run time
        typer.Argument(
            metavar="[ROOT...]",
            help="The roots to consider (default: every root under the current directory: a "
            "directory with configuration files that no other one calls as a module).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--since",
            metavar="REF",
            help="Compare the working tree with this git revision (HEAD~1, origin/main, a commit).",
            show_default=False,
        ),
    ] = None,
    base_out: Annotated[
        Optional[Path],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--base-out",
            metavar="DIR",
            help="Compare with an existing output of flatten build (a committed OUT); no git.",
            show_default=False,
        ),
    ] = None,
    report_format: Annotated[
        AffectedFormat,
        typer.Option(
            "--format",
            help="text (roots on stdout, why on stderr), json, github-matrix (a strategy.matrix "
            "object) or atlantis (atlantis.yaml with when_modified from the files each root reads).",
        ),
    ] = AffectedFormat.TEXT,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also list unaffected roots, each with its reason.")
    ] = False,
    dialect: _DialectOption = Dialect.TERRAFORM,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help=_OFFLINE_HELP + " A root whose remote module is not installed is listed as undecided.",
        ),
    ] = False,
    exclude: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option("--exclude", metavar="GLOB", help="As flatten build's --exclude."),
    ] = None,
    no_color: _NoColorOption = False,
    terraform_version: _TerraformVersionOption = None,
    var: _VarOption = None,
    var_file: _VarFileOption = None,
) -> None:
    """List the roots whose flattened output a change affects (--since REF or --base-out DIR)."""
    from flatten.shell.affected import AffectedRequest, UsageError, run_affected

    request = AffectedRequest(
        roots=tuple(roots or ()),
        options=_options(
            ctx, dialect, offline, terraform_version, var, var_file, exclude=tuple(exclude or ())
        ),
        since=since,
        base_out=base_out,
        report_format=report_format.value,
        verbose=verbose,
        style=text_style(no_color, os.environ),
        environ=BuildRequest.environ_of(os.environ),
    )
    try:
        code = run_affected(request)
    except UsageError as exc:
        raise _usage_error(str(exc)) from None
    raise typer.Exit(code)


class _CacheGroup(TyperGroup):
    """``flatten cache``: each command's line in ``flatten cache -h`` whole (``_whole_commands``)."""

    def format_commands(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        _whole_commands(self, ctx, formatter)


cache_app = typer.Typer(
    cls=_CacheGroup,
    help="Show where flatten's cache is and how much it holds; `flatten cache clean` empties it.",
    rich_markup_mode=None,
    invoke_without_command=True,
)
app.add_typer(cache_app, name="cache")


@cache_app.callback()
def cache(ctx: typer.Context) -> None:
    """Show where flatten's cache is, its size per kind of entry, and the size limit (docs/cache.md)."""
    if ctx.invoked_subcommand is not None:
        return
    from flatten.shell.cache_admin import format_size, max_size, usage

    found = usage(_source_env(os.environ).cache_dir)
    limit = max_size(os.environ)
    if not found.owned:
        typer.echo(
            f"{found.root} (not flatten's cache: it holds files flatten did not make and no "
            "CACHEDIR.TAG of flatten's, so flatten neither uses nor cleans it; point "
            "FLATTEN_CACHE_DIR at an empty or new directory; docs/cache.md)"
        )
        return
    typer.echo(f"{found.root}" + ("" if found.root.is_dir() else " (not created yet)"))
    typer.echo(f"  {format_size(found.total)} in {found.count} entries")
    for area, (count, size) in found.areas.items():
        typer.echo(f"  {area + ':':<13}{format_size(size):>10}  {count} entries")
    shown = format_size(limit) if limit else "none"
    typer.echo(f"  limit: {shown} (FLATTEN_CACHE_MAX_SIZE; docs/cache.md)")


@cache_app.command("clean")
def cache_clean(
    older_than: Annotated[
        Optional[float],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=0,
            help="Remove only entries written (packages: used) more than DAYS days ago.",
        ),
    ] = None,
    max_size: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            "--max-size",
            metavar="SIZE",
            help="Remove the oldest entries until the cache holds at most SIZE (1G, 500M), keeping "
            "those used in the last hour.",
        ),
    ] = None,
) -> None:
    """Remove cached entries: all of them by default. Everything there is made again when needed."""
    from flatten.shell.cache_admin import clean, format_size, parse_days, parse_size, prune, usage

    root = _source_env(os.environ).cache_dir
    if older_than is not None and max_size is not None:
        raise _usage_error("--older-than and --max-size choose differently what to remove: give one.")
    if not usage(root).owned:
        typer.echo(
            f"flatten: {root} is not flatten's cache (it holds files flatten did not make and no "
            "CACHEDIR.TAG of flatten's): nothing was removed. Point FLATTEN_CACHE_DIR at an empty "
            "or new directory (docs/cache.md).",
            err=True,
        )
        raise typer.Exit(1)
    if max_size is not None:
        try:
            limit = parse_size(max_size)
        except ValueError as exc:
            raise _usage_error(f"--max-size: {exc}.") from None
        count, size = prune(root, limit)
        typer.echo(f"flatten: removed {count} entries ({format_size(size)}) from {root}", err=True)
        why = _why_kept(root, limit)
        if why:
            typer.echo(f"flatten: {why}", err=True)
        return
    else:
        try:
            seconds = None if older_than is None else parse_days(older_than)
        except ValueError as exc:
            raise _usage_error(f"--older-than: {exc}.") from None

        def waiting() -> None:
            typer.echo("flatten: waiting for running builds to finish using the cache's packages", err=True)

        count, size = clean(root, older_than=seconds, waiting=waiting)
    typer.echo(f"flatten: removed {count} entries ({format_size(size)}) from {root}", err=True)


def _why_kept(root: Path, limit: int) -> str:
    """Return why the cache at ``root`` still holds more than ``limit`` bytes after a prune (or
    why nothing needed removing), for ``cache clean --max-size``; "" when it is within the limit
    after removing something."""
    import time

    from flatten.shell.cache_admin import GRACE, entries, format_size

    now = time.time()
    left = entries(root)
    total = sum(e.size for e in left)
    if total <= limit:
        return f"the cache holds {format_size(total)}, within {format_size(limit)}." if limit else ""
    young = [e for e in left if e.used > now - GRACE]
    parts = []
    if young:
        parts.append(
            f"{len(young)} entries ({format_size(sum(e.size for e in young))}) were used in the last "
            "hour and are kept, as a build running now may be using them"
        )
    if len(young) < len(left):
        parts.append(f"{len(left) - len(young)} older entries are in use by a running build")
    return (
        f"the cache still holds {format_size(total)}, over {format_size(limit)}: {'; '.join(parts)}. "
        "Run it again later, or `flatten cache clean` to remove every entry."
    )


def _case_name(label: str, base: "SourceBase") -> str:
    """Return a JUnit test case's name for a root: its path in the repository, else as given."""
    return base.root_path if base.root_path != "." else label


def _render_many(
    fmt: ReportFormat, labels: list[str], roots: list[tuple[Path, "Diagnostics"]], *, command: str
) -> str:
    """Return several roots' diagnostics in a machine format: a JSON array of one object per
    root, a SARIF run per root, a JUnit test case per root (flatten/shell/roots.py does the same)."""
    from flatten.reports.base import find_base

    if fmt is ReportFormat.SARIF:
        from flatten.reports.sarif import render_sarif_many

        return render_sarif_many(
            [(label, d, find_base(r)) for label, (r, d) in zip(labels, roots, strict=True)]
        )
    if fmt is ReportFormat.JUNIT:
        from flatten.reports.junit import render_junit_many

        return render_junit_many(
            [
                (_case_name(label, base := find_base(r)), d, base)
                for label, (r, d) in zip(labels, roots, strict=True)
            ],
            command=command,
        )
    return _json_array(
        [
            {"root": label, **_json.loads(_json_report(d, r))}
            for label, (r, d) in zip(labels, roots, strict=True)
        ]
    )


#: Exit code for a bug in flatten itself (not the configuration, not the command line).
INTERNAL_ERROR = 3

#: Terraform's wording when it cannot write a file (internal/command/fmt.go, processFile:
#: "Failed to write <path>"); here the whole output tree, whose path the detail names.
_WRITE_SUMMARY = "Failed to write the output tree"


def output_error_diagnostic(exc: "OSError | Exception", out: Path) -> "Diagnostic":
    """Return a failure to write ``--out`` as a diagnostic: an ``OSError`` in plain words with
    what to do (flatten/lang/oserror.py), an ``OutputError`` with its own sentence."""
    from flatten.lang.diagnostics import Diagnostic
    from flatten.lang.oserror import os_error_diagnostic

    if isinstance(exc, OSError):
        where = exc.filename
        if where is not None and ".flatten-" in os.path.basename(os.fspath(where)):
            where = os.path.dirname(os.fspath(where))  # the temporary tree: its directory is the cause
        doing = f"write the output tree to {out}"
        return os_error_diagnostic(exc, summary=_WRITE_SUMMARY, doing=doing, path=where)
    return Diagnostic.error(_WRITE_SUMMARY, f"{exc}.".replace("..", "."))


def _os_error_exit(exc: OSError) -> None:
    """Report an ``OSError`` no command caught as a diagnostic (never ``[Errno N]``) and exit 1."""
    from flatten.lang.diagnostics import render_text
    from flatten.lang.oserror import os_error_diagnostic

    sys.stderr.write(render_text([os_error_diagnostic(exc, summary="Failed to access a file", doing="use")]))
    sys.exit(1)


def main(runner: BuildRunner | None = None) -> None:
    """Run the command line in ``sys.argv``; ``runner`` runs a build request (else ``run_request``)."""
    try:
        # One program name however it was started (`flatten`, `python -m flatten`): the usage
        # lines read the same, and shell completion answers to _FLATTEN_COMPLETE in both.
        if "_FLATTEN_COMPLETE" in os.environ:  # a completion request: typer's zsh, fish and PowerShell
            from typer._completion_classes import completion_init

            completion_init()
        app(prog_name="flatten", obj=runner)
    except OSError as exc:
        if os.environ.get("FLATTEN_TRACEBACK"):
            raise
        # A file that vanished or a disk that filled mid-command is the machine's, not a bug.
        _os_error_exit(exc)
    except Exception as exc:
        if os.environ.get("FLATTEN_TRACEBACK"):
            raise
        # Whatever the input, a failure must be readable; the output was not touched (write_tree
        # swaps a finished tree in, so an exception before that leaves the old output in place).
        sys.stderr.write(
            f"flatten: internal error: {type(exc).__name__}: {exc}\n\n"
            "This is a bug in flatten, not in your configuration; the previous output was left in "
            "place. Please report it with the command line you ran. Set FLATTEN_TRACEBACK=1 to see "
            "the Python traceback.\n"
        )
        sys.exit(INTERNAL_ERROR)
