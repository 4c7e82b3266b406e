"""Version constraints and module version selection, as hashicorp/go-version does them (spec §6).

The rule this file follows: every answer is the one Terraform's Go code gives, quirks included.
go-version is not SemVer and not PEP 440, so :class:`Version` is a port of go-version's type rather
than a wrapper around ``packaging.version.Version``. packaging cannot stand in for it:

- PEP 440 has no general dotted prerelease (``1.0.0-beta.2.x``), orders ``-alpha``/``-rc`` by
  its own table rather than by comparing identifiers, and rejects ``~`` and ``-`` in them;
- go-version compares prerelease identifiers numerically when they parse as int64 and lexically
  otherwise, lets a 4th or 5th numeric segment take part (``1.0.9.5``), and treats a missing
  identifier as lower than a numeric one but *higher* than a text one (``1.0.0-alpha`` sorts
  after ``1.0.0-alpha.beta``), which no other library reproduces.

So this module imports nothing from packaging; it stays the one place that would.

Three things are implemented:

- :func:`parse_constraints` / :meth:`Constraints.allows`: go-version's ``NewConstraint`` and
  ``Check`` (§6.1, §6.2), including the prerelease gate (a prerelease version only matches a
  range constraint that names a prerelease of the same ``x.y.z``);
- :func:`select_module_version` / :func:`newest_allowed`: how ``terraform init`` picks a module
  version from a registry listing (§6.3), including the go-versions "exactly requested" test
  that decides whether a prerelease may be chosen at all;
- :func:`check_core_version`: ``required_version`` against a Terraform version (§6.4).

>>> parse_constraints("~> 1.2").allows("1.9.0")
True
>>> parse_constraints("~> 2.1.0-a").allows("2.1.0")
False
>>> newest_allowed(["1.0.0", "1.1.0", "2.0.0-beta"], parse_constraints(">= 1.0"))
'1.1.0'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from flatten.lang.dialect import Dialect

__all__ = [
    "Constraint",
    "Constraints",
    "InvalidConstraint",
    "InvalidVersion",
    "Version",
    "VersionSelection",
    "check_core_version",
    "newest_allowed",
    "parse_constraints",
    "parse_version",
    "select_module_version",
]


# go-version's VersionRegexpRaw, verbatim. Python's re and Go's regexp both pick the leftmost-first
# (backtracking-order) match, so the capture groups come out the same.
_VERSION_RAW = (
    r"v?([0-9]+(\.[0-9]+)*?)"
    r"(-([0-9]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)|(-?([A-Za-z\-~]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)))?"
    r"(\+([0-9A-Za-z\-~]+(\.[0-9A-Za-z\-~]+)*))?"
    r"?"
)
_VERSION_RE = re.compile(f"^{_VERSION_RAW}\\Z")
_WS = r"[\t\n\f\r ]*"  # Go's \s: ASCII only, no \v
_OPS = (">=", "<=", "!=", "~>", ">", "<", "=", "")
_CONSTRAINT_RE = re.compile(f"^{_WS}({'|'.join(re.escape(op) for op in _OPS)}){_WS}({_VERSION_RAW}){_WS}\\Z")
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1
# Python refuses int() of a string of more than 4,300 digits (sys.get_int_max_str_digits), and
# no caller needs more than "out of range": 21 significant digits already exceed any 64-bit value.
_OUT_OF_RANGE = 10**20


def _int(digits: str) -> int:
    """Return the value of a run of ASCII digits, or a value past 64 bits when it has more than 20.

    >>> _int("007"), _int("9" * 5000) > _UINT64_MAX
    (7, True)
    """
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 20 else _OUT_OF_RANGE


def _shown(text: str, limit: int = 200) -> str:
    """Return ``text`` cut to ``limit`` characters with an ellipsis, for messages."""
    return text if len(text) <= limit else text[:limit] + "..."


class InvalidVersion(ValueError):
    """A string that go-version's ``NewVersion`` rejects.

    >>> try:
    ...     parse_version("1.0.0.beta")
    ... except InvalidVersion as exc:
    ...     print(exc)
    malformed version: 1.0.0.beta
    """


class InvalidConstraint(ValueError):
    """A version constraint that Terraform rejects.

    ``str(exc)`` is the diagnostic detail, ``exc.summary`` the summary and ``exc.reason`` the
    go-version error text.

    >>> try:
    ...     parse_constraints("^1.0")
    ... except InvalidConstraint as exc:
    ...     print(exc.summary, "|", exc.reason)
    Invalid version constraint | Malformed constraint: ^1.0
    """

    def __init__(
        self,
        reason: str,
        *,
        summary: str = "Invalid version constraint",
        detail: str = "This string does not use correct version constraint syntax.",
    ) -> None:
        super().__init__(detail)
        self.summary = summary
        self.detail = detail
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Version:
    """A go-version version: numeric segments (at least three), prerelease and metadata.

    ``specified`` is how many segments were written (``~>`` depends on it) and ``original`` the
    text as given. ``==`` compares the fields; precedence comparisons (``<``, ``>``, ...) and
    :meth:`compare` follow go-version's ``Compare``, which ignores metadata.

    >>> parse_version("v1.2-beta.10") > parse_version("1.2.0-beta.9")
    True
    >>> str(parse_version("v1.02"))
    '1.2.0'
    """

    segments: tuple[int, ...]
    specified: int
    prerelease: str = ""
    metadata: str = ""
    original: str = ""

    def __str__(self) -> str:
        text = ".".join(str(s) for s in self.segments)
        if self.prerelease:
            text += "-" + self.prerelease
        if self.metadata:
            text += "+" + self.metadata
        return text

    def core(self) -> Version:
        """Return ``MAJOR.MINOR.PATCH`` alone, without prerelease or metadata."""
        major, minor, patch = self.segments[:3]
        return parse_version(f"{major}.{minor}.{patch}")

    def compare(self, other: Version) -> int:
        """Return -1, 0 or 1 as go-version's ``Compare`` does."""
        if str(self) == str(other):
            return 0
        if self.segments == other.segments:
            if not self.prerelease and not other.prerelease:
                return 0
            if not self.prerelease:
                return 1
            if not other.prerelease:
                return -1
            return _compare_prereleases(self.prerelease, other.prerelease)
        # Jagged comparison: missing trailing segments count as zero, and then prerelease is not
        # consulted at all (go-version quirk: 1.0.0.0-beta compares equal to 1.0.0).
        a, b = self.segments, other.segments
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                return -1 if any(b[i:]) else 0
            if i >= len(b):
                return 1 if any(a[i:]) else 0
            if a[i] != b[i]:
                return -1 if a[i] < b[i] else 1
        return 0

    def __lt__(self, other: Version) -> bool:
        return self.compare(other) < 0

    def __le__(self, other: Version) -> bool:
        return self.compare(other) <= 0

    def __gt__(self, other: Version) -> bool:
        return self.compare(other) > 0

    def __ge__(self, other: Version) -> bool:
        return self.compare(other) >= 0


