"""Diagnostics: what went wrong, where, and what to do; carried beside values, never raised.

A summary is a short fixed phrase copied word for word from Terraform or OpenTofu; where the two
engines word it differently the text comes from ``Dialect.word`` (the one table of differences,
``flatten/lang/dialect.py``, not ``if`` statements at call sites). The detail is full sentences.
Rendering follows ``terraform validate`` for text and ``terraform validate -json`` for JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from flatten.lang.model import Pos, Range
from flatten.lang.printable import no_commands, printable
from flatten.lang.redact import redact_url

__all__ = [
    "Code",
    "Diagnostic",
    "Diagnostics",
    "Extra",
    "Severity",
    "TextStyle",
    "missing_item_range",
    "range_json",
    "render_json",
    "render_text",
    "snippet_json",
    "text_order",
]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Code(StrEnum):
    """What a diagnostic reports, for a later stage that acts on it (never rendered).

    A stage that reacts to another stage's diagnostic tests its code, not its wording: summaries
    follow the engines' text, which changes between versions and dialects.
    """

    UNREADABLE = "unreadable"  # a file or module directory could not be read or decoded
    INCOMPATIBLE_MODULE = "incompatible_module"  # the OpenTofu version gate excluded the module
    QUOTED_KEYWORD = "quoted_keyword"  # a keyword written as a string ("all", "create_before_destroy")
    UNEXPECTED_ARGUMENT = "unexpected_argument"  # an argument or block the schema has no place for
    MISSING_ARGUMENT = "missing_argument"  # a required argument a body does not set
    # An error Terraform finds only when it evaluates the expression: a JSON string's template
    # in the validate walk (hcl/json/structure.go parses it in ``Value`` with a context), a
    # module's source at init from 1.15. Not a loading error: the module graph keeps it for the
    # walk (stages/graph.py ``_evaluated``), or for a module that loaded cleanly (``_split_at_init``).
    EVALUATED = "evaluated"
    INVALID_EXPRESSION = "invalid_expression"  # an expression whose form the argument does not accept
    STALE_OUTPUT = "stale_output"  # --check: an output file differs (subject: "changed: main.tf.json")
    OS_ERROR = "os_error"  # the system refused a read or write (lang/oserror.py; subject: errno name)
    NOT_INSTALLED = "not_installed"  # --offline: a remote module not installed (flatten affected: undecided)
    SYNTAX = "syntax"  # HCL's parser (native or JSON): reported once per file, however often it is loaded


@dataclass(frozen=True, slots=True)
class Extra:
    """Machine-readable data about a diagnostic (hcl's ``Diagnostic.Extra``), set where it is made.

    ``subject`` is the name the diagnostic is about (the argument of ``UNEXPECTED_ARGUMENT``).
    ``replaces`` lists the codes of parser diagnostics at the same range that this one stands in
    for: OpenTofu's decoder reports those situations in its own words (``decode.superseded``).
    ``reader_syntax`` marks a reader's own wording of a syntax error (python-hcl2's view of it,
    syntax/hcl.py): on the error path HCL's own errors replace it (syntax/_hcl_syntax_diags.py).
    """

    code: Code | None = None
    subject: str = ""
    replaces: tuple[Code, ...] = ()
    reader_syntax: bool = False


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in the configuration.

    ``module`` is the module path (``module.a.module.b``) for anything outside the root.
    ``refusal`` marks an error of flatten's own about an input Terraform accepts but no output
    could reproduce (docs/overrides.md): the build fails, but later checks run as Terraform's
    would, as if it were absent, so the user sees every error Terraform would report too.
    ``extra`` is data for later stages (``Extra``); no renderer shows it.
    """

    severity: Severity
    summary: str
    detail: str = ""
    range: Range | None = None
    module: str = ""
    refusal: bool = False
    extra: Extra | None = None
    # HCL's context range (the construct around the subject), where the parser gives one: the
    # snippet covers it too (``snippet_json``).
    context: Range | None = None

    @classmethod
    def error(
        cls,
        summary: str,
        detail: str = "",
        range: Range | None = None,
        module: str = "",
        *,
        extra: Extra | None = None,
    ) -> Diagnostic:
        return cls(Severity.ERROR, summary, detail, range, module, extra=extra)

    @classmethod
    def warning(
        cls,
        summary: str,
        detail: str = "",
        range: Range | None = None,
        module: str = "",
        *,
        extra: Extra | None = None,
    ) -> Diagnostic:
        return cls(Severity.WARNING, summary, detail, range, module, extra=extra)

    @property
    def code(self) -> Code | None:
        """The code of ``extra`` (None when the diagnostic carries none)."""
        return self.extra.code if self.extra is not None else None


