"""``.terraformignore`` rules read as Terraform reads them (go-slug internal/ignorefiles)."""

from __future__ import annotations

import pytest

from flatten.lang.ignore import IgnoreRules

# go-slug's internal/ignorefiles/testdata/archive-dir/.terraformignore and its expectations
# (terraformignore_test.go, TestTerraformIgnore).
_ARCHIVE_DIR = """# comments are ignored
 # extra spaces are irrelevant
# ignore a file
   baz.txt
# below is an empty line

# ignore a directory
terraform.d/
# negate ignoring a directory at the root
!/terraform.d/
# ignore a file at a subpath
**/foo/bar.tf
# ignore files with specific endings
foo/*.md
# character groups
bar/something-[a-z].txt
# ignore a file
boop.txt
# but not one at the current directory
!/boop.txt
"""

_EXPECTED = {
    ".terraform/": True,
    "included.txt": False,
    ".terraform/foo/bar": True,
    ".terraform/foo/bar/more/directories/so/many": True,
    ".terraform/foo/ignored-subdirectory/": True,
    "baz.txt": True,
    "parent/foo/baz.txt": True,
    "parent/foo/bar.tf": True,
    "parent/bar/bar.tf": False,
    "something/with-baz.txt": False,
    "something/baz.x": False,
    "foo/ignored-doc.md": True,
    "bar/something-a.txt": True,
    "some-module/terraform.d/x": True,
    "terraform.d/": False,
    "terraform.d/foo": False,
    "terraform.d": False,
    "baz/boop.txt": True,
    "boop.txt": False,
}


@pytest.mark.parametrize(("path", "excluded"), sorted(_EXPECTED.items()))
def test_go_slug_archive_dir_cases(path: str, excluded: bool) -> None:
    assert IgnoreRules.parse(_ARCHIVE_DIR).excludes(path) is excluded


def test_defaults_without_a_file() -> None:
    rules = IgnoreRules()
    assert rules.excludes(".git/config") and rules.excludes("sub/.terraform/x")
    assert not rules.excludes(".terraform/modules/m/main.tf")  # !.terraform/modules/
    assert not rules.excludes("id_rsa")


def test_double_star_and_anchors() -> None:
    rules = IgnoreRules.parse("/top.txt\nlogs/**/*.log\n*.pem\n")
    assert rules.excludes("top.txt") and not rules.excludes("sub/top.txt")
    assert rules.excludes("logs/a.log") and rules.excludes("x/logs/a/b/c.log")
    assert rules.excludes("keys/deep/server.pem") and not rules.excludes("server.pem.txt")


def test_a_directory_is_pruned_only_when_no_negation_follows() -> None:
    assert IgnoreRules.parse("secrets/\n").prunes("secrets")
    negated = IgnoreRules.parse("secrets/\n!secrets/public.txt\n")
    # A negation after the rule: the directory is walked, and each file decided on its own.
    assert not negated.prunes("secrets")
    assert negated.excludes("secrets/id_rsa") and not negated.excludes("secrets/public.txt")


def test_exclude_patterns_come_after_the_file() -> None:
    rules = IgnoreRules.parse("!notes.txt\n", ("notes.txt", "crash.log"))
    assert rules.excludes("notes.txt") and rules.excludes("a/crash.log")


def test_a_pattern_that_is_not_a_valid_expression_never_matches() -> None:
    rules = IgnoreRules.parse("broken(\nok.txt\n")
    assert not rules.excludes("broken(") and rules.excludes("ok.txt")


def test_matching_is_linear_whatever_the_rule() -> None:
    """Issue 38, item 8: `(a+)+b` against a 40-character name ran past every deadline with
    Python's backtracking engine (0.4 s at 20 characters, x4 per 2 more). RE2 is linear."""
    import time

    rules = IgnoreRules.parse("(a+)+b\n(x*)*y\n((c|cc)+)+d\n", ("(a|aa)+$z",))
    names = ["a" * n for n in range(1, 2_000, 37)] + ["x" * 5_000, "c" * 3_000, "sub/" + "a" * 10_000]
    started = time.monotonic()
    assert not any(rules.excludes(name) for name in names)
    assert time.monotonic() - started < 5  # linear: milliseconds; backtracking: past the universe
    assert rules.excludes("aaab") and rules.excludes("dir/xxy")


def test_go_regexp_syntax_is_go_s() -> None:
    """RE2 is the syntax of Go's regexp, which go-slug compiles rules with: POSIX classes work,
    a backreference is no valid expression there (the rule never matches)."""
    rules = IgnoreRules.parse("[[:digit:]]*.bak\n(a)\\1\n")
    assert rules.excludes("1.bak") and rules.excludes("x/9z.bak") and not rules.excludes("a.bak")
    assert not rules.excludes("aa")