def parse_version(text: str) -> Version:
    """Return the :class:`Version` for ``text`` (go-version ``NewVersion``); raise :class:`InvalidVersion`.

    >>> parse_version("1.2").segments
    (1, 2, 0)
    >>> parse_version("1.0.0beta").prerelease
    'beta'
    """
    m = _VERSION_RE.match(text)
    if m is None:
        raise InvalidVersion(f"malformed version: {_shown(text)}")
    parts = m[1].split(".")
    segments = []
    for part in parts:
        value = _int(part)
        if value > _INT64_MAX:
            raise InvalidVersion(
                f'error parsing version: strconv.ParseInt: parsing "{_shown(part)}": value out of range'
            )
        segments.append(value)
    segments += [0] * (3 - len(segments))
    return Version(tuple(segments), len(parts), m[7] or m[4] or "", m[10] or "", text)


def _go_parse_int(s: str) -> tuple[int, bool]:
    """Return strconv.ParseInt(s, 10, 64) as (value, ok); out-of-range values clamp like Go's."""
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        return 0, False
    value = -_int(s[1:]) if s[0] == "-" else _int(s.lstrip("+"))
    if value > _INT64_MAX:
        return _INT64_MAX, False
    if value < -_INT64_MAX - 1:
        return -_INT64_MAX - 1, False
    return value, True


