"""Command patterns without regular expressions: the same answers as a regular
expression reference, holes matched only by `*`, and "could match" exact against
brute force."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.errors import PermissionRuleError
from assembler.permissions.command_patterns import HOLE, compile_command_pattern, quote_word

patterns = st.text(alphabet="ab *", min_size=1, max_size=7).filter(lambda p: p.strip())
texts = st.text(alphabet="ab ", max_size=8)


def _reference(pattern: str) -> re.Pattern[str]:
    """The regular expression the previous matcher compiled for `pattern`."""
    compiled = compile_command_pattern(pattern)
    body = ".*".join(re.escape(p) for p in compiled.pieces)
    return re.compile(body + ("(?: .*)?" if compiled.tail else ""), re.DOTALL)


@settings(max_examples=400, deadline=None)
@given(patterns, texts)
def test_matching_agrees_with_the_regular_expression(pattern: str, text: str) -> None:
    compiled = compile_command_pattern(pattern)
    assert compiled.matches(text) == (_reference(pattern).fullmatch(text) is not None)


short_patterns = st.text(alphabet="ab *", min_size=1, max_size=4).filter(lambda p: p.strip())
texts_with_holes = st.text(alphabet=["a", "b", " ", HOLE], max_size=6).filter(
    lambda t: t.count(HOLE) <= 2
)


@settings(max_examples=300, deadline=None)
@given(short_patterns, texts_with_holes)
def test_could_match_is_exact(pattern: str, text: str) -> None:
    """Some filling of the holes (strings over the pattern's alphabet, no longer than
    the pattern: a longer one is never needed) matches, exactly when `could_match`.
    Brute force grows as (3 ** len(pattern)) ** holes: patterns of up to four
    characters and texts with up to two holes keep each example under 15,000 fills
    (seven characters and three holes were 10 ** 10, a test that never ended)."""
    compiled = compile_command_pattern(pattern)
    holes = text.count(HOLE)
    fills = [
        "".join(c) for n in range(len(pattern) + 1) for c in itertools.product("ab ", repeat=n)
    ]
    expected = any(
        compiled.matches(_vanish(_fill(text, choice)))
        for choice in itertools.product([*fills, VANISHED], repeat=holes)
    )
    assert compiled.could_match(text) == expected
    # and `matches` holds for a text with holes only when every filling matches
    if compiled.matches(text):
        assert all(
            compiled.matches(_fill(text, c)) for c in itertools.product(fills[:7], repeat=holes)
        )


VANISHED = "\x01"  # an unquoted empty expansion: no word at all


def _vanish(text: str) -> str:
    """Remove the words that were empty expansions (a `VANISHED` filling elsewhere in a
    word is just empty)."""
    return " ".join(
        word.replace(VANISHED, "") for word in text.split(" ") if word.strip(VANISHED) or not word
    )


def _fill(text: str, choice: tuple[str, ...]) -> str:
    parts = text.split(HOLE)
    return parts[0] + "".join(c + p for c, p in zip(choice, parts[1:], strict=True))


@pytest.mark.parametrize(
    ("pattern", "command", "matches", "could"),
    [
        ("rm -rf /*", f"rm -rf {HOLE}", False, True),
        ("rm -rf /*", "rm -rf /tmp", True, True),
        ("ls *", f"ls {HOLE}", True, True),
        ("ls '$HOME'", f"ls {HOLE}", False, True),
        ("git status", f"git status {HOLE}", False, True),
        ("rm -rf /", f"rm -rf {HOLE} /", False, True),
        ("rm -rf /", f"rm -rf {HOLE}x /", False, False),
        ("git log", f"git status {HOLE}", False, False),
        ("* x", f"{HOLE} y", False, False),
    ],
)
def test_holes(pattern: str, command: str, matches: bool, could: bool) -> None:
    compiled = compile_command_pattern(pattern)
    assert (compiled.matches(command), compiled.could_match(command)) == (matches, could)


def test_a_pattern_cannot_hold_a_nul() -> None:
    with pytest.raises(PermissionRuleError, match="NUL"):
        compile_command_pattern("echo \x00")


@pytest.mark.parametrize(
    ("pattern", "key"),
    [("git diff *", "git"), ("git", "git"), ("git:*", "git"), ("git*", None), ("* x", None),
     ("'a b' c", "a"), ("x\\ y *", "x")],
)  # fmt: skip
def test_the_index_key_is_the_literal_first_word(pattern: str, key: str | None) -> None:
    assert compile_command_pattern(pattern).key == key


def test_a_deny_rule_ending_in_star_sees_a_command_with_an_unknown_middle_word() -> None:
    """`$remote` may be empty or any word: `git push $remote main` is a `git push`."""
    assert compile_command_pattern("git push *").could_match(f"git push {HOLE} main")


@pytest.mark.parametrize("pattern", ["", "   ", "\t"])
def test_an_empty_command_pattern_is_refused(pattern: str) -> None:
    with pytest.raises(PermissionRuleError, match="empty command pattern"):
        compile_command_pattern(pattern)


def test_a_trailing_backslash_is_a_rule_error_not_a_crash() -> None:
    with pytest.raises(PermissionRuleError, match="backslash at the end"):
        compile_command_pattern("echo \\")


def test_an_escaped_double_quote_ends_a_word_inside_double_quotes() -> None:
    assert compile_command_pattern('echo "a\\""').matches('echo a"')


@pytest.mark.parametrize("word", ["it's", "a b", "''", "*", "$HOME"])
def test_a_quoted_session_word_reads_back_as_itself(word: str) -> None:
    """Session rules are written with `quote_word`: the rule must match that very word."""
    pattern = compile_command_pattern(f"echo {quote_word(word)}")
    assert pattern.matches(f"echo {word}")


def test_a_word_made_only_of_escaped_characters_is_still_a_word() -> None:
    pattern = compile_command_pattern("rm \\*")
    assert (pattern.matches("rm *"), pattern.matches("rm")) == (True, False)


def test_an_escaped_space_joins_two_words_into_one() -> None:
    pattern = compile_command_pattern("echo a\\ b")
    assert (pattern.matches("echo a b"), pattern.matches("echo a")) == (True, False)


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("*", "rm -rf /", True),  # a star alone is every command, not an empty one
        ("*", "", True),
        ("echo a*a", "echo a", False),  # the two ends may not share the `a`
        ("echo a*a", "echo aa", True),
        ("echo *a*a", "echo a", False),  # nor the piece in the middle and the end
        ("echo *a*a", "echo aa", True),
        ("echo *ab*ab*", "echo ab", False),  # nor two pieces in the middle
        ("echo *ab*ab*", "echo abab", True),
    ],
)
def test_the_pieces_between_stars_never_overlap(pattern: str, command: str, matches: bool) -> None:
    assert compile_command_pattern(pattern).matches(command) is matches


def test_a_deny_rule_ending_in_star_sees_an_unknown_part_of_a_middle_word() -> None:
    """`$x` may be `ain`: `git push m$x origin` may run `git push main origin`, which
    `git * main *` names (with words after `main`, so only the ` *` end can match)."""
    pattern = compile_command_pattern("git * main *")
    assert not pattern.matches(f"git push m{HOLE} origin")
    assert pattern.could_match(f"git push m{HOLE} origin")


@pytest.mark.parametrize(("holes", "could"), [(8, False), (9, True)])
def test_words_that_may_vanish_are_tried_up_to_the_limit(holes: int, could: bool) -> None:
    """Each word made only of an expansion may be empty (no word at all): eight such
    words are tried present and absent (256 tries), which `git push` cannot match
    after `git status`; past eight the answer is yes without trying."""
    command = "git status" + f" {HOLE}" * holes
    assert compile_command_pattern("git push").could_match(command) is could