class Diagnostics(list[Diagnostic]):
    """A list of diagnostics that knows whether any is an error."""

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self)

    @property
    def has_terraform_errors(self) -> bool:
        """Whether an error is one Terraform reports too (not a refusal of flatten's own)."""
        return any(d.severity is Severity.ERROR and not d.refusal for d in self)

    def error(
        self, summary: str, detail: str = "", range: Range | None = None, *, extra: Extra | None = None
    ) -> None:
        self.append(Diagnostic.error(summary, detail, range, extra=extra))

    def warning(
        self, summary: str, detail: str = "", range: Range | None = None, *, extra: Extra | None = None
    ) -> None:
        self.append(Diagnostic.warning(summary, detail, range, extra=extra))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self if d.severity is Severity.WARNING]


def missing_item_range(body: Range) -> Range:
    """HCL's ``MissingItemRange`` of a body whose source range is ``body``, where "Missing
    required argument" points: a native body's first character (hclsyntax/structure.go, its
    ``SrcRange.Start``; one character wide, as Terraform prints it), a JSON object's closing
    brace (json/structure.go, ``CloseRange``)."""
    if body.filename.endswith(".json"):
        end = body.end
        return Range(body.filename, Pos(end.line, end.column - 1, end.byte - 1), end)
    start = body.start
    return Range(body.filename, start, Pos(start.line, start.column + 1, start.byte + 1))


def range_json(r: Range) -> dict[str, object]:
    """A range as ``terraform validate -json`` writes it (also ``flatten providers --json``'s)."""
    return {
        "filename": r.filename,
        "start": {"line": r.start.line, "column": r.start.column, "byte": r.start.byte},
        "end": {"line": r.end.line, "column": r.end.column, "byte": r.end.byte},
    }


def snippet_json(
    d: Diagnostic, text: str | None, context: Callable[[str, str, int], str] | None = None
) -> dict[str, object] | None:
    """Terraform's ``snippet`` object for ``d`` (internal/command/views/json/diagnostic.go,
    ``NewDiagnostic``): the lines of the source the subject (and its context range) covers, the
    subject's byte offsets in them, the name of the top-level block around it (``context``, as
    HCL's ``ContextString`` gives it: ``resource "terraform_data" "a"``) and no values (flatten
    evaluates nothing). None without the file's text."""
    r = d.range
    if r is None or text is None:
        return None
    src = text.encode("utf-8", "surrogatepass")
    hl_start, hl_end = r.start.byte, max(r.end.byte, r.start.byte)
    sn_start, sn_end, start_line = hl_start, hl_end, r.start.line
    if d.context is not None and d.context.filename == r.filename:
        sn_start, sn_end = min(sn_start, d.context.start.byte), max(sn_end, d.context.end.byte)
        start_line = min(start_line, d.context.start.line)
    # Empty ranges are made one byte long, for the snippet and the highlight alike.
    if sn_end == sn_start:
        sn_end += 1
    if hl_end == hl_start:
        hl_end += 1
    code: list[bytes] = []
    code_start = -1
    line_start = 0
    for raw in src.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        line_end = line_start + len(line)
        # hcl.Range.Overlaps: an empty line's range overlaps when the snippet contains it.
        if (line_start < sn_end and sn_start < line_end) or (
            line_start == line_end and sn_start <= line_start < sn_end
        ):
            if code_start < 0:
                code_start = line_start
            code.append(line)
        line_start += len(raw) + 1
    code_text = b"\n".join(code)
    begin = min(max(hl_start - max(code_start, 0), 0), len(code_text))
    end = min(max(begin + (hl_end - hl_start), 0), len(code_text))
    shown = code_text.decode("utf-8", "replace")
    if (redacted := redact_url(shown)) != shown:
        # A credential in a URL of the source (userinfo, a token) is never shown, as in text
        # output; the highlight is kept within the shorter line.
        shown = redacted
        end = min(end, len(shown.encode("utf-8")))
        begin = min(begin, end)
    out: dict[str, object] = {"context": None}
    name = context(text, r.filename, hl_start - 1) if context is not None else ""
    if name:
        out["context"] = name
    out.update(
        {
            "code": shown,
            "start_line": start_line,
            "highlight_start_offset": begin,
            "highlight_end_offset": end,
            "values": [],
        }
    )
    return out