def _compare_part(a: str, b: str) -> int:
    if a == b:
        return 0
    a_int, a_num = _go_parse_int(a)
    b_int, b_num = _go_parse_int(b)
    if a == "":
        return -1 if b_num else 1
    if b == "":
        return 1 if a_num else -1
    if a_num and not b_num:
        return -1
    if not a_num and b_num:
        return 1
    if not a_num and not b_num and a > b:
        return 1
    if a_int > b_int:
        return 1
    return -1


def _compare_prereleases(a: str, b: str) -> int:
    if a == b:
        return 0
    pa, pb = a.split("."), b.split(".")
    for i in range(max(len(pa), len(pb))):
        result = _compare_part(pa[i] if i < len(pa) else "", pb[i] if i < len(pb) else "")
        if result:
            return result
    return 0


@dataclass(frozen=True, slots=True)
class Constraint:
    """One comma-separated item of a constraint string: an operator and a version."""

    operator: str  # "=", "!=", ">", ">=", "<", "<=" or "~>"
    version: Version
    original: str

    def allows(self, version: Version) -> bool:
        """Return whether ``version`` satisfies this constraint (go-version ``Constraint.Check``)."""
        c = self.version
        if self.operator == "=":
            return version.compare(c) == 0
        if self.operator == "!=":
            return version.compare(c) != 0
        if not _prerelease_check(version, c):
            return False
        if self.operator == ">":
            return version.compare(c) > 0
        if self.operator == ">=":
            return version.compare(c) >= 0
        if self.operator == "<":
            return version.compare(c) < 0
        if self.operator == "<=":
            return version.compare(c) <= 0
        return _pessimistic(version, c)

    def __str__(self) -> str:
        return self.original


def _prerelease_check(v: Version, c: Version) -> bool:
    if c.prerelease and v.prerelease:
        return v.segments == c.segments  # a prerelease constraint only matches its own x.y.z
    return not (v.prerelease and not c.prerelease)


def _pessimistic(v: Version, c: Version) -> bool:
    if c.prerelease and not v.prerelease:
        return False
    if v.compare(c) < 0:
        return False
    count = len(c.segments)
    if count > len(v.segments):
        return False
    if any(v.segments[i] != c.segments[i] for i in range(c.specified - 1)):
        return False
    return c.segments[count - 1] <= v.segments[count - 1]


@dataclass(frozen=True, slots=True)
class Constraints:
    """A parsed constraint string: all of its items must hold. Empty means "any version"."""

    items: tuple[Constraint, ...] = ()

    def allows(self, version: Version | str) -> bool:
        """Return whether ``version`` satisfies every item; a string is parsed first.

        Raises :class:`InvalidVersion` for an unparseable string.

        >>> parse_constraints(">= 1.0, < 1.2").allows("1.1.5")
        True
        """
        v = parse_version(version) if isinstance(version, str) else version
        return all(item.allows(v) for item in self.items)

    @property
    def has_prerelease(self) -> bool:
        """Whether any item names a prerelease version."""
        return any(item.version.prerelease for item in self.items)

    def __str__(self) -> str:
        """Return the items as written, joined by commas (go-version ``Constraints.String``)."""
        return ",".join(item.original for item in self.items)


def parse_constraints(text: str) -> Constraints:
    """Return the :class:`Constraints` for ``text`` (go-version ``NewConstraint``).

    Raises :class:`InvalidConstraint` (summary "Invalid version constraint") for malformed text,
    including the empty string.

    >>> [c.operator for c in parse_constraints(">=1.0,<2, 1.5").items]
    ['>=', '<', '=']
    """
    items = []
    for single in text.split(","):
        m = _CONSTRAINT_RE.match(single)
        if m is None:
            raise InvalidConstraint(f"Malformed constraint: {_shown(single)}")
        try:
            version = parse_version(m[2])
        except InvalidVersion as exc:
            raise InvalidConstraint(str(exc)) from None
        items.append(Constraint(m[1] or "=", version, single))
    return Constraints(tuple(items))


