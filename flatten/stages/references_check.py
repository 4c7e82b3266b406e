"""What ``validate`` finds without a provider schema: references, module call arguments, input types.

Rule for the whole file: these are the errors Terraform's and OpenTofu's ``validate`` walk reports
on a configuration that loaded and whose graph built (docs/providers.md, "What validate finds
without a provider schema"). Both engines share the code behind each rule (the OpenTofu file is
the same path under ``internal/tofu``), so one rule serves both dialects:

* ``evaluate_valid.go``, ``staticValidateReference``: a reference to an undeclared module call
  ("Reference to undeclared module"), managed or data resource ("Reference to undeclared
  resource"). When an expression has such an error its evaluation is skipped, so its other
  references are not checked (the caller evaluates only after static validation passes).
* ``evaluate.go``, ``GetInputVariable``/``GetLocalValue``/``GetModule``: an undeclared variable
  or local value, and an output a called module does not declare ("Unsupported attribute", HCL's
  wording for the object of the call's outputs; a call with ``count`` is a list of them).
* ``eval_count.go``/``eval_for_each.go`` on a module call's ``count``/``for_each`` whose value is
  a constant (``lang/eval.go``'s "Incorrect value type" when it does not convert to a number).
* ``node_resource_validate.go``, ``validateDependsOn`` (module calls use it too): a ``depends_on``
  item that is an attribute of an object, else a reference to nothing; checking stops at the
  first error.
* ``eval_variable.go``, ``prepareFinalInputVariableValue``: a module input whose value is a
  constant, or a variable of a declared type, that cannot convert to the input's declared type.

A reference is found by the one reference scanner (``syntax/references.py``) and a constant by the
one static evaluator (``syntax/evaluate.py``). Nothing Terraform accepts is flagged: ``count``,
``each``, ``self``, ``path``, ``terraform``, ``tofu``, ``ephemeral``, ``action``, ``list`` and
``run`` references are never checked, ``dynamic`` iterator names are bound in their block, data
sources declared in ``check`` blocks count as declared, and ``moved``, ``import`` and ``removed``
blocks (addresses, not expressions to evaluate) are not read.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

from flatten.lang.diagnostics import Diagnostic, Diagnostics
from flatten.lang.dialect import Dialect
from flatten.lang.didyoumean import levenshtein, name_suggestion
from flatten.lang.functions import REMOVED, FunctionTable, function_table
from flatten.lang.model import Attribute, Block, JsonValue, Module, Range, json_strings
from flatten.lang.terraform_releases import NEWEST
from flatten.lang.types import (
    AnyType,
    ConversionError,
    ListType,
    MapType,
    ObjectType,
    Primitive,
    SetType,
    TupleType,
    Type,
    TypeExprError,
    convert,
    parse_type,
    type_string,
)
from flatten.stages.decode import range_within
from flatten.stages.expressions import BlockExpressions, Expression, block_expressions
from flatten.stages.graph import ModuleGraph, ModuleNode
from flatten.stages.text_facts import TextFacts
from flatten.syntax.dynamic import dynamic_iterators
from flatten.syntax.evaluate import Failed, Ident, Scope, Unsupported, locator
from flatten.syntax.references import Call, ExpressionError, Reference, Scans

__all__ = ["ReferenceChecks", "call_outputs", "check_references"]

# Roots that are not checked here: bound by the evaluation context, or objects whose
# declarations this stage does not track (ephemeral resources, actions, list resources, run blocks).
_UNCHECKED_ROOTS = frozenset(
    {"count", "each", "self", "path", "terraform", "tofu", "ephemeral", "action", "list", "run", "resource"}
)
# Blocks that hold addresses rather than expressions, or nothing validate evaluates.
_SKIPPED_BLOCKS = frozenset({"moved", "import", "removed", "terraform", "language", "action", "list"})
# Arguments of a resource-like block that are not expressions evaluated for references.
_RESOURCE_META = frozenset({"provider", "depends_on", "count", "for_each"})
_CALL_META = frozenset({"source", "version", "providers", "count", "for_each", "depends_on", "enabled"})
_INT64 = (-(2**63), 2**63 - 1)
_CLEAN_KEPT = 4096  # clean texts a module's checks remember (``_Checker._clean``)
_CONVERT = frozenset({"convert", "core::convert"})


@dataclass(frozen=True, slots=True)
class _Declared:
    """What one module declares, as the checks look names up."""

    variables: dict[str, Block]
    locals: Mapping[str, None]  # in declaration order (suggestions follow it)
    calls: dict[str, Block]
    managed: frozenset[tuple[str, str]]
    data: frozenset[tuple[str, str]]
    outputs: dict[str, frozenset[str] | None]  # call name -> its module's outputs (None: unknown)
    provider_names: frozenset[str]  # required_providers local names (provider-defined functions)


def call_outputs(node: ModuleNode, graph: ModuleGraph) -> dict[str, frozenset[str] | None]:
    """The output names of the module each call of ``node`` calls, by call name (None: no module
    was loaded for it): all a module's checks read of its children."""
    children = {child.path[-1]: child.module for child in graph.children(node.address)}
    outputs: dict[str, frozenset[str] | None] = {}
    for block in node.module.blocks_of("module"):
        if block.labels:
            child = children.get(block.labels[0])
            outputs[block.labels[0]] = (
                frozenset(b.labels[0] for b in child.blocks_of("output") if b.labels)
                if child is not None
                else None
            )
    return outputs


