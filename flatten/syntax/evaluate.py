"""OpenTofu's static evaluator: the one place flatten computes an expression's value (spec §5.6).

Rule for the whole file: OpenTofu evaluates a module call's ``source`` and ``version`` with its
static evaluator: literals, templates, ``var.*`` (the caller's argument, else the default),
``local.*``, ``path.*``, ``terraform.workspace`` and functions. flatten reads the part of that
language a module address needs: string, number, bool and null literals, templates,
parentheses, those references and a few pure string functions. Anything else raises
``Unsupported`` (its message says what) rather than being guessed at; an evaluation that fails
the way OpenTofu's does records OpenTofu's diagnostics and raises ``Failed``. Values convert to
strings and bools by cty's rules (``as_string``, ``as_bool``: ``lang/types.py``), for the other
stages too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType

from flatten.lang.diagnostics import Diagnostics
from flatten.lang.model import Attribute, Block, JsonValue, Module, Pos, Range
from flatten.lang.types import BOOL, STRING, ConversionError, convert
from flatten.syntax._hcl_templates import Literal, Part, TemplateError, _apply_strip, quoted_parts
from flatten.syntax._hcl_templates import Sequence as Sequence_

__all__ = [
    "Failed",
    "Ident",
    "Scope",
    "Unsupported",
    "Value",
    "as_bool",
    "as_string",
    "constant_expression",
    "constant_template",
    "locator",
]


_NAME = re.compile(r"[^\W\d][\w-]*", re.UNICODE)
_NUM = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING_FUNCTIONS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "tostring": lambda s: s,
        "lower": str.lower,
        "upper": str.upper,
        "trimspace": str.strip,
    }
)
# How many steps of a reference name its subject (ParseRef); the rest are attribute accesses.
_SUBJECT_STEPS = MappingProxyType({"data": 3, "ephemeral": 3, "module": 3, "self": 1})


class Unsupported(Exception):
    """An expression outside what flatten's static evaluator reads; the message says what."""


class Failed(Exception):
    """Evaluation stopped; the diagnostics that say why are already recorded."""


@dataclass(frozen=True, slots=True)
class Value:
    """A statically known value with the two cty marks that decoding rejects."""

    value: JsonValue
    sensitive: bool = False
    ephemeral: bool = False

    def marked(self, other: Value) -> Value:
        return Value(self.value, self.sensitive or other.sensitive, self.ephemeral or other.ephemeral)


@dataclass(frozen=True, slots=True)
class Ident:
    """OpenTofu's ``StaticIdentifier``: what is being evaluated, for messages and cycle checks."""

    module: str  # the module's address, "" for the root
    subject: str
    range: Range

    def __str__(self) -> str:
        return f"{self.module}:{self.subject}" if self.module else self.subject


Locate = Callable[[int, int], Range]


def locator(value: JsonValue, rng: Range) -> Locate:
    """Map offsets in a stored expression string to source ranges (the whole range when unsure).

    A native bare expression is stored as ``${source}``; a quoted native string or a JSON string
    without escapes is stored as written between its quotes. Anything else (escapes, several
    lines, non-ASCII text) falls back to the whole expression's range.
    """
    width = rng.end.byte - rng.start.byte
    shift: int | None = None
    if (
        isinstance(value, str)
        and rng.start.line == rng.end.line
        and rng.end.column - rng.start.column == width
    ):
        if value.startswith("${") and value.endswith("}") and width == len(value) - 3:
            shift = -2
        elif width == len(value) + 2:
            shift = 1

    def at(start: int, end: int) -> Range:
        if shift is None or start + shift < 0 or end + shift > width:
            return rng
        s, e = start + shift, end + shift
        return Range(
            rng.filename,
            Pos(rng.start.line, rng.start.column + s, rng.start.byte + s),
            Pos(rng.start.line, rng.start.column + e, rng.start.byte + e),
        )

    return at


def _skip_string(text: str, i: int) -> int:
    """Return the index just past the quoted string that starts at ``text[i]``."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        elif text.startswith(("${", "%{"), i):
            i = _skip_braces(text, i + 1)
        else:
            i += 1
    raise Unsupported("an unterminated string")


def _skip_braces(text: str, i: int) -> int:
    """Return the index just past the ``{...}`` group that starts at ``text[i]``."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unsupported("an unterminated interpolation")