def check_core_version(
    constraints: Constraints, version: Version | str, *, dialect: str = "terraform"
) -> bool:
    """Return whether a Terraform/OpenTofu ``version`` satisfies a ``required_version`` (spec §6.4).

    A prerelease of the tool is matched by its core version. A constraint naming a prerelease
    raises :class:`InvalidConstraint` with the summary "Invalid required_version constraint".

    >>> check_core_version(parse_constraints(">= 1.9"), "1.10.0-rc1")
    True
    """
    if constraints.has_prerelease:
        product = Dialect(dialect).product
        raise InvalidConstraint(
            f"prerelease in {constraints}",
            summary="Invalid required_version constraint",
            detail=(
                f"Prerelease version constraints are not supported: {constraints}. Remove the prerelease "
                f"information from the constraint. Prerelease versions of {product} will match constraints "
                "using their version core only."
            ),
        )
    v = parse_version(version) if isinstance(version, str) else version
    return constraints.allows(v.core())


@dataclass(frozen=True, slots=True)
class VersionSelection:
    """The outcome of choosing a module version from a registry's list.

    ``chosen`` is the newest listed version the constraints allow (None: "Unresolvable module
    version constraint"), ``newest`` the newest candidate at all (None: "Module has no
    versions"; otherwise named in the unresolvable detail), and ``invalid`` the listed strings
    that were skipped as unparseable (each one a warning, "Invalid response from remote module
    registry").
    """

    chosen: Version | None
    newest: Version | None
    invalid: tuple[str, ...] = ()


def select_module_version(
    versions: Iterable[str], constraints: Constraints | None, *, dialect: str = "terraform"
) -> VersionSelection:
    """Return how ``terraform init`` picks a version from a registry listing (spec §6.3).

    ``constraints`` is the module's ``version`` (None when it has none). Unparseable strings are
    skipped; a prerelease is a candidate only when the constraint requests exactly that version
    (``"1.0.0-beta"`` or ``"=1.0.0-beta"``; OpenTofu also accepts ``"=v1.0.0-beta"``). Among the
    candidates the newest allowed one wins, and of two with equal precedence the first listed.

    >>> select_module_version(["0.0.2", "v0.0.3-alpha.1"], parse_constraints("0.0.3-alpha.1")).chosen
    Version(segments=(0, 0, 3), specified=3, prerelease='alpha.1', metadata='', original='v0.0.3-alpha.1')
    """
    required = constraints if constraints is not None else Constraints()
    text = str(required)
    chosen: Version | None = None
    newest: Version | None = None
    invalid: list[str] = []
    for raw in versions:
        try:
            v = parse_version(raw)
        except InvalidVersion:
            invalid.append(raw)
            continue
        if v.prerelease and not _exactly_requested(text, v, dialect):
            continue
        if newest is None or v > newest:
            newest = v
        if required.allows(v) and (chosen is None or v > chosen):
            chosen = v
    return VersionSelection(chosen, newest, tuple(invalid))


def newest_allowed(
    versions: Iterable[str], constraints: Constraints | None, *, dialect: str = "terraform"
) -> str | None:
    """Return the listed version string ``terraform init`` would install, or None (spec §6.3).

    >>> newest_allowed(["1.0.0", "1.1.0-rc1", "v1.1.0-rc1"], parse_constraints("= 1.1.0-rc1"))
    >>> newest_allowed(["1.0.0", "1.1.0-rc1"], parse_constraints("=1.1.0-rc1"))
    '1.1.0-rc1'
    """
    chosen = select_module_version(versions, constraints, dialect=dialect).chosen
    return chosen.original if chosen is not None else None