def _declared(node: ModuleNode, graph: ModuleGraph) -> _Declared:
    module = node.module
    data = {(b.labels[0], b.labels[1]) for b in module.blocks_of("data") if len(b.labels) >= 2}
    for check in module.blocks_of("check"):
        nested = check.body.peek().blocks_of("data")
        data.update((b.labels[0], b.labels[1]) for b in nested if len(b.labels) >= 2)
    calls = {b.labels[0]: b for b in module.blocks_of("module") if b.labels}
    outputs = call_outputs(node, graph)
    return _Declared(
        variables={b.labels[0]: b for b in module.blocks_of("variable") if b.labels},
        locals=dict.fromkeys(a.name for b in module.blocks_of("locals") for a in b.body.peek().attributes),
        calls=calls,
        managed=frozenset(
            (b.labels[0], b.labels[1]) for b in module.blocks_of("resource") if len(b.labels) >= 2
        ),
        data=frozenset(data),
        outputs=outputs,
        provider_names=frozenset(
            a.name
            for b in module.blocks_of("terraform")
            for r in b.body.peek().blocks_of("required_providers")
            for a in r.body.attributes
        ),
    )


def _closest(given: str, names: Iterable[str]) -> str:
    """``NameSuggestion`` over names Go's map holds in no likely order (the ~120 functions): the
    nearest name, the first by name among equals (flatten's choice of Terraform's outcomes)."""
    return name_suggestion(given, sorted(names, key=lambda n: (levenshtein(given, n), n)))


# The names a type expression is made of: convert()'s second argument is one (Terraform 1.15).
_TYPE_KEYWORDS = frozenset({"string", "number", "bool", "any"})
_TYPE_CONSTRUCTORS = frozenset({"list", "map", "set", "object", "tuple", "optional"})

# A reference or call, the range of the value holding it, and the value's text when the value is
# that one string (its offsets map to source positions: syntax/evaluate.py ``locator``).
_Located = tuple[Reference, Range, "str | None"]
_LocatedCall = tuple[Call, Range, "str | None"]


def _type_arguments(
    refs: list[_Located], calls: list[_LocatedCall], table: FunctionTable | None
) -> tuple[list[_Located], list[_LocatedCall]]:
    """Leave out what a ``convert`` call's type argument holds (``list(string)`` is a type, not a
    call of ``list`` and a reference to ``string``) where the release has ``convert``: type
    keywords and type constructors after the call's name, in the same string."""
    if table is None or "convert" not in table.names:
        return refs, calls
    starts = [(c.start, rng) for c, rng, _ in calls if c.name in ("convert", "core::convert")]
    if not starts:
        return refs, calls

    def inside(start: int, rng: Range) -> bool:
        return any(start > s and rng == r for s, r in starts)

    refs = [
        r for r in refs if not (not r[0].steps and r[0].root in _TYPE_KEYWORDS and inside(r[0].start, r[1]))
    ]
    calls = [c for c in calls if not (c[0].name in _TYPE_CONSTRUCTORS and inside(c[0].start, c[1]))]
    return refs, calls


def _call_range(call: Call, rng: Range, located: str | None, end: int) -> Range:
    """The range of ``call`` from its name to ``end`` (the whole value when unsure)."""
    return locator(located, rng)(call.start, end) if located is not None else rng


def _where(module: str) -> str:
    return module or "the root module"


