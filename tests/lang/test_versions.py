"""Version constraints and module version selection (spec §6, §8.5): tables plus properties.

``TestConstraintCheck`` is hashicorp/go-version's own table, row for row; the selection tests
restate OpenTofu's ``TestModuleInstaller_Prerelease`` fixtures (``prerelease-constraint*``).
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.lang.versions import (
    Constraints,
    InvalidConstraint,
    InvalidVersion,
    Version,
    check_core_version,
    newest_allowed,
    parse_constraints,
    parse_version,
    select_module_version,
)

DIALECTS = ["terraform", "opentofu"]


class TestParseVersion:
    @pytest.mark.parametrize(
        ("text", "string", "segments", "prerelease", "metadata"),
        [
            pytest.param("1.2.3", "1.2.3", (1, 2, 3), "", "", id="three-segments"),
            pytest.param("1", "1.0.0", (1, 0, 0), "", "", id="one-segment-padded"),
            pytest.param("1.2", "1.2.0", (1, 2, 0), "", "", id="two-segments-padded"),
            pytest.param("1.0.9.5", "1.0.9.5", (1, 0, 9, 5), "", "", id="four-segments"),
            pytest.param("v1.2.3", "1.2.3", (1, 2, 3), "", "", id="v-prefix"),
            pytest.param("1.04.0", "1.4.0", (1, 4, 0), "", "", id="leading-zero"),
            pytest.param("1.2.3-beta.1", "1.2.3-beta.1", (1, 2, 3), "beta.1", "", id="prerelease"),
            pytest.param("1.2.3-1.x", "1.2.3-1.x", (1, 2, 3), "1.x", "", id="numeric-led-prerelease"),
            pytest.param("1.2.3beta", "1.2.3-beta", (1, 2, 3), "beta", "", id="prerelease-without-dash"),
            pytest.param("1.2.3-a~b", "1.2.3-a~b", (1, 2, 3), "a~b", "", id="tilde-in-prerelease"),
            pytest.param("1.2.3+build.5", "1.2.3+build.5", (1, 2, 3), "", "build.5", id="metadata"),
            pytest.param(
                "1.2.3-rc.1+sha", "1.2.3-rc.1+sha", (1, 2, 3), "rc.1", "sha", id="prerelease-metadata"
            ),
            pytest.param("1.2-beta", "1.2.0-beta", (1, 2, 0), "beta", "", id="short-with-prerelease"),
        ],
    )
    def test_valid(
        self, text: str, string: str, segments: tuple[int, ...], prerelease: str, metadata: str
    ) -> None:
        v = parse_version(text)
        assert (str(v), v.segments, v.prerelease, v.metadata, v.original) == (
            string,
            segments,
            prerelease,
            metadata,
            text,
        )

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("", id="empty"),
            pytest.param("v", id="v-only"),
            pytest.param("1.0.0.beta", id="dot-before-prerelease"),
            pytest.param("1.", id="trailing-dot"),
            pytest.param(".1", id="leading-dot"),
            pytest.param(" 1.0", id="leading-space"),
            pytest.param("1.0 ", id="trailing-space"),
            pytest.param("1.0\n", id="trailing-newline"),
            pytest.param("V1.0", id="capital-v"),
            pytest.param("1.0.x", id="wildcard"),
            pytest.param("1.0+", id="empty-metadata"),
            pytest.param("1.0-beta..1", id="empty-prerelease-part"),
            pytest.param("9223372036854775808", id="int64-overflow"),
        ],
    )
    def test_invalid(self, text: str) -> None:
        with pytest.raises(InvalidVersion):
            parse_version(text)

    def test_quirk_leading_zero_identifiers_not_antisymmetric(self) -> None:
        # comparePart finds "0" and "00" numerically equal yet different strings, and answers -1
        # both ways; flatten keeps the answer Terraform gets.
        a, b = parse_version("1.0.0-rc.0"), parse_version("1.0.0-rc.00")
        assert (a.compare(b), b.compare(a)) == (-1, -1)

    def test_core(self) -> None:
        assert str(parse_version("1.9.0-rc1+abc").core()) == "1.9.0"


class TestCompare:
    @pytest.mark.parametrize(
        ("a", "b", "want"),
        [
            pytest.param("1.0.0", "1.0.0", 0, id="equal"),
            pytest.param("1.0", "1.0.0", 0, id="padding"),
            pytest.param("1.0.0.0", "1.0.0", 0, id="extra-zero-segment"),
            pytest.param("1.0.0.1", "1.0.0", 1, id="extra-segment"),
            pytest.param("1.2.3", "1.10.0", -1, id="numeric-segments"),
            pytest.param("1.0.0+a", "1.0.0+b", 0, id="metadata-ignored"),
            pytest.param("1.0.0-beta", "1.0.0", -1, id="prerelease-before-release"),
            pytest.param("1.0.0-beta.2", "1.0.0-beta.10", -1, id="numeric-identifiers-numerically"),
            pytest.param("1.0.0-alpha", "1.0.0-rc", -1, id="text-identifiers-lexically"),
            pytest.param("1.0.0-rc.1", "1.0.0-rc.1+x", 0, id="prerelease-metadata-ignored"),
            pytest.param("1.0.0-1", "1.0.0-alpha", -1, id="numeric-before-text"),
            pytest.param("1.0.0-alpha", "1.0.0-alpha.1", -1, id="missing-before-numeric"),
            pytest.param("1.0.0-alpha.1", "1.0.0-alpha.beta", -1, id="numeric-before-text-part"),
            # go-version quirks, kept on purpose: a missing identifier sorts above a text one, and a
            # jagged comparison (different segment counts) never looks at the prerelease.
            pytest.param("1.0.0-alpha", "1.0.0-alpha.beta", 1, id="quirk-missing-above-text"),
            pytest.param("1.0.0.0-beta", "1.0.0", 0, id="quirk-jagged-ignores-prerelease"),
            pytest.param("1.0.0-a.-1", "1.0.0-a.0", -1, id="signed-numeric-identifier"),
        ],
    )
    def test_compare(self, a: str, b: str, want: int) -> None:
        va, vb = parse_version(a), parse_version(b)
        assert va.compare(vb) == want
        assert vb.compare(va) == -want
        assert (va < vb, va > vb, va <= vb, va >= vb) == (want < 0, want > 0, want <= 0, want >= 0)


class TestNewConstraint:
    @pytest.mark.parametrize(
        ("text", "operators"),
        [
            pytest.param(">= 1.2", [">="], id="spaced-operator"),
            pytest.param("1.0", ["="], id="bare-version-is-equal"),
            pytest.param(">= 1.2, < 1.0", [">=", "<"], id="two-items"),
            pytest.param(">=1.0,<2", [">=", "<"], id="no-spaces"),
            pytest.param("  ~>  1.2.3  ", ["~>"], id="surrounding-spaces"),
            pytest.param("!= 1.0.0-beta", ["!="], id="not-equal-prerelease"),
            pytest.param("= v1.0", ["="], id="v-prefix"),
            pytest.param("<= 1.0.0+meta", ["<="], id="metadata"),
            pytest.param(">1,<2,!=1.5,~>1.2,=1.6,1.7", [">", "<", "!=", "~>", "=", "="], id="every-operator"),
            pytest.param("\t>=\t1.0\n", [">="], id="tabs-and-newline"),
        ],
    )
    def test_valid(self, text: str, operators: list[str]) -> None:
        got = parse_constraints(text)
        assert [c.operator for c in got.items] == operators
        assert str(got) == text

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            pytest.param("", "Malformed constraint: ", id="empty"),
            pytest.param(" ", "Malformed constraint:  ", id="blank"),
            pytest.param(">= 1.x", "Malformed constraint: >= 1.x", id="wildcard"),
            pytest.param("== 1.0", "Malformed constraint: == 1.0", id="double-equals"),
            pytest.param("^1.0", "Malformed constraint: ^1.0", id="caret"),
            pytest.param("~1.0", "Malformed constraint: ~1.0", id="tilde-alone"),
            pytest.param("=> 1.0", "Malformed constraint: => 1.0", id="reversed-operator"),
            pytest.param("1.0 || 2.0", "Malformed constraint: 1.0 || 2.0", id="no-or"),
            pytest.param(">= 1.0 < 2.0", "Malformed constraint: >= 1.0 < 2.0", id="space-separated"),
            pytest.param("1.0,", "Malformed constraint: ", id="trailing-comma"),
            pytest.param(",1.0", "Malformed constraint: ", id="leading-comma"),
            pytest.param("1.0\v", "Malformed constraint: 1.0\v", id="vertical-tab-is-not-go-space"),
            pytest.param(
                "11387778780781445675529500000000000000000",
                "error parsing version: strconv.ParseInt: parsing "
                '"11387778780781445675529500000000000000000": value out of range',
                id="out-of-bounds",
            ),
        ],
    )
    def test_invalid(self, text: str, reason: str) -> None:
        with pytest.raises(InvalidConstraint) as info:
            parse_constraints(text)
        assert info.value.summary == "Invalid version constraint"
        assert str(info.value) == "This string does not use correct version constraint syntax."
        assert info.value.reason == reason


class TestConstraintCheck:
    """hashicorp/go-version ``TestConstraintCheck``, every row."""

    @pytest.mark.parametrize(
        ("constraint", "version", "want"),
        [
            (">= 1.0, < 1.2", "1.1.5", True),
            ("< 1.0, < 1.2", "1.1.5", False),
            ("= 1.0", "1.1.5", False),
            ("= 1.0", "1.0.0", True),
            ("1.0", "1.0.0", True),
            ("~> 1.0", "2.0", False),
            ("~> 1.0", "1.1", True),
            ("~> 1.0", "1.2.3", True),
            ("~> 1.0.0", "1.2.3", False),
            ("~> 1.0.0", "1.0.7", True),
            ("~> 1.0.0", "1.1.0", False),
            ("~> 1.0.7", "1.0.4", False),
            ("~> 1.0.7", "1.0.7", True),
            ("~> 1.0.7", "1.0.8", True),
            ("~> 1.0.7", "1.0.7.5", True),
            ("~> 1.0.7", "1.0.6.99", False),
            ("~> 1.0.7", "1.0.8.0", True),
            ("~> 1.0.9.5", "1.0.9.5", True),
            ("~> 1.0.9.5", "1.0.9.4", False),
            ("~> 1.0.9.5", "1.0.9.6", True),
            ("~> 1.0.9.5", "1.0.9.5.0", True),
            ("~> 1.0.9.5", "1.0.9.5.1", True),
            ("~> 2.0", "2.1.0-beta", False),
            ("~> 2.1.0-a", "2.2.0", False),
            ("~> 2.1.0-a", "2.1.0", False),
            ("~> 2.1.0-a", "2.1.0-beta", True),
            ("~> 2.1.0-a", "2.2.0-alpha", False),
            ("> 2.0", "2.1.0-beta", False),
            (">= 2.1.0-a", "2.1.0-beta", True),
            (">= 2.1.0-a", "2.1.1-beta", False),
            (">= 2.0.0", "2.1.0-beta", False),
            (">= 2.1.0-a", "2.1.1", True),
            (">= 2.1.0-a", "2.1.0", True),
            ("<= 2.1.0-a", "2.0.0", True),
        ],
        ids=lambda value: str(value),
    )
    def test_go_version_table(self, constraint: str, version: str, want: bool) -> None:
        assert parse_constraints(constraint).allows(version) is want

    @pytest.mark.parametrize(
        ("constraint", "version", "want"),
        [
            pytest.param("~> 1.2", "1.9.9", True, id="pessimistic-two-segments-upper"),
            pytest.param("~> 1.2", "2.0.0", False, id="pessimistic-two-segments-excludes-next-major"),
            pytest.param("~> 1.2", "1.1.9", False, id="pessimistic-two-segments-lower"),
            pytest.param("~> 1.2.3", "1.2.99", True, id="pessimistic-three-segments"),
            pytest.param("~> 1.2.3", "1.3.0", False, id="pessimistic-three-segments-excludes-next-minor"),
            pytest.param("~> 1", "7.0.0", True, id="pessimistic-one-segment-no-upper-bound"),
            pytest.param("~> 1", "0.9.0", False, id="pessimistic-one-segment-lower"),
            pytest.param("~> 1.0.9.5", "1.0.10", False, id="pessimistic-four-segments-needs-four"),
            pytest.param("= 1.2.0-beta", "1.2.0-beta", True, id="equal-prerelease-exact"),
            pytest.param("= 1.2.0-beta", "1.2.0", False, id="equal-prerelease-not-release"),
            pytest.param("1.2.0", "1.2.0-beta", False, id="equal-release-not-prerelease"),
            pytest.param("!= 1.2.0", "1.2.0-beta", True, id="not-equal-ignores-prerelease-gate"),
            pytest.param("= 1.2.0", "1.2.0+meta", True, id="equal-ignores-metadata"),
            pytest.param("< 2.0.0", "2.0.0-rc1", False, id="less-than-release-excludes-prerelease"),
            pytest.param("< 2.0.0-rc2", "2.0.0-rc1", True, id="less-than-prerelease-same-core"),
            pytest.param(">= 1.0.0, != 1.5.0", "1.5.0", False, id="conjunction"),
            pytest.param(">= v1.0", "1.0.0", True, id="v-prefixed-constraint"),
        ],
    )
    def test_more(self, constraint: str, version: str, want: bool) -> None:
        assert parse_constraints(constraint).allows(version) is want

    def test_empty_constraints_allow_everything(self) -> None:
        assert Constraints().allows("0.0.1-alpha")
        assert str(Constraints()) == ""

    def test_unparseable_version(self) -> None:
        with pytest.raises(InvalidVersion):
            parse_constraints(">= 1.0").allows("banana")


class TestConstraintsString:
    @pytest.mark.parametrize("text", [">= 1.0, < 1.2", "~> 1.0.7", "0.0.3-alpha.1, >=0.0.2", " = 1.0 "])
    def test_original_text_kept(self, text: str) -> None:
        assert str(parse_constraints(text)) == text


LISTING = ["v0.0.1", "v0.0.2", "v0.0.3-alpha.1"]


class TestSelectModuleVersion:
    """How ``init`` chooses from a registry listing (spec §6.3, ``prerelease-constraint*``)."""

    @pytest.mark.parametrize(
        ("constraint", "terraform", "opentofu"),
        [
            pytest.param("0.0.3-alpha.1", "v0.0.3-alpha.1", "v0.0.3-alpha.1", id="exact-bare"),
            pytest.param("=0.0.3-alpha.1", "v0.0.3-alpha.1", "v0.0.3-alpha.1", id="exact-equals"),
            pytest.param("=v0.0.3-alpha.1", None, "v0.0.3-alpha.1", id="exact-v-prefixed"),
            pytest.param("v0.0.3-alpha.1", None, "v0.0.3-alpha.1", id="exact-bare-v-prefixed"),
            pytest.param(" =0.0.3-alpha.1 ", "v0.0.3-alpha.1", "v0.0.3-alpha.1", id="outer-spaces"),
            pytest.param("<=0.0.3-alpha.1", "v0.0.2", "v0.0.2", id="less-equal-picks-release"),
            pytest.param(">=0.0.3-alpha.1", None, None, id="greater-equal-never-prerelease"),
            pytest.param("0.0.3-alpha.1, >=0.0.2", None, None, id="comma-excludes-prereleases"),
            pytest.param("= 0.0.3-alpha.1", None, None, id="space-after-operator"),
            pytest.param("~> 0.0.3-alpha.1", None, None, id="pessimistic-prerelease"),
            pytest.param(">= 0.0.1", "v0.0.2", "v0.0.2", id="range-skips-prerelease"),
            pytest.param("~> 0.0.1", "v0.0.2", "v0.0.2", id="pessimistic-range"),
            pytest.param("0.0.1", "v0.0.1", "v0.0.1", id="exact-release"),
            pytest.param("> 0.0.2", None, None, id="unresolvable"),
        ],
    )
    @pytest.mark.parametrize("dialect", DIALECTS)
    def test_prerelease_fixtures(
        self, constraint: str, terraform: str | None, opentofu: str | None, dialect: str
    ) -> None:
        want = terraform if dialect == "terraform" else opentofu
        assert newest_allowed(LISTING, parse_constraints(constraint), dialect=dialect) == want

    @pytest.mark.parametrize("dialect", DIALECTS)
    def test_no_constraint_never_chooses_prerelease(self, dialect: str) -> None:
        assert newest_allowed(["1.0.0", "2.0.0-rc1"], None, dialect=dialect) == "1.0.0"

    def test_invalid_strings_skipped_and_reported(self) -> None:
        got = select_module_version(["1.0.0", "banana", "1.1", "", "2.0.x"], parse_constraints(">= 1.0"))
        assert got.chosen is not None and got.chosen.original == "1.1"
        assert got.newest is not None and str(got.newest) == "1.1.0"
        assert got.invalid == ("banana", "", "2.0.x")

    def test_no_versions(self) -> None:
        got = select_module_version(["2.0.0-beta", "x"], parse_constraints("~> 1.0"))
        assert (got.chosen, got.newest, got.invalid) == (None, None, ("x",))

    def test_unresolvable_reports_newest(self) -> None:
        got = select_module_version(["1.0.0", "1.2.0", "1.1.0"], parse_constraints("~> 2.0"))
        assert got.chosen is None
        assert got.newest is not None and got.newest.original == "1.2.0"

    def test_metadata_tie_first_listed_wins(self) -> None:
        assert newest_allowed(["1.0.0+a", "1.0.0+b", "0.9.0"], parse_constraints(">= 0.1")) == "1.0.0+a"

    def test_exact_prerelease_with_metadata_must_match_metadata(self) -> None:
        # go-versions compares exact selections including metadata, so "+build" must be written too.
        assert newest_allowed(["1.0.0-rc1+build"], parse_constraints("1.0.0-rc1")) is None
        assert newest_allowed(["1.0.0-rc1+build"], parse_constraints("1.0.0-rc1+build")) == "1.0.0-rc1+build"

    def test_four_segment_prerelease_never_chosen(self) -> None:
        assert newest_allowed(["1.0.0.1-rc1"], parse_constraints("1.0.0.1-rc1")) is None

    def test_newest_ordering_uses_semver_prereleases(self) -> None:
        got = newest_allowed(["1.0.0-beta.10", "1.0.0-beta.2"], parse_constraints("1.0.0-beta.10"))
        assert got == "1.0.0-beta.10"


class TestCheckCoreVersion:
    @pytest.mark.parametrize(
        ("constraint", "version", "want"),
        [
            pytest.param(">= 1.9", "1.9.0", True, id="release"),
            pytest.param(">= 1.9", "1.10.0-rc1", True, id="prerelease-cli-matches-by-core"),
            pytest.param(">= 1.10.0", "1.10.0-rc1", True, id="prerelease-cli-core-equal"),
            pytest.param("< 1.10.0", "1.10.0-alpha20250101", False, id="prerelease-cli-core-too-new"),
            pytest.param("~> 1.5.0", "1.6.0", False, id="pessimistic"),
        ],
    )
    def test_check(self, constraint: str, version: str, want: bool) -> None:
        assert check_core_version(parse_constraints(constraint), version) is want

    @pytest.mark.parametrize(
        ("dialect", "product"), [("terraform", "Terraform"), ("opentofu", "OpenTofu")], ids=DIALECTS
    )
    def test_prerelease_constraint_rejected(self, dialect: str, product: str) -> None:
        with pytest.raises(InvalidConstraint) as info:
            check_core_version(parse_constraints(">= 1.0, < 2.0.0-beta"), "1.5.0", dialect=dialect)
        assert info.value.summary == "Invalid required_version constraint"
        assert str(info.value) == (
            "Prerelease version constraints are not supported: >= 1.0, < 2.0.0-beta. Remove the prerelease "
            f"information from the constraint. Prerelease versions of {product} will match constraints using "
            "their version core only."
        )


# ---------------------------------------------------------------------------------------------
# Properties

_RELEASE = st.builds(
    lambda parts, v: ("v" if v else "") + ".".join(str(p) for p in parts),
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
    st.booleans(),
)
# Numeric identifiers without leading zeros: go-version compares "0" and "00" as -1 both ways.
_PRE = st.from_regex(r"(alpha|beta|rc|0|[1-9][0-9]?)(\.(alpha|beta|0|[1-9][0-9]?))?", fullmatch=True)
_VERSION = st.one_of(_RELEASE, st.builds(lambda r, p: f"{r}-{p}", _RELEASE, _PRE))
_CONSTRAINT = st.builds(
    lambda op, sp, v: f"{op}{sp}{v}",
    st.sampled_from(["", "=", "!=", ">", ">=", "<", "<=", "~>"]),
    st.sampled_from(["", " "]),
    _VERSION,
)


@settings(max_examples=300, deadline=None)
@given(
    listing=st.lists(st.one_of(_VERSION, st.sampled_from(["", "x", "1.0.x"])), max_size=8),
    items=st.lists(_CONSTRAINT, min_size=1, max_size=3),
    dialect=st.sampled_from(DIALECTS),
)
def test_newest_allowed_is_allowed_and_newest(listing: list[str], items: list[str], dialect: str) -> None:
    """The choice is a listed, allowed version, and no allowed release in the listing is newer."""
    constraints = parse_constraints(", ".join(items))
    chosen = newest_allowed(listing, constraints, dialect=dialect)
    allowed_releases = [v for v in _parseable(listing) if not v.prerelease and constraints.allows(v)]
    if chosen is None:
        assert not allowed_releases
        return
    assert chosen in listing
    best = parse_version(chosen)
    assert constraints.allows(best)
    assert not any(v > best for v in allowed_releases)


def _parseable(listing: list[str]) -> list[Version]:
    out = []
    for raw in listing:
        with contextlib.suppress(InvalidVersion):
            out.append(parse_version(raw))
    return out


@settings(max_examples=300, deadline=None)
@given(a=_VERSION, b=_VERSION)
def test_compare_is_antisymmetric(a: str, b: str) -> None:
    va, vb = parse_version(a), parse_version(b)
    assert va.compare(vb) == -vb.compare(va)


@settings(max_examples=300, deadline=None)
@given(v=_VERSION)
def test_canonical_string_round_trips(v: str) -> None:
    parsed = parse_version(v)
    again = parse_version(str(parsed))
    assert again.compare(parsed) == 0
    assert str(again) == str(parsed)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="0123456789.,-+ =<>!~^vxab", max_size=20))
def test_only_invalid_constraint_escapes(text: str) -> None:
    """Any string either parses or raises the one narrow error."""
    with contextlib.suppress(InvalidConstraint):
        parse_constraints(text)


@settings(max_examples=200, deadline=None)
@given(v=_VERSION)
def test_equal_constraint_matches_itself(v: str) -> None:
    assert parse_constraints(f"= {v}").allows(parse_version(v))