def render_json(
    diags: Iterable[Diagnostic],
    *,
    sources: Callable[[str], str | None] | None = None,
    context: Callable[[str, str, int], str] | None = None,
) -> str:
    """Return the diagnostics as ``terraform validate -json`` prints them (one JSON object).

    ``sources`` gives a file's text by its name in ranges (None when it cannot be read): each
    diagnostic with a range then carries Terraform's ``snippet`` (``snippet_json``), its context
    named by ``context`` (text, filename, byte offset -> block header).
    """
    items = list(diags)
    errors = sum(1 for d in items if d.severity is Severity.ERROR)
    out: list[dict[str, object]] = []
    for d in items:
        entry: dict[str, object] = {
            "severity": d.severity.value,
            # Any stage may quote a source address: no URL userinfo is ever shown.
            "summary": redact_url(d.summary),
            "detail": redact_url(d.detail),
        }
        if d.range is not None:
            entry["range"] = range_json(d.range)
            if sources is not None:
                snippet = snippet_json(d, sources(d.range.filename), context)
                if snippet is not None:
                    entry["snippet"] = snippet
        if d.module:
            entry["module"] = d.module
        out.append(entry)
    doc = {
        "format_version": "1.0",
        "valid": errors == 0,
        "error_count": errors,
        "warning_count": len(items) - errors,
        "diagnostics": out,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class TextStyle:
    """How ``render_text`` draws for a terminal: Terraform's colours and its wrapping width.

    ``color``: severities in bold red or yellow, the summary in bold, the subject underlined in
    the snippet, each diagnostic inside a coloured left rule (format.Diagnostic). Without it,
    plain text (format.DiagnosticPlain). ``width``: the terminal's columns, detail paragraphs
    wrapped to fit (0: not wrapped, as for a library caller). Both as
    hashicorp/terraform internal/command/format/diagnostic.go draws them.
    """

    color: bool = False
    width: int = 0


# colorstring's codes, as Terraform's [bold], [red], [yellow], [underline] and [reset] expand.
_BOLD, _RED, _YELLOW, _UNDERLINE, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[4m", "\x1b[0m"
_RULE_WIDTH = 2  # "│ ": the left rule's cells in a coloured diagnostic


def _source(
    read: Callable[[str], str | None] | None, filename: str, sources: dict[str, tuple[str, list[str]] | None]
) -> tuple[str, list[str]] | None:
    """A file's text and lines, read once per rendering (``sources``): a large file with
    thousands of errors was read again for each of them, as many times its size."""
    if read is None:
        return None
    if filename not in sources:
        text = read(filename)
        sources[filename] = (text, text.splitlines()) if text is not None else None
    return sources[filename]


def _snippet(source: tuple[str, list[str]] | None, r: Range, color: bool) -> str | None:
    if source is None:
        return None
    lines = source[1]
    if not 1 <= r.start.line <= len(lines):
        return None
    line = lines[r.start.line - 1]
    if color:
        # The subject underlined (to the end of the line when it goes on past it), as
        # terraform's snippetFormatter.writeSnippet does; columns are 1-based characters.
        start = min(max(r.start.column - 1, 0), len(line))
        end = r.end.column - 1 if r.end.line == r.start.line else len(line)
        end = min(max(end, start), len(line))
        if end > start:
            before, subject, after = (
                printable(redact_url(part)) for part in (line[:start], line[start:end], line[end:])
            )
            return f"{r.start.line:>4}: {before}{_UNDERLINE}{subject}{_RESET}{after}"
    return f"{r.start.line:>4}: {printable(redact_url(line))}"


def text_order(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics in the order Terraform's text output shows them: warnings before errors,
    those without a subject before those with one, then by file (fewer path segments first,
    then by name), then by the subject's start byte and end byte; otherwise as given
    (internal/command/views/view.go ``Diagnostics`` calls ``diags.Sort()``,
    internal/tfdiags/diagnostics.go ``sortDiagnostics.Less``, a stable sort). ``validate
    -json`` keeps the order diagnostics were found in: ``render_json`` does not sort.
    Filenames are relative to the root, as Terraform's are to its working directory."""

    def key(d: Diagnostic) -> tuple[int, int, int, str, int, int]:
        warning_first = 0 if d.severity is Severity.WARNING else 1
        r = d.range
        if r is None:
            return (warning_first, 0, 0, "", 0, 0)
        # Go's filepath.Separator: flatten's range filenames are always written with "/".
        return (warning_first, 1, r.filename.count("/"), r.filename, r.start.byte, r.end.byte)

    return sorted(diags, key=key)


def _wrap(detail: str, width: int) -> list[str]:
    """Wrap each line of ``detail`` at ``width`` as go-wordwrap does for Terraform: at spaces only,
    a longer word left whole; a line starting with a space is preformatted and kept as it is."""
    if width <= 0:
        return detail.split("\n")
    import textwrap

    out: list[str] = []
    for line in detail.split("\n"):
        if line.startswith(" ") or len(line) <= width:
            out.append(line)
        else:
            out.extend(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""])
    return out


def render_text(
    diags: Iterable[Diagnostic],
    *,
    root: Path | None = None,
    label: str | None = None,
    style: TextStyle = TextStyle(),
    read: Callable[[str], str | None] | None = None,
    context: Callable[[str, str, int], str] | None = None,
) -> str:
    """Return the diagnostics as Terraform prints them: ``Error: summary``, location, detail,
    in Terraform's order for text (``text_order``).

    ``label`` names the root module in each location (``in root live/prod``), for a run that
    builds several roots. ``style`` draws them for a terminal (``TextStyle``); the default is
    plain and unwrapped. ``read`` returns a file's text by its name in a range, for the source
    line quoted under the location (``gate.source_reader(root)``: only what the build itself
    could read, so a file linking out of the root is never quoted; issue 38, item 6); without
    it, no source line. ``context`` names the block around a subject (text, filename, byte
    offset -> ``resource "terraform_data" "a"``, HCL's ``ContextString``) for the location line
    (``on main.tf line 3, in resource "terraform_data" "a":``, as Terraform's
    ``snippetFormatter`` writes it); a subject's file names its module, so the module path is
    shown only for a diagnostic without a subject. ``root`` is kept for callers and no longer
    read from.

    Wrapped first, then every line made safe for CI logs (``printable.no_commands``): no line
    of the result starts a GitHub workflow command, however a detail wraps (issue 38, item 10).
    """
    blocks: list[str] = []
    sources: dict[str, tuple[str, list[str]] | None] = {}  # each file, read when a snippet needs it
    in_root = f"in root {label}" if label is not None else None
    color = style.color
    for d in text_order(diags):
        severity = d.severity.value.capitalize()
        # Names in every part may come from outside (a directory name, a server): lang/printable.py.
        summary = printable(redact_url(d.summary))
        if color:
            hue = _RED if d.severity is Severity.ERROR else _YELLOW
            lines = [f"{_BOLD}{hue}{severity}: {_RESET}{_BOLD}{summary}{_RESET}"]
        else:
            lines = [f"{severity}: {summary}"]
        if d.range is not None:
            lines.append("")
            source = _source(read, d.range.filename, sources)
            where = f"  on {printable(d.range.filename)} line {d.range.start.line}"
            if source is not None and context is not None:
                # Terraform asks for the context one byte before the subject (views/json/diagnostic.go).
                name = context(source[0], d.range.filename, d.range.start.byte - 1)
                if name:
                    where += f", in {printable(name)}"
            if in_root is not None:
                where += f", {printable(in_root)}"
            lines.append(where + ":")
            snippet = _snippet(source, d.range, color)
            if snippet:
                lines.append(snippet)
        elif d.module or in_root is not None:
            places = (d.module and f"in {d.module}", in_root)
            lines += ["", "  " + printable(", ".join(w for w in places if w))]
        if d.detail:
            # Terraform leaves room for the left rule and one more column (format.Diagnostic).
            width = style.width - (_RULE_WIDTH if color else 0) - 1 if style.width else 0
            lines += ["", *_wrap(printable(redact_url(d.detail), lines=True), width)]
        if color:
            rule = f"{hue}│{_RESET}"
            ruled = [f"{rule} {line}" if line else rule for line in lines]
            lines = [f"{hue}╷{_RESET}", *ruled, f"{hue}╵{_RESET}"]
        blocks.append("\n".join(lines))
    return no_commands(("\n" if color else "\n\n").join(blocks) + ("\n" if blocks else ""))