def as_string(value: JsonValue) -> str | None:
    """cty's conversion of a primitive value to string (None for null and for what has none)."""
    try:
        text = convert(value, STRING)
    except ConversionError:
        return None
    return text if isinstance(text, str) else None


def as_bool(value: JsonValue) -> bool | None:
    """cty's conversion of a primitive value to bool (``"true"``/``"1"``, ...); None when there is none."""
    try:
        flag = convert(value, BOOL)
    except ConversionError:
        return None
    return flag if isinstance(flag, bool) else None


def _combine(value: JsonValue, parts: Sequence[Value]) -> Value:
    out = Value(value)
    for part in parts:
        out = out.marked(part)
    return out


@dataclass
class Scope:
    """One module's static evaluation context (OpenTofu's ``StaticEvaluator`` for a module call).

    ``address`` is the module's address (``module.a.module.b``, "" for the root). ``caller`` is the
    calling module's scope and ``call`` the module block whose arguments set this module's
    variables; both are None for the root, whose variables take ``inputs`` (name -> (value,
    source): the values ``tofu init`` reads, stages/variables.py), else their defaults.
    ``chosen`` records, for the root, each variable an evaluation read and where its value came
    from (the manifest lists them). ``directory`` is what ``path.module`` gives.
    """

    module: Module
    address: str = ""
    directory: str = "."
    caller: Scope | None = None
    call: Block | None = None
    diags: Diagnostics = field(default_factory=Diagnostics)
    stack: list[Ident] = field(default_factory=list)
    inputs: Mapping[str, tuple[JsonValue, str]] = field(default_factory=dict)
    chosen: dict[str, tuple[JsonValue, str, bool]] = field(default_factory=dict)

    def evaluate(self, attr: Attribute, ident: Ident) -> Value:
        """Evaluate an attribute; raise ``Failed`` (diagnosed) or ``Unsupported``."""
        if any(str(frame) == str(ident) for frame in self.stack):
            self.diags.error("Circular reference", f"{ident} is self referential", ident.range)
            raise Failed
        self.stack.append(ident)
        try:
            return self.value(attr.value, locator(attr.value, attr.expr.range))
        finally:
            self.stack.pop()

    def value(self, value: JsonValue, locate: Locate) -> Value:
        whole = locate(0, 0)  # only used when nested values cannot be located
        if isinstance(value, str):
            return self.template(value, locate)
        if isinstance(value, list):
            items = [self.value(v, lambda _s, _e: whole) for v in value]
            return _combine([i.value for i in items], items)
        if isinstance(value, dict):
            entries = {k: self.value(v, lambda _s, _e: whole) for k, v in value.items()}
            return _combine({k: v.value for k, v in entries.items()}, list(entries.values()))
        return Value(value)

    # -- templates: JSON-template text, where $${ and %%{ are literal ---------------------------
    def template(self, text: str, locate: Locate) -> Value:
        pieces: list[Value] = []
        literal: list[str] = []
        i = 0
        while i < len(text):
            if text.startswith(("$${", "%%{"), i):
                literal.append(text[i] + "{")
                i += 3
            elif text.startswith("%{", i):
                raise Unsupported("a template directive")
            elif text.startswith("${", i):
                close = _skip_braces(text, i + 1)
                if text.startswith("${~", i) or text[close - 2] == "~":
                    raise Unsupported("a template strip marker")
                if literal:
                    pieces.append(Value("".join(literal)))
                    literal.clear()
                pieces.append(self.expression(text, i + 2, close - 1, locate))
                if i == 0 and close == len(text):
                    return pieces[0]  # a template that is one interpolation is its value, unconverted
                i = close
            else:
                literal.append(text[i])
                i += 1
        if literal:
            pieces.append(Value("".join(literal)))
        strings = [as_string(p.value) for p in pieces]
        if any(s is None for s in strings):
            raise Unsupported("a template that interpolates a value other than a string, number or bool")
        return _combine("".join(s for s in strings if s is not None), pieces)

    # -- expressions ---------------------------------------------------------------------------
    def expression(self, text: str, start: int, end: int, locate: Locate) -> Value:
        value, i = self.term(text, _space(text, start, end), end, locate)
        if _space(text, i, end) != end:
            raise Unsupported(f"the expression {text[start:end].strip()!r}")
        return value

    def term(self, text: str, i: int, end: int, locate: Locate) -> tuple[Value, int]:
        if i >= end:
            raise Unsupported("an empty expression")
        c = text[i]
        if c == '"':
            close = _skip_string(text, i)
            return self.quoted(text, i, close, locate), close
        if c == "(":
            value, j = self.term(text, _space(text, i + 1, end), end, locate)
            j = _space(text, j, end)
            if j >= end or text[j] != ")":
                raise Unsupported(f"the expression {text[i:end].strip()!r}")
            return value, j + 1
        if c == "[":
            return self.collection(text, i + 1, end, locate, "]")
        if c == "{":
            return self.collection(text, i + 1, end, locate, "}")
        if c == "-" and _NUM.match(text, i + 1, end):
            value, j = self.term(text, i + 1, end, locate)
            assert isinstance(value.value, (int, Decimal))
            return Value(-value.value), j
        number = _NUM.match(text, i, end)
        if number:
            digits = number.group()
            return Value(int(digits) if digits.isdigit() else Decimal(digits)), number.end()
        name = _NAME.match(text, i, end)
        if name is None:
            raise Unsupported(f"the expression {text[i:end].strip()!r}")
        j = _space(text, name.end(), end)
        if j < end and text[j] == "(":
            return self.function(name.group(), text, j + 1, end, locate, name.start())
        if name.group() in ("true", "false", "null") and not text.startswith(".", name.end()):
            return Value({"true": True, "false": False, "null": None}[name.group()]), name.end()
        steps = [name.group()]
        j = name.end()
        while text.startswith(".", j):
            step = _NAME.match(text, j + 1, end)
            if step is None:
                raise Unsupported(f"the reference {text[i:end].strip()!r}")
            steps.append(step.group())
            j = step.end()
        if j < end and text[j] == "[":
            raise Unsupported(f"an index in the reference {text[i:end].strip()!r}")
        return self.reference(steps, locate(i, j)), j

    def collection(self, text: str, i: int, end: int, locate: Locate, close: str) -> tuple[Value, int]:
        """A tuple (``[a, b]``) or an object (``{k = v}``, ``{"k": v}``) of values this evaluator reads."""
        items: list[Value] = []
        entries: dict[str, Value] = {}
        i = _space(text, i, end)
        while i < end and text[i] != close:
            if close == "]":
                value, i = self.term(text, i, end, locate)
                items.append(value)
            else:
                name = _NAME.match(text, i, end)
                if name is not None:
                    key, i = name.group(), name.end()
                else:
                    key_value, i = self.term(text, i, end, locate)
                    key_text = as_string(key_value.value)
                    if key_text is None:
                        raise Unsupported("an object key that is not a string")
                    key = key_text
                i = _space(text, i, end)
                if i >= end or text[i] not in "=:":
                    raise Unsupported(f"the expression {text[i:end].strip()!r}")
                value, i = self.term(text, _space(text, i + 1, end), end, locate)
                entries[key] = value
            i = _space(text, i, end)
            if i < end and text[i] in ",\n":
                i = _space(text, i + 1, end)
        if i >= end:
            raise Unsupported(f"an unterminated {'tuple' if close == ']' else 'object'}")
        if close == "]":
            return _combine([v.value for v in items], items), i + 1
        return _combine({k: v.value for k, v in entries.items()}, list(entries.values())), i + 1

    def quoted(self, text: str, start: int, end: int, locate: Locate) -> Value:
        try:
            parts = quoted_parts(text, start, end)
        except TemplateError as exc:
            raise Unsupported(exc.summary.lower()) from None
        pieces: list[Value] = []
        for part in parts:
            if isinstance(part, Literal):
                pieces.append(Value(part.value))
            elif part.is_directive or part.trim_before or part.trim_after:
                raise Unsupported("a template directive or strip marker")
            else:
                pieces.append(self.expression(text, part.start + 2, part.start + len(part.text) - 1, locate))
        strings = [as_string(p.value) for p in pieces]
        if any(s is None for s in strings):
            raise Unsupported("a template that interpolates a value other than a string, number or bool")
        return _combine("".join(s for s in strings if s is not None), pieces)

    def function(self, name: str, text: str, i: int, end: int, locate: Locate, at: int) -> tuple[Value, int]:
        args: list[Value] = []
        i = _space(text, i, end)
        while i < end and text[i] != ")":
            value, i = self.term(text, i, end, locate)
            args.append(value)
            i = _space(text, i, end)
            if i < end and text[i] == ",":
                i = _space(text, i + 1, end)
        if i >= end or len(args) != 1:
            raise Unsupported(f"the function call {text[at:end].strip()!r}")
        (arg,) = args
        if name == "sensitive":
            return Value(arg.value, True, arg.ephemeral), i + 1
        if name == "nonsensitive":
            return Value(arg.value, False, arg.ephemeral), i + 1
        if name == "length":
            # Terraform's length: elements of a collection or structure; a string's grapheme
            # clusters, which are its characters only for ASCII text without "\r\n" (one cluster).
            whole = arg.value
            text_length = isinstance(whole, str) and whole.isascii() and "\r\n" not in whole
            if isinstance(whole, (list, dict)) or text_length:
                assert isinstance(whole, (list, dict, str))
                return Value(len(whole), arg.sensitive, arg.ephemeral), i + 1
            raise Unsupported(f"the function call {text[at : i + 1].strip()!r}")
        convert = _STRING_FUNCTIONS.get(name)
        string = as_string(arg.value)
        if convert is None or string is None:
            raise Unsupported(f"the function call {text[at : i + 1].strip()!r}")
        return Value(convert(string), arg.sensitive, arg.ephemeral), i + 1

    # -- references ----------------------------------------------------------------------------
    def reference(self, steps: list[str], rng: Range) -> Value:
        root = steps[0]
        top = self.stack[-1]
        if len(steps) < 2:
            self.diags.error(
                "Invalid reference",
                "A reference to a resource type must be followed by at least one attribute access, "
                "specifying the resource name.",
                rng,
            )
            raise Failed
        if root == "var":
            return self.variable(steps[1], rng, len(steps) > 2)
        if root == "local":
            return self.local(steps[1], rng, len(steps) > 2)
        if root == "path":
            return self.path_attr(steps[1], rng)
        if root == "terraform":
            return self.terraform_attr(steps[1], rng)
        subject = ".".join(steps[: _SUBJECT_STEPS.get(root, 2)])
        output = root == "module" and len(steps) > 2
        summary = (
            "Module output not supported in static context" if output else "Dynamic value in static context"
        )
        self.diags.error(
            summary, f"Unable to use {subject} in static context, which is required by {top}", rng
        )
        raise Failed

    def variable(self, name: str, rng: Range, attribute: bool) -> Value:
        decl = next((b for b in self.module.blocks_of("variable") if b.labels[:1] == (name,)), None)
        if decl is None:
            self.diags.error("Undefined variable", f"Undefined variable var.{name}", rng)
            raise Failed
        if attribute:
            raise Unsupported(f"an attribute of var.{name}")
        ident = Ident(self.address, f"var.{name}", decl.range)
        value = self.enhanced(ident, lambda: self.variable_value(name, decl))
        flags = {
            a.name: a.value is True for a in decl.body.attributes if a.name in ("sensitive", "ephemeral")
        }
        return value.marked(Value(None, flags.get("sensitive", False), flags.get("ephemeral", False)))

    def variable_value(self, name: str, decl: Block) -> Value:
        arg = self.call.body.attribute(name) if self.call is not None else None
        if arg is not None and self.caller is not None:
            try:
                return self.caller.evaluate(arg, Ident(self.address, f"var.{name}", arg.expr.range))
            finally:
                # The argument is evaluated in the caller's context; its diagnostics are ours.
                self.diags.extend(self.caller.diags)
                self.caller.diags.clear()
        secret = any(a.name in ("sensitive", "ephemeral") and a.value is True for a in decl.body.attributes)
        if self.call is None and name in self.inputs:
            # rootModuleCall: a value from the command line, a file or the environment, as parsed
            # (not converted to the variable's type).
            value, source = self.inputs[name]
            self.chosen[name] = (value, source, secret)
            return Value(value)
        default = decl.body.attribute("default")
        if default is not None:
            if self.call is None:
                self.chosen[name] = (default.value, "default", secret)
            return Value(default.value)  # a default is a literal (spec §7.3)
        if self.call is not None:
            self.diags.error(
                "Missing required variable in module call",
                f'The module call does not set the required variable "{name}", which this module\'s '
                "source or version depends on.",
                self.call.range,
            )
        else:
            # meta_config.go's rootModuleCall, with input disabled: no value and no default.
            self.diags.error(
                f"Failed to request input from user for variable var.{name}",
                "A module source, version or the backend depends on this root module variable, and "
                "it has no value: set it with --var, --var-file, terraform.tfvars, a *.auto.tfvars "
                f"file or the TF_VAR_{name} environment variable, as for tofu init.",
                decl.range,
            )
        raise Failed

    def local(self, name: str, rng: Range, attribute: bool) -> Value:
        attr = next(
            (a for b in self.module.blocks_of("locals") for a in b.body.attributes if a.name == name), None
        )
        if attr is None:
            self.diags.error("Undefined local", f"Undefined local local.{name}", rng)
            raise Failed
        if attribute:
            raise Unsupported(f"an attribute of local.{name}")
        decl = Range(attr.name_range.filename, attr.name_range.start, attr.expr.range.end)
        ident = Ident(self.address, f"local.{name}", decl)
        return self.enhanced(ident, lambda: self.evaluate(attr, ident))

    def enhanced(self, ident: Ident, compute: Callable[[], Value]) -> Value:
        """OpenTofu's ``enhanceDiagnostics``: say which value a failed dependency was needed by."""
        try:
            return compute()
        except Failed:
            top = self.stack[-1]
            self.diags.error(
                "Unable to compute static value",
                f"{top} depends on {ident} which is not available",
                top.range,
            )
            raise

    def path_attr(self, name: str, rng: Range) -> Value:
        if name == "module":
            return Value(self.directory)
        if name == "root":
            return Value(".")
        if name == "cwd":
            raise Unsupported("path.cwd, which depends on where flatten runs")
        self.diags.error(
            'Invalid "path" attribute',
            f'The "path" object does not have an attribute named "{name}".',
            rng,
        )
        raise Failed

    def terraform_attr(self, name: str, rng: Range) -> Value:
        if name == "workspace":
            return Value("default")  # flatten builds outside any workspace: OpenTofu's default one
        detail = (
            'The terraform.env attribute was deprecated in v0.10 and removed in v0.12. The "state '
            'environment" concept was renamed to "workspace" in v0.12, and so the workspace name can now '
            "be accessed using the terraform.workspace attribute."
            if name == "env"
            else f'The "terraform" object does not have an attribute named "{name}". The only supported '
            "attribute is terraform.workspace, the name of the currently-selected workspace."
        )
        self.diags.error('Invalid "terraform" attribute', detail, rng)
        raise Failed