class _Checker:
    """The checks of one module; ``module`` is its address ("" for the root)."""

    def __init__(
        self,
        node: ModuleNode,
        graph: ModuleGraph,
        *,
        objects: bool = True,
        functions: FunctionTable | None = None,
        scans: Scans | None = None,
        facts: TextFacts | None = None,
    ) -> None:
        self.node = node
        self.scans = scans if scans is not None else Scans(record=node.module.scans)
        self.functions = functions  # None: function calls are not checked
        # Whether var, local, resource and data references are checked outside a module call's
        # depends_on (the dialect's "object_reference_checks").
        self.objects = objects
        self.address = node.address
        self.declared = _declared(node, graph)
        self.diags = Diagnostics()
        # The function calls of the current evaluation, each with where its text is.
        self._calls: list[_LocatedCall] = []
        # Texts (with the names bound where they were read) that an evaluation of this module
        # found nothing to report in: the same text evaluated again reports nothing either, since
        # what it is checked against (the module's declarations, its calls, the function table)
        # is the module's; a module's blocks repeat their expressions, so most are asked again.
        # Remembered by the text's shape (``_shape``: its references' roots and steps, its calls'
        # names), not the text: what the checks find is a function of that shape (positions only
        # place an error), so a resource whose texts differ from another's only by literal text
        # (``"${var.name}-web-3"``, ``-web-4``) is checked once per module (issue 41).
        # Each shape is kept as a number, each text's by the text (``TextFacts``, shared with the
        # checks of other modules): a clean text is asked for by a small key, not a tuple of
        # tuples hashed again on every ask.
        self._clean: set[tuple[int, frozenset[str], tuple[bool, bool] | None]] = set()
        self._facts = facts if facts is not None else TextFacts()
        self._shapes = self._facts.shapes
        # Whether the block being checked sets ``count`` and ``for_each`` (the instance key data
        # its expressions are evaluated with); None: ``count``/``each`` are not checked there.
        self.instance: tuple[bool, bool] | None = None
        # Where a JSON template HCL cannot parse is (ModuleNode.evaluated): its value is not
        # evaluated further, so its references are not checked.
        self.unparsed = tuple(d.range for d in node.evaluated if d.range is not None)

    def error(self, summary: str, detail: str, rng: Range) -> None:
        self.diags.append(Diagnostic.error(summary, detail, rng, self.address))

    # -- one expression: static validation, then (if that passed) evaluation -----------------
    def references(
        self, texts: list[str], rng: Range, located: str | None, bound: frozenset[str]
    ) -> list[_Located]:
        """Every reference in ``texts`` (a value's templates, ``_value_texts``) with the range of
        the value holding them (``located``: the value's text when it is one string); unreadable
        text gives none (its syntax error is reported where it is parsed). Where a reference is
        in the source is worked out only for an error (``span``)."""
        found: list[_Located] = []
        for text in texts:
            try:
                refs, calls = self.scans.calls(text, bound)
            except ExpressionError:
                continue
            found.extend((ref, rng, located) for ref in refs)
            self._calls.extend((call, rng, located) for call in calls)
        return found

    def span(self, ref: Reference, rng: Range, located: str | None, upto: int) -> Range:
        """The range of ``ref`` from its root through step ``upto`` (the whole value when unsure)."""
        if located is None:
            return rng
        return locator(located, rng)(ref.start, ref.ends[min(upto, len(ref.ends) - 1)])

    def step_span(self, ref: Reference, rng: Range, located: str | None, k: int) -> Range:
        """The range of step ``k`` alone (HCL's traversal step range)."""
        if located is None or k >= len(ref.ends):
            return rng
        return locator(located, rng)(ref.ends[k - 1], ref.ends[k])

    def static(self, ref: Reference, rng: Range, located: str | None) -> bool:
        """``staticValidateReference``: report an undeclared module call or resource; False if so."""
        d = self.declared
        root = ref.root
        if root in ("count", "each"):
            return self.repetition_name(ref, rng, located)
        if root == "module":
            name = ref.name(1)
            if name is None or name in d.calls:
                return True
            # staticValidateModuleCallReference sorts the call names (evaluate_valid.go).
            hint = name_suggestion(name, sorted(d.calls))
            suffix = f' Did you mean "{hint}"?' if hint else ""
            # ParseRef: module.NAME, module.NAME[KEY], then an output name (all in the range).
            indexed = len(ref.steps) > 1 and ref.steps[1][0] == "index"
            upto = 1 + indexed + (ref.name(2 + indexed) is not None)
            self.error(
                "Reference to undeclared module",
                f'No module call named "{name}" is declared in {_where(self.address)}.{suffix}',
                self.span(ref, rng, located, upto),
            )
            return False
        if root in _UNCHECKED_ROOTS or root in ("var", "local"):
            return True
        if root == "data":
            type_, name = ref.name(1), ref.name(2)
            if type_ is None or name is None or ref.steps[0][0] != "attr" or ref.steps[1][0] != "attr":
                return True
            if (type_, name) in d.data:
                return True
            upto = 3 if len(ref.steps) > 2 and ref.steps[2][0] == "index" else 2
            self.error(
                "Reference to undeclared resource",
                f'A data resource "{type_}" "{name}" has not been declared in {_where(self.address)}.',
                self.span(ref, rng, located, upto),
            )
            return False
        if not ref.steps and self._type_names() and root in _TYPE_KEYWORDS:
            return True  # 1.15 parses a type keyword as no reference: evaluation finds no variable
        if not ref.steps:
            # ParseRef: any other root is a resource type, which needs its resource's name.
            self.error(
                "Invalid reference",
                "A reference to a resource type must be followed by at least one attribute access, "
                "specifying the resource name.",
                self.span(ref, rng, located, 0),
            )
            return False
        name = ref.name(1)
        if name is None or ref.steps[0][0] != "attr":
            return True
        if (root, name) in d.managed:
            return True
        hint = ""
        if (root, name) in d.data:
            hint = f"\n\nDid you mean the data resource data.{root}.{name}?"
        upto = 2 if len(ref.steps) > 1 and ref.steps[1][0] == "index" else 1
        self.error(
            "Reference to undeclared resource",
            f'A managed resource "{root}" "{name}" has not been declared in {_where(self.address)}.{hint}',
            self.span(ref, rng, located, upto),
        )
        return False

    def _type_names(self) -> bool:
        """Whether type keywords are names of their own (Terraform 1.15, which has ``convert``)."""
        return self.functions is not None and "convert" in self.functions.names

    def repetition_name(self, ref: Reference, rng: Range, located: str | None) -> bool:
        """addrs.ParseRef (terraform internal/addrs/parse_ref.go): ``count.`` takes only
        ``index``, ``each.`` only ``key`` and ``value``; False after reporting another name."""
        name = ref.name(1)
        if name is None or name in (("index",) if ref.root == "count" else ("key", "value")):
            return True
        if ref.root == "count":
            detail = (
                f'The "count" object does not have an attribute named "{name}". The only supported '
                "attribute is count.index, which is the index of each instance of a resource block "
                'that has the "count" argument set.'
            )
        else:
            detail = (
                f'The "each" object does not have an attribute named "{name}". The supported '
                "attributes are each.key and each.value, the current key and value pair of the "
                '"for_each" attribute set.'
            )
        self.error(f'Invalid "{ref.root}" attribute', detail, self.span(ref, rng, located, 1))
        return False

    def repetition(self, ref: Reference, rng: Range, located: str | None) -> None:
        """The instance key data an expression is evaluated with (terraform
        internal/terraform/evaluate.go, ``GetCountAttr``/``GetForEachAttr``): ``count.index``
        needs a block that sets ``count``, ``each.key``/``each.value`` one that sets ``for_each``
        (validate evaluates a block's body once, with unknown keys when it repeats)."""
        if self.instance is None:
            return
        counted, each = self.instance
        if counted if ref.root == "count" else each:
            return  # the block has the instance key data (most references to count or each)
        name = ref.name(1)
        # Where the reference is in the source is worked out only for an error.
        if ref.root == "count" and name == "index":
            self.error(
                'Reference to "count" in non-counted context',
                'The "count" object can only be used in "module", "resource", and "data" blocks, and '
                'only when the "count" argument is set.',
                self.span(ref, rng, located, 1),
            )
        elif ref.root == "each" and name == "value":
            self.error(
                "each.value cannot be used in this context",
                'A reference to "each.value" has been used in a context in which it is unavailable, '
                'such as when the configuration no longer contains the value in its "for_each" '
                "expression. Remove this reference to each.value in your configuration to work "
                "around this error.",
                self.span(ref, rng, located, 1),
            )
        elif ref.root == "each" and name == "key":
            self.error(
                'Reference to "each" in context without for_each',
                'The "each" object can be used only in "module" or "resource" blocks, and only when '
                'the "for_each" argument is set.',
                self.span(ref, rng, located, 1),
            )

    def evaluated(self, ref: Reference, rng: Range, located: str | None) -> None:
        """The evaluator's errors: undeclared variables and locals, outputs a call lacks, count
        and each outside a block that repeats."""
        d = self.declared
        if ref.root in ("count", "each"):
            self.repetition(ref, rng, located)
            return
        if not ref.steps and ref.root in _TYPE_KEYWORDS and self._type_names():
            self.error(
                "Unknown variable",
                f'There is no variable named "{ref.root}".',
                self.span(ref, rng, located, 0),
            )
            return
        if ref.root == "var":
            name = ref.name(1)
            if name is None or name in d.variables:
                return
            # GetInputVariable: Go's map order, most likely declaration order (one bucket: 7 of 8).
            hint = name_suggestion(name, d.variables)
            suffix = (
                f' Did you mean "{hint}"?'
                if hint
                else f' This variable can be declared with a variable "{name}" {{}} block.'
            )
            self.error(
                "Reference to undeclared input variable",
                f'An input variable with the name "{name}" has not been declared.{suffix}',
                self.span(ref, rng, located, 1),
            )
        elif ref.root == "local":
            name = ref.name(1)
            if name is None or name in d.locals:
                return
            hint = name_suggestion(name, d.locals)  # GetLocalValue: as for variables
            suffix = f' Did you mean "{hint}"?' if hint else ""
            self.error(
                "Reference to undeclared local value",
                f'A local value with the name "{name}" has not been declared.{suffix}',
                self.span(ref, rng, located, 1),
            )
        elif ref.root == "module":
            self.module_output(ref, rng, located)

    def module_output(self, ref: Reference, rng: Range, located: str | None) -> None:
        name = ref.name(1)
        call = self.declared.calls.get(name or "")
        outputs = self.declared.outputs.get(name or "")
        if name is None or call is None or outputs is None or len(ref.steps) < 2:
            return
        body = call.body
        if body.attribute("for_each") is not None or body.attribute("enabled") is not None:
            return  # a map of objects, or an object that may be null: not checked
        count = body.attribute("count")
        counted = count is not None
        if count is not None:
            # A list of objects only once its count is known and valid; otherwise the count's
            # own error (or an unknown value) is all Terraform reports.
            value = _constant(self.node.module, count, self.address)
            if isinstance(value, Unsupported) or _count_detail(value) is not None:
                return
        k = 2
        if ref.steps[1][0] == "index":
            if not counted:
                return  # "Invalid index" territory: left to the engine
            k = 3
        elif counted:
            # hcl's GetAttr on a list names the attribute (terraform 1.11.4 and 1.15.5 alike).
            named = f'attribute "{ref.name(2)}"' if ref.name(2) is not None else "an attribute"
            self.error(
                "Unsupported attribute",
                f"Can't access attributes on a list of objects. Did you mean to access {named} for a "
                "specific element of the list, or across all elements of the list?",
                self.step_span(ref, rng, located, 2),
            )
            return
        output = ref.name(k)
        if output is None or ref.steps[k - 1][0] != "attr" or output in outputs:
            return
        self.error(
            "Unsupported attribute",
            f'This object does not have an attribute named "{output}".',
            self.step_span(ref, rng, located, k),
        )

    def unit(self, listed: Iterable[Expression], bound: frozenset[str] = frozenset()) -> None:
        """One evaluation (an expression, or a block body evaluated at once) of the values of
        ``listed`` (attributes of the block's list, with their templates: stages/expressions.py).

        A text this module's checks found clean before (``_clean``) is not read again: its
        references pass static validation and evaluate without error whatever else the
        evaluation holds, so leaving them out changes nothing reported (a ``convert`` call, whose
        type argument hides references of other texts, keeps an evaluation's texts unremembered).
        """
        clean = self._clean
        shapes = self._shapes  # asked here first: most texts of a module were met before
        # A text's count/each references are judged by the block's instance data: remembered
        # clean for that data only.
        instance = self.instance
        values: list[tuple[list[str], Range, str | None]] = []
        for e in listed:
            if not e.texts:
                continue  # nothing in it can refer to anything
            attr = e.attr
            if self.unparsed and any(range_within(r, attr.expr.range) for r in self.unparsed):
                continue
            value = attr.value
            texts = []
            for text in e.texts:
                shape = shapes.get(text)
                if shape is None:
                    shape = self._shape(text)
                if (shape, bound, instance) not in clean:
                    texts.append(text)
            if texts:
                values.append((texts, attr.expr.range, value if isinstance(value, str) else None))
        if not values:
            return
        self._calls = []
        refs = [r for texts, rng, located in values for r in self.references(texts, rng, located, bound)]
        remember = not any(call.name in _CONVERT for call, _, _ in self._calls)
        if not self.objects:
            refs = [r for r in refs if r[0].root == "module"]
        refs, self._calls = _type_arguments(refs, self._calls, self.functions)
        before = len(self.diags)
        ok = True
        for ref, rng, located in refs:
            ok = self.static(ref, rng, located) and ok
        if ok:
            for ref, rng, located in refs:
                self.evaluated(ref, rng, located)
            if self.functions is not None:
                for call, rng, located in self._calls:
                    self.function(call, rng, located, self.functions)
        if remember and len(self.diags) == before:
            if len(clean) >= _CLEAN_KEPT:
                clean.clear()  # a bound on what a module of one large file keeps
            clean.update((self._shape(text), bound, instance) for texts, _, _ in values for text in texts)

    def _shape(self, text: str) -> int:
        """The number of what the checks of ``text`` depend on: its references' roots and steps
        and its calls' names in order (the text itself when it is unreadable)."""
        number = self._shapes.get(text)
        if number is None:
            shape: Hashable
            try:
                refs, calls = self.scans.calls(text)
            except ExpressionError:
                shape = text
            else:
                shape = (tuple([(r.root, r.steps) for r in refs]), tuple([c.name for c in calls]))
            facts = self._facts
            if len(self._shapes) >= _CLEAN_KEPT or len(facts.shape_numbers) >= _CLEAN_KEPT:
                facts.forget_shapes()  # a bound on what a module of one large file keeps
            number = facts.shape_number(shape)
            self._shapes[text] = number
        return number

    def function(self, call: Call, rng: Range, located: str | None, table: FunctionTable) -> None:
        """HCL's function lookup as Terraform configures it (``FunctionCallExpr.Value``; Terraform's
        ``lang/functions.go``): an unknown name, a removed one, an unknown namespace or provider."""
        name = call.name
        if "::" not in name:
            if name not in table.names:
                hint = _closest(name, (n for n in table.names if n not in REMOVED))
                suffix = f' Did you mean "{hint}"?' if hint else ""
                at = _call_range(call, rng, located, call.end)
                self.error("Call to unknown function", f'There is no function named "{name}".{suffix}', at)
            elif name in REMOVED:
                where = _call_range(call, rng, located, call.paren + 1)
                self.error(
                    "Error in function call", f'Call to function "{name}" failed: {REMOVED[name]}', where
                )
            return
        # Where the call is in the source is worked out only for an error (most calls have none).
        at = _call_range(call, rng, located, call.end)
        if not table.namespaces:
            return  # before 1.8: not a name HCL reads; left to Terraform (no oracle for the wording)
        namespace, _, rest = name.partition("::")
        if namespace == "core":
            if rest not in table.names and table.provider_functions:
                self.error(
                    "Unknown provider function",
                    f'The function namespace "{namespace}" is not valid. Provider function calls must use '
                    'the "provider::" namespace prefix.',
                    at,
                )
            return
        if namespace == "provider" and table.provider_functions:
            provider = rest.partition("::")[0]
            if provider not in self.declared.provider_names:
                function = rest.partition("::")[2]
                self.error(
                    "Unknown provider function",
                    f'There is no function named "{name}". Ensure that provider name "{provider}" is '
                    "declared in this module's required_providers block, and that this provider offers "
                    f'a function named "{function}".',
                    at,
                )
            return
        if table.provider_functions:
            self.error(
                "Unknown provider function",
                f'The function namespace "{namespace}" is not valid. Provider function calls must use '
                'the "provider::" namespace prefix.',
                at,
            )

    # -- what each block type evaluates ------------------------------------------------------
    def run(self) -> Diagnostics:
        for block in self.node.module.blocks:
            self.block(block)
        return self.diags

    def block(self, block: Block, scans: Scans | None = None, listed: BlockExpressions | None = None) -> None:
        """Check one top-level block; ``scans``: its templates as another check scanned them,
        ``listed``: its expressions as another check listed them (stages/expressions.py)."""
        if scans is not None:
            self.scans = scans
        if block.type in _SKIPPED_BLOCKS:
            return
        if listed is None:
            listed = block_expressions(block)
        own = _own(listed.expressions, 0)
        if block.type in ("resource", "data", "ephemeral", "provider"):
            self.instance = ("count" in own, "for_each" in own)
        else:
            # a module call's arguments are evaluated in the child (not checked here)
            self.instance = None if block.type == "module" else (False, False)
        if block.type == "locals" or block.type == "output":
            for e in listed.expressions:
                if not e.within and e.attr.name not in (
                    "depends_on",
                    "description",
                    "sensitive",
                    "ephemeral",
                    "type",
                ):
                    self.unit([e])
            for _, inside in listed.nested():
                self.body_unit(inside)
        elif block.type == "variable":
            for nested, inside in listed.nested():
                if nested.type == "validation":
                    self.body_unit(inside)
        elif block.type == "module":
            self.module_call(listed.expressions, own)
        elif block.type in ("resource", "data", "ephemeral", "provider"):
            self.resource_like(listed.expressions, 0, listed.bound, own)
        elif block.type == "check":
            for nested, inside in listed.nested():
                if nested.type == "data":
                    self.resource_like(inside, 1, dynamic_iterators(nested.body), _own(inside, 1))
                else:
                    self.body_unit(inside)

    def body_unit(self, inside: list[Expression]) -> None:
        """One nested block's body evaluated at once (``inside``: its attributes, at any depth)."""
        self.unit([e for e in inside if _evaluated(e, 1, frozenset())])

    def resource_like(
        self,
        listed: list[Expression] | tuple[Expression, ...],
        depth: int,
        bound: frozenset[str],
        own: dict[str, Expression],
    ) -> None:
        """A resource-like body (``listed``: its attributes at any depth, its own at ``depth``;
        ``own``: its own by name)."""
        for name in ("count", "for_each"):
            found = own.get(name)
            if found is not None:
                self.unit([found])
        depends = own.get("depends_on")
        if depends is not None and self.objects:
            self.depends_on(depends.attr)
        self.unit([e for e in listed if _evaluated(e, depth, _RESOURCE_META)], bound)

    def module_call(self, listed: tuple[Expression, ...], own: dict[str, Expression]) -> None:
        for name in ("count", "for_each"):
            found = own.get(name)
            if found is not None:
                self.unit([found])
        depends = own.get("depends_on")
        if depends is not None:
            self.depends_on(depends.attr)
        for e in listed:
            if e.within or e.attr.name in _CALL_META:
                continue
            self.unit([e])

    def depends_on(self, attr: Attribute) -> None:
        """``validateDependsOn``: each item whole, then evaluated, until the first error."""
        items = attr.value if isinstance(attr.value, list) else [attr.value]
        before = len(self.diags.errors)
        for item in items:
            if not isinstance(item, str):
                continue
            try:
                refs = self.scans.expression(item)
            except ExpressionError:
                continue
            if len(refs) != 1:
                continue
            ref = refs[0]
            subject = _subject_steps(ref)
            if subject is None:
                continue
            # A depends_on item is stored without its position: the whole list's range is given.
            rng = attr.expr.range
            if len(ref.steps) > subject:
                self.error(
                    "Invalid depends_on reference",
                    "References in depends_on must be to a whole object (resource, etc), not to an "
                    "attribute of an object.",
                    rng,
                )
            if len(self.diags.errors) == before and self.static(ref, rng, None):
                self.evaluated(ref, rng, None)


