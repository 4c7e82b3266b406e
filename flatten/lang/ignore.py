"""``.terraformignore`` rules and ``--exclude`` patterns: which files beside a module stay out.

The rules are Terraform's own (go-slug ``internal/ignorefiles/terraformignore.go`` and
``ignorerules.go``, which ``terraform`` uses to pack a configuration for a remote run), written
again here rather than approximated with ``fnmatch``:

- a line is trimmed; blank lines and lines starting with ``#`` are skipped;
- ``!`` negates (a later match decides: the last matching rule wins);
- a trailing ``/`` matches a directory and everything below it (``dir/`` becomes ``dir/**``);
- a leading ``/`` anchors at the directory holding the file, otherwise ``**/`` is prepended, so
  ``id_rsa`` matches at any depth;
- ``*`` and ``?`` never match ``/``, ``**`` matches any number of directories (zero included),
  ``\\`` escapes the next character, and anything else is Go's regular expression syntax (so
  ``[a-z]`` is a character class; a rule that is not a valid expression never matches);
- the expression is matched by RE2 (``google-re2``), the engine whose syntax and guarantees Go's
  ``regexp`` implements: linear in the path's length whatever the rule (issue 38, item 8: with
  Python's backtracking ``re``, ``(a+)+b`` against a 40-character name ran past every deadline),
  and Go's syntax exactly (``[[:alpha:]]``, ``\\z``; backreferences and lookarounds are not
  valid there, so such a rule never matches, as in go-slug);
- the default rules ``.git/``, ``.terraform/`` and ``!.terraform/modules/`` always come first.

A directory is left out (not descended into) only when ``dir/`` matches a rule and no negation
follows that rule (go-slug's "dominating" match); otherwise each file below it is matched on its
own path. A ``--exclude GLOB`` is read as one more line of the same syntax.

>>> rules = IgnoreRules.parse("*.log\\n!keep.log\\nsecrets/\\n")
>>> [rules.excludes(p) for p in ("crash.log", "a/keep.log", "secrets/id_rsa", "main.sh")]
[True, False, True, False]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["IgnoreRules", "Rule"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled line: its pattern (as go-slug rewrites it), negation, and whether a negation
    follows it (a directory it excludes may still hold a file a later ``!`` keeps)."""

    pattern: str
    negated: bool
    negations_after: bool
    regex: Any  # an re2 pattern, or None for a rule that never matches

    def matches(self, path: str) -> bool:
        if self.regex is None:
            return False
        try:
            return self.regex.search(path) is not None
        except UnicodeEncodeError:
            # A name that is not UTF-8 (surrogate-escaped bytes): Go reads each such byte as
            # utf8.RuneError, one rune each.
            return self.regex.search(_SURROGATES.sub("\ufffd", path)) is not None


_SURROGATES = re.compile("[\ud800-\udfff]")


def _compile(pattern: str) -> Any:
    # go-slug's rule.compile: a character walk, not a glob library.
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        i += 1
        if ch == "*":
            if i < n and pattern[i] == "*":
                i += 1
                if i < n and pattern[i] == "/":
                    i += 1  # "**/" is read as "**"
                out.append(".*" if i >= n else "(.*/)?")
            else:
                out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\":
            if i < n:
                out.append("\\" + pattern[i])  # as go-slug: the backslash and the character
                i += 1
            else:
                out.append("\\")  # go-slug: the backslash alone, which escapes the closing "$"
        elif ch in ".$":
            out.append("\\" + ch)
        else:
            # go-slug escapes only "." and "$" and hands the rest to Go's regexp as is, so
            # "[a-z]" is a character class there, and here.
            out.append(ch)
    out.append("$")
    # Imported here: most builds have no ignore rule to compile (3.6 ms of every build's start).
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile("".join(out), options)
    except (re2.error, UnicodeEncodeError):
        return None  # go-slug: a rule that does not compile never matches


def _rule(pattern: str, negated: bool, negations_after: bool = False) -> Rule:
    return Rule(pattern, negated, negations_after, _compile(pattern))


# go-slug's defaultExclusions, as they would appear in a file: .git/, .terraform/, !.terraform/modules/
_DEFAULTS = (
    ("**/.git/**", False, True),
    ("**/.terraform/**", False, True),
    ("**/.terraform/modules/**", True, False),
)


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The rules of one ``.terraformignore`` (or the defaults, when there is none), in order."""

    rules: tuple[Rule, ...] = tuple(_rule(*d) for d in _DEFAULTS)

    @classmethod
    def parse(cls, text: str, extra: tuple[str, ...] = ()) -> IgnoreRules:
        """Return the rules of a ``.terraformignore`` file's ``text`` (after the defaults), then
        the lines of ``extra`` (``--exclude`` patterns)."""
        rules = [[p, neg, after] for p, neg, after in _DEFAULTS]
        for line in [*text.splitlines(), *extra]:
            pattern = line.strip()
            if not pattern or pattern.startswith("#"):
                continue
            negated = pattern.startswith("!")
            if negated:
                pattern = pattern[1:]
                # Every earlier rule up to the last one already marked has a negation after it.
                for earlier in reversed(rules):
                    if earlier[2]:
                        break
                    earlier[2] = True
            if not pattern:
                continue  # a lone "!": go-slug would fail on it; it matches nothing
            if pattern.endswith("/"):
                pattern += "**"
            pattern = pattern[1:] if pattern.startswith("/") else "**/" + pattern
            rules.append([pattern, negated, False])
        return cls(tuple(_rule(str(p), bool(neg), bool(after)) for p, neg, after in rules))

    def _match(self, path: str) -> tuple[bool, bool]:
        excluded = dominating = False
        for rule in self.rules:
            if rule.matches(path):
                excluded = not rule.negated
                dominating = excluded and not rule.negations_after
        return excluded, dominating

    def excludes(self, path: str) -> bool:
        """Return whether the file at ``path`` (POSIX, relative to the rules' directory) is left out."""
        return self._match(path)[0]

    def prunes(self, directory: str) -> bool:
        """Return whether the directory ``directory`` is left out whole (go-slug's ``SkipDir``)."""
        excluded, dominating = self._match(directory + "/")
        return excluded and dominating