def _space(text: str, i: int, end: int) -> int:
    while i < end and text[i] in " \t\r\n":
        i += 1
    return i


class _Constant(Scope):
    """Evaluation with no context at all, as Terraform's ``expr.Value(nil)`` of a variable default.

    Literals, parentheses, tuples and templates (with their directives) evaluate; a name is known
    only while a ``%{ for }`` directive binds it; any other reference or a function call is not a
    constant (``Unsupported``).
    """

    def __init__(self) -> None:
        super().__init__(Module("."))
        self.bound: dict[str, Value] = {}

    def term(self, text: str, i: int, end: int, locate: Locate) -> tuple[Value, int]:
        if i < end and text[i] == "[":
            items: list[Value] = []
            j = _space(text, i + 1, end)
            while j < end and text[j] != "]":
                item, j = self.term(text, j, end, locate)
                items.append(item)
                j = _space(text, j, end)
                if j < end and text[j] == ",":
                    j = _space(text, j + 1, end)
            if j >= end:
                raise Unsupported("an unterminated tuple")
            return _combine([v.value for v in items], items), j + 1
        return super().term(text, i, end, locate)

    def function(self, name: str, text: str, i: int, end: int, locate: Locate, at: int) -> tuple[Value, int]:
        raise Unsupported("a function call")

    def reference(self, steps: list[str], rng: Range) -> Value:
        if len(steps) == 1 and steps[0] in self.bound:
            return self.bound[steps[0]]
        raise Unsupported("a reference")