def _subject_steps(ref: Reference) -> int | None:
    """How many steps after the root name the referenced object (ParseRef); None: not checked."""
    root = ref.root
    if root == "data":
        n = 2
    elif root in _UNCHECKED_ROOTS:
        return None
    else:
        n = 1
    if len(ref.steps) > n and ref.steps[n][0] == "index":
        n += 1
    return n


def _own(listed: Iterable[Expression], depth: int) -> dict[str, Expression]:
    """The body's own attributes (those at ``depth`` in ``listed``) by name, the last of a name."""
    return {e.attr.name: e for e in listed if len(e.within) == depth}


# A nested block's arguments that are no expressions to evaluate, by the block's type.
_NOT_EVALUATED = MappingProxyType(
    {
        "lifecycle": frozenset({"replace_triggered_by", "ignore_changes", "enabled"}),
        "dynamic": frozenset({"iterator"}),
    }
)


def _evaluated(e: Expression, depth: int, skip: frozenset[str]) -> bool:
    """Whether the walk evaluates the listed attribute ``e`` of a body at ``depth`` (its own
    arguments less ``skip``). Of the blocks in the body, the walk reads each block's arguments by
    the block's type (``lifecycle.ignore_changes`` and a ``dynamic``'s ``iterator`` are no
    expressions), and every argument of the blocks nested in those; then by type again, a level
    down, and so on (the walk's rule since the checks began: kept, so that they report the same)."""
    below = len(e.within) - depth
    if below == 0:
        return e.attr.name not in skip
    if below % 2 == 0:
        return True
    ignored = _NOT_EVALUATED.get(e.within[-1].type)
    return ignored is None or e.attr.name not in ignored