# ---------------------------------------------------------------------------------------------
# The "exactly requested" prerelease test. Terraform re-parses the comma-joined constraint text
# with apparentlymart/go-versions' npm-style parser (MeetingConstraintsString) and keeps a
# prerelease only if it is in the resulting set, which holds prereleases only when an exact
# selection ("=X" or bare "X") names them. Commas, spaces after an operator and "v" prefixes are
# all syntax errors there, which exclude every prerelease.

_CANON_SELECTION = re.compile(
    r"(?P<op>[^0-9A-Za-z\s.*]*)(?P<sep>[\sv]*)"
    r"(?P<nums>(?:[0-9]+|[*xX])(?:\.(?:[0-9]+|[*xX]))*)?"
    r"(?:-(?P<pre>[0-9A-Za-z.\-]+))?(?:\+(?P<meta>[0-9A-Za-z.\-]+))?"
)
_CANON_OPS = frozenset({"", "=", "!", ">", ">=", "<", "<=", "~", "^"})
_SemVer = tuple[int, int, int, str, str]  # go-versions Version: major, minor, patch, prerelease, metadata


class _CanonError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Selection:
    op: str  # "=", "!", ">", ">=", "<", "<=", "range" (lower <= v < upper) or "all"
    lower: _SemVer
    upper: _SemVer | None = None


def _exactly_requested(text: str, v: Version, dialect: str) -> bool:
    try:
        union = _canon_parse(text)
    except _CanonError:
        if not Dialect(dialect).allows("v_prefixed_exact_versions"):
            return False
        stripped = re.sub(_VERSION_RAW, lambda m: m[0][1:] if m[0].startswith("v") else m[0], text)
        if stripped == text:
            return False
        try:
            union = _canon_parse(stripped)
        except _CanonError:
            return False
    target = _canon_exact(str(v))
    if target is None:
        return False
    for intersection in union:
        requested = any(s.op == "=" and s.lower == target for s in intersection)
        if requested and all(_canon_has(s, target) for s in intersection):
            return True
    return False


def _canon_exact(text: str) -> _SemVer | None:
    m = re.fullmatch(
        r"([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-([0-9A-Za-z.\-]+))?(?:\+([0-9A-Za-z.\-]+))?", text
    )
    if m is None:
        return None
    nums = [_int(m[i] or "0") for i in (1, 2, 3)]
    if any(n >= 2**64 for n in nums):
        return None
    return nums[0], nums[1], nums[2], m[4] or "", m[5] or ""


def _canon_parse(text: str) -> list[list[_Selection]]:
    remain = text.strip()
    if not remain:
        raise _CanonError("empty specification")
    union: list[list[_Selection]] = []
    intersection: list[_Selection] = []
    while True:
        op, nums, pre, meta, remain = _canon_selection(remain)
        remain = remain.strip()
        if remain.startswith("-"):
            remain = remain[1:].strip()
            if not remain:
                raise _CanonError('operator "-" must be followed by another version selection')
            op2, nums2, pre2, meta2, remain = _canon_selection(remain)
            remain = remain.strip()
            if op or op2:
                raise _CanonError('bounds of a range specified with "-" must be exact versions')
            lower = _canon_zero(nums, pre, meta)
            if "*" in nums2:
                intersection.append(_Selection("range", lower, _canon_upper(nums2)))
            else:
                upper = _canon_zero(nums2, pre2, meta2)
                intersection += [_Selection(">=", lower), _Selection("<=", upper)]
        else:
            intersection.append(_canon_meaning(op, nums, pre, meta))
        if not remain:
            break
        if remain[0] == ",":
            raise _CanonError("commas are not needed to separate version selections")
        if remain[0] == "|":
            if not remain.startswith("||") or not remain[2:].strip():
                raise _CanonError('invalid "||"')
            remain = remain[2:].strip()
            union.append(intersection)
            intersection = []
    union.append(intersection)
    return union