def constant_expression(source: str) -> JsonValue:
    """Return the value of bare expression source that needs no context: literals, tuples,
    objects and templates of them, as ``constant_template`` reads a default. Raise
    ``Unsupported`` for anything else (a reference, a function call).

    >>> constant_expression('{a = "x", "b" = [1, true]}')
    {'a': 'x', 'b': [1, True]}
    """
    value = _Constant().expression(source, 0, len(source), lambda _s, _e: Range.point("-"))
    if value.sensitive or value.ephemeral:  # pragma: no cover - no function marks a constant
        raise Unsupported("a marked value")
    return value.value


_FOR = re.compile(r"for\s+([^\W\d][\w-]*)(?:\s*,\s*([^\W\d][\w-]*))?\s+in\s+(.*)\Z", re.DOTALL)


def constant_template(parts: Sequence[Part]) -> str | None:
    """Return the value of a template whose every interpolation and directive is constant, else None.

    This is HCL's template evaluation (hclsyntax ``TemplateExpr``, ``TemplateIfExpr`` and
    ``TemplateForExpr`` in hashicorp/hcl's ``hclsyntax/expression_template.go``) with no
    variables and no functions, as Terraform evaluates a variable's ``default``
    (``internal/configs/named_values.go``: ``attr.Expr.Value(nil)``): ``"%{ if true }yes%{ endif
    }"`` is ``"yes"``. Strip markers (``~``) trim the neighbouring literal's whitespace first.
    """
    values = _apply_strip(list(parts))
    evaluator = _Constant()
    try:
        out, k = _run(parts, values, 0, evaluator, ())
    except (Unsupported, Failed):
        return None
    return out if k == len(parts) else None