# -- module call arguments with constant values -------------------------------------------------


def _constant(node_module: Module, attr: Attribute, address: str) -> JsonValue | Unsupported:
    """The value of ``attr`` (an argument of ``node_module``) when it refers to nothing and the
    static evaluator reads it."""
    scans = Scans(record=node_module.scans)
    try:
        refs = [r for s in json_strings(attr.value) for r in scans.references(s)]
    except ExpressionError:
        return Unsupported("unreadable")
    if refs:
        return Unsupported("references")
    scope = Scope(node_module, address)
    try:
        return scope.evaluate(attr, Ident(address, attr.name, attr.expr.range)).value
    except (Unsupported, Failed) as exc:
        return Unsupported(str(exc))


def _count_detail(value: JsonValue) -> tuple[str, str] | None:
    """``evaluateCountExpressionValue``'s error for a known count (summary, detail), or None."""
    if value is None:
        return "Invalid count argument", 'The given "count" argument value is null. An integer is required.'
    if isinstance(value, (bool, list, dict)):
        return "Incorrect value type", "Invalid expression value: number required."
    if isinstance(value, str):
        try:
            number = convert(value, Primitive("number"))
        except ConversionError:
            return "Incorrect value type", "Invalid expression value: a number is required."
        value = number
    assert isinstance(value, (int, Decimal))
    if value != int(value) or not _INT64[0] <= int(value) <= _INT64[1]:
        return (
            "Invalid count argument",
            'The given "count" argument value is unsuitable: value must be a whole number, between '
            f"{_INT64[0]} and {_INT64[1]}.",
        )
    if value < 0:
        return (
            "Invalid count argument",
            'The given "count" argument value is unsuitable: must be greater than or equal to zero.',
        )
    return None