def _canon_selection(text: str) -> tuple[str, list[str], str, str, str]:
    m = _CANON_SELECTION.match(text)
    assert m is not None  # every group is optional
    if m.end() == 0:
        raise _CanonError(f"the sequence {text!r} is not valid")
    if m["op"] not in _CANON_OPS:
        raise _CanonError(f"invalid constraint operator {m['op']!r}")
    if m["sep"]:
        raise _CanonError(f"no spaces or v prefix allowed after operator {m['op']!r}")
    given = m["nums"].split(".") if m["nums"] else []
    if len(given) > 3:
        raise _CanonError("too many numbered portions")
    nums: list[str] = []
    for i in range(3):
        if i < len(given):
            wild = given[i] in ("*", "x", "X")
            if not wild and "*" in nums:
                raise _CanonError("can't use an exact segment after a wildcard")
            if not wild and _int(given[i]) > _UINT64_MAX:  # go-versions: strconv.ParseUint(s, 10, 64)
                raise _CanonError(f"version number {_shown(given[i])} is out of range")
            nums.append("*" if wild else given[i])
        else:
            nums.append("*" if "*" in nums else "0")
    if "*" in nums and (m["pre"] or m["meta"]):
        raise _CanonError("can't use prerelease or metadata in a version with wildcards")
    op = m["op"]
    if op in ("~", "^"):  # only the shape of the range matters here
        patch_only = len(given) > 1 if op == "~" else given[:1] != [] and given[0].startswith("0")
        op = "~patch" if patch_only else "~minor"
    return op, nums, m["pre"] or "", m["meta"] or "", text[m.end() :]


def _canon_zero(nums: list[str], pre: str, meta: str) -> _SemVer:
    a, b, c = (0 if n == "*" else int(n) for n in nums)
    return a, b, c, pre, meta


def _canon_upper(nums: list[str]) -> _SemVer:
    a, b, _ = (0 if n == "*" else int(n) for n in nums)
    if nums[0] == "*":
        return 0, 0, 0, "", ""
    return (a + 1, 0, 0, "", "") if nums[1] == "*" else (a, b + 1, 0, "", "")


def _canon_meaning(op: str, nums: list[str], pre: str, meta: str) -> _Selection:
    exact = "*" not in nums
    lower = _canon_zero(nums, pre, meta)
    if op == "":
        if exact:
            return _Selection("=", lower)
        if nums[0] == "*":
            return _Selection("all", lower)
        return _Selection("range", lower, _canon_upper(nums))
    if op == "<=" and not exact:
        return _Selection("<", _canon_upper(nums))
    if op == ">" and not exact:
        return _Selection(">=", _canon_upper(nums))
    if op in ("=", "!"):
        return _Selection(op, lower)
    lower = (*lower[:4], "")  # metadata only counts for exact matches
    if op == "~minor":
        return _Selection("range", lower, (lower[0] + 1, 0, 0, "", ""))
    if op == "~patch":
        return _Selection("range", lower, (lower[0], lower[1] + 1, 0, "", ""))
    return _Selection(op, lower)


def _canon_less(a: _SemVer, b: _SemVer) -> bool:
    """SemVer precedence, as go-versions orders versions (metadata ignored)."""
    if a[:3] != b[:3]:
        return a[:3] < b[:3]
    if a[3] == b[3]:
        return False
    if not a[3] or not b[3]:
        return bool(a[3])  # a prerelease precedes its release
    pa, pb = a[3].split("."), b[3].split(".")
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            if x.isdigit() and y.isdigit():
                return (len(x), x) < (len(y), y)
            if x.isdigit() != y.isdigit():
                return x.isdigit()
            return x < y
    return len(pa) < len(pb)


def _canon_has(s: _Selection, v: _SemVer) -> bool:
    if s.op == "=":
        return v == s.lower
    if s.op == "!":
        return v != s.lower
    if s.op == "all":
        return True
    if s.op == ">":
        return _canon_less(s.lower, v)
    if s.op == ">=":
        return not _canon_less(v, s.lower)
    if s.op == "<":
        return _canon_less(v, s.lower)
    if s.op == "<=":
        return not _canon_less(s.lower, v)
    assert s.upper is not None
    return not _canon_less(v, s.lower) and _canon_less(v, s.upper)