def _inner(seq: Sequence_) -> tuple[int, int]:
    """The span of a sequence's expression or directive words inside ``seq.text``."""
    start = 3 if seq.trim_before else 2
    end = len(seq.text) - (2 if seq.trim_after else 1)
    return start, end


def _run(
    parts: Sequence[Part], values: list[str], k: int, ev: _Constant, stop: tuple[str, ...]
) -> tuple[str, int]:
    """Evaluate ``parts[k:]`` up to a directive whose keyword is in ``stop``; return text and index."""
    out: list[str] = []
    locate: Locate = lambda _s, _e: Range.point("<template>")  # noqa: E731
    while k < len(parts):
        part = parts[k]
        if isinstance(part, Literal):
            out.append(values[k])
            k += 1
            continue
        start, end = _inner(part)
        if not part.is_directive:
            text = as_string(ev.expression(part.text, start, end, locate).value)
            if text is None:
                raise Unsupported("an interpolation of a value that is not a string")
            out.append(text)
            k += 1
            continue
        words = part.text[start:end].strip()
        keyword = words.split(None, 1)[0] if words else ""
        if keyword in stop:
            return "".join(out), k
        if keyword == "if":
            cond = as_bool(ev.expression(part.text, part.text.index("if", start) + 2, end, locate).value)
            if cond is None:
                raise Unsupported("a condition that is not a bool")
            then, k = _run(parts, values, k + 1, ev, ("else", "endif"))
            other = ""
            if k < len(parts) and _keyword(parts[k]) == "else":
                other, k = _run(parts, values, k + 1, ev, ("endif",))
            if k >= len(parts) or _keyword(parts[k]) != "endif":
                raise Unsupported("an unclosed if directive")
            out.append(then if cond else other)
            k += 1
            continue
        if keyword == "for":
            m = _FOR.match(words)
            if m is None:
                raise Unsupported("a for directive")
            key_name, value_name = (m.group(1), m.group(2)) if m.group(2) else (None, m.group(1))
            collection = ev.expression(m.group(3), 0, len(m.group(3)), locate).value
            items = (
                list(enumerate(collection))
                if isinstance(collection, list)
                else sorted(collection.items())
                if isinstance(collection, dict)
                else None
            )
            if items is None:
                raise Unsupported("a for directive over a value that is not a collection")
            body_end = k + 1
            saved = dict(ev.bound)
            if not items:
                _, body_end = _run(parts, values, k + 1, _Skip(), ("endfor",))
            for key, item in items:
                if key_name is not None:
                    ev.bound[key_name] = Value(key)
                ev.bound[value_name] = Value(item)
                text, body_end = _run(parts, values, k + 1, ev, ("endfor",))
                out.append(text)
            ev.bound = saved
            if body_end >= len(parts) or _keyword(parts[body_end]) != "endfor":
                raise Unsupported("an unclosed for directive")
            k = body_end + 1
            continue
        raise Unsupported(f"the directive {keyword!r}")
    if stop:
        raise Unsupported("an unclosed directive")
    return "".join(out), k


class _Skip(_Constant):
    """Walks a body that never runs (a ``for`` over an empty collection) to find its end."""

    def expression(self, text: str, start: int, end: int, locate: Locate) -> Value:
        return Value("")


def _keyword(part: Part) -> str:
    if not isinstance(part, Sequence_) or not part.is_directive:
        return ""
    start, end = _inner(part)
    words = part.text[start:end].split(None, 1)
    return words[0] if words else ""