def _for_each_detail(value: JsonValue) -> str | None:
    """``evaluateForEachExpression``'s error for a known for_each (its detail), or None."""
    if value is None:
        return (
            'The given "for_each" argument value is unsuitable: the given "for_each" argument value is '
            "null. A map, or set of strings is allowed."
        )
    if isinstance(value, dict):
        return None
    kind = (
        "bool"
        if isinstance(value, bool)
        else "number"
        if isinstance(value, (int, Decimal))
        else "string"
        if isinstance(value, str)
        else "tuple"
    )
    if kind == "tuple" and isinstance(value, list) and not value:
        return None  # an empty tuple is an empty set of strings
    return (
        'The given "for_each" argument value is unsuitable: the "for_each" argument must be a map, or set '
        f"of strings, and you have provided a value of type {kind}."
    )


def _mismatch(source: Type, target: Type) -> str | None:
    """cty's error converting an unknown value of ``source`` to ``target`` when the kinds alone
    decide it (nested mismatches are left to the engine: None)."""
    if isinstance(source, AnyType) or isinstance(target, AnyType):
        return None
    if isinstance(target, Primitive):
        if isinstance(source, Primitive):
            if {source.name, target.name} == {"bool", "number"}:
                return f"{target.name} required"
            return None
        return f"{target.name} required"
    what = {ListType: "list", SetType: "set", MapType: "map"}
    if isinstance(target, (ListType, SetType)):
        ok = isinstance(source, (ListType, SetType, TupleType))
    elif isinstance(target, MapType):
        ok = isinstance(source, (MapType, ObjectType))
    else:
        return None
    if ok:
        return None
    return f"{what[type(target)]} of {type_string(target.element)} required"


class _InputTypes:
    """Module inputs against the called module's declared variable types."""

    def __init__(self, graph: ModuleGraph) -> None:
        self.graph = graph

    def check(self, node: ModuleNode) -> Diagnostics:
        diags = Diagnostics()
        call, parent = node.call, self.graph.parent(node.address)
        if call is None or parent is None:
            return diags
        variables = {b.labels[0]: b for b in node.module.blocks_of("variable") if b.labels}
        caller_vars = {b.labels[0]: b for b in parent.module.blocks_of("variable") if b.labels}
        for attr in call.block.body.attributes:
            decl = variables.get(attr.name)
            if decl is None or attr.name in (
                "source",
                "version",
                "providers",
                "count",
                "for_each",
                "depends_on",
            ):
                continue
            target = _declared_type(decl)
            if target is None:
                continue
            message = self.mismatch(parent, caller_vars, attr, target)
            if message is None:
                continue
            rng = decl.range
            if rng.start.line != rng.end.line:
                declared_at = (
                    f"{rng.filename}:{rng.start.line},{rng.start.column}-{rng.end.line},{rng.end.column}"
                )
            else:
                declared_at = f"{rng.filename}:{rng.start.line},{rng.start.column}-{rng.end.column}"
            diags.append(
                Diagnostic.error(
                    "Invalid value for input variable",
                    f"The given value is not suitable for {node.address}.var.{attr.name} declared at "
                    f"{declared_at}: {message}.",
                    attr.expr.range,
                    parent.address,
                )
            )
        return diags

    def mismatch(
        self, parent: ModuleNode, caller_vars: dict[str, Block], attr: Attribute, target: Type
    ) -> str | None:
        # A variable of the caller is, during validate, an unknown value of its declared type:
        # only the type decides (evaluate.go, GetInputVariable).
        value = attr.value
        if isinstance(value, str) and value.startswith("${var.") and value.endswith("}"):
            decl = caller_vars.get(value[6:-1].strip())
            source = _declared_type(decl) if decl is not None else None
            return _mismatch(source, target) if source is not None else None
        constant = _constant(parent.module, attr, parent.address)
        if isinstance(constant, Unsupported):
            return None
        try:
            convert(constant, target)
        except ConversionError as exc:
            return str(exc)
        return None


def _declared_type(decl: Block) -> Type | None:
    attr = decl.body.peek().attribute("type")
    if attr is None or not isinstance(attr.value, str):
        return None
    try:
        return parse_type(attr.value)
    except TypeExprError:
        return None


def _call_arguments(node: ModuleNode, graph: ModuleGraph) -> Diagnostics:
    """A call's ``count`` and ``for_each`` when their values are constants."""
    diags = Diagnostics()
    call, parent = node.call, graph.parent(node.address)
    if call is None or parent is None:
        return diags
    body = call.block.body
    count = body.attribute("count")
    if count is not None:
        value = _constant(parent.module, count, parent.address)
        if not isinstance(value, Unsupported):
            found = _count_detail(value)
            if found is not None:
                diags.append(Diagnostic.error(found[0], found[1], count.expr.range, parent.address))
    for_each = body.attribute("for_each")
    if for_each is not None:
        value = _constant(parent.module, for_each, parent.address)
        if not isinstance(value, Unsupported):
            detail = _for_each_detail(value)
            if detail is not None:
                diags.append(
                    Diagnostic.error("Invalid for_each argument", detail, for_each.expr.range, parent.address)
                )
    return diags


class ReferenceChecks:
    """The validate walk's checks, one module at a time (``module``), in tree order; ``diags``
    holds what they found. ``objects``: whether var, local, resource and data references are
    checked (default: as the dialect has it; ``--checks``, lang/options.py)."""

    def __init__(
        self,
        graph: ModuleGraph,
        dialect: Dialect = Dialect.TERRAFORM,
        *,
        objects: bool | None = None,
        release: tuple[int, int] | None = None,
        facts: TextFacts | None = None,
    ) -> None:
        self.graph = graph
        self.facts = facts if facts is not None else TextFacts()  # shared by every module's checks
        self.diags = Diagnostics()
        self.inputs = _InputTypes(graph)
        self.objects = dialect.allows("object_reference_checks") if objects is None else objects
        # Function calls are checked where the functions are known: each Terraform release, and
        # OpenTofu's table where object references are checked too (the conformance contract's).
        self.functions = function_table(dialect, release or NEWEST) if self.objects else None

    def open(self, node: ModuleNode) -> _Checker:
        """The checks of one module, made block by block (``_Checker.block``), then ``close``."""
        return _Checker(node, self.graph, objects=self.objects, functions=self.functions, facts=self.facts)

    def close(self, checker: _Checker) -> None:
        self.close_with(checker.node, checker.diags)

    def close_with(self, node: ModuleNode, found: Iterable[Diagnostic]) -> None:
        """Close a module whose blocks' checks found ``found`` (a checker's, or a memo's copy of
        them), with the checks of its call (its caller's arguments against its variables)."""
        self.diags.extend(found)
        self.diags.extend(_call_arguments(node, self.graph))
        self.diags.extend(self.inputs.check(node))

    def module(self, node: ModuleNode) -> None:
        """Check one module."""
        checker = self.open(node)
        checker.run()
        self.close(checker)


def check_references(
    graph: ModuleGraph,
    dialect: Dialect = Dialect.TERRAFORM,
    *,
    objects: bool | None = None,
    release: tuple[int, int] | None = None,
) -> Diagnostics:
    """Return the errors ``validate`` reports without a provider schema, module by module in tree
    order (``ReferenceChecks`` over the whole tree)."""
    checks = ReferenceChecks(graph, dialect, objects=objects, release=release)
    for node in graph.walk():
        checks.module(node)
    return checks.diags
