"""A mutation fuzz of the bash checker and the permission rule parser: zero internal
errors (issue 20, "Done when").

Seeds are lines from the differential generator, the attack lines of items 1-7 and
common agent commands; rules are the rule spellings the docs show. Each is mutated
(a shell-significant token put in, a span dropped or repeated, a continuation, deep
nesting, NUL, `\\x01`, a lone surrogate, a non-ASCII character before a backslash,
a truncation) and decided by a policy. The checker must never raise; a rule may only
raise `PermissionRuleError` (a project error `validate` reports with its position).
Invariants are checked too: a line the checker calls hidden is never allowed where a
deny pattern exists, and an allowed line is always one the recognizer modeled.

`ASSEMBLER_FUZZ_CASES` and `ASSEMBLER_FUZZ_SEED` run it longer or elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from bash_lines import LineGenerator
from test_bash_unverifiable import ITEMS

from assembler.errors import AssemblerError, PermissionRuleError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_command_line

CASES = int(os.environ.get("ASSEMBLER_FUZZ_CASES", "1500"))
SEED = int(os.environ.get("ASSEMBLER_FUZZ_SEED", "20261201"))

COMMON = [
    "git status", "git diff HEAD~1 -- src | head -50", "pytest -q tests/x.py 2>&1 | tail -20",
    "cd src && make -j4", "cat <<'EOF' > notes.md\n# Notes\n$(not run)\nEOF\n",
    'git commit -m "$(cat <<\'EOF\'\nFix the fee\n\nBody\nEOF\n)"', "ls -la ~/x *.py {a,b}",
    "find . -name '*.py' -exec grep -n TODO {} +", "bash -c 'echo $((1+2))'", "env A=1 timeout 5 nice -n 3 pytest",
    "xargs -0 rm < list", "echo ${x} $1 $? \"$@\" $'a\\tb'", "if true; then echo; elif false; then :; else echo; fi",
]  # fmt: skip
TOKENS = [
    "'", '"', "\\", "\\\n", "$(", ")", "`", "${", "}", "$((", "((", "[[", "]]", "<<", "<<-",
    "<<<", "<(", ">(", "|", "||", "&&", ";", ";;", "&", "\n", "#", "EOF", "'EOF'", "E\"O\"F",
    "$'", '$"', "{", "(", " ", "\t", "*", "?", "[", "~", "=", "a[", "$_", "${!", "@P", "-v",
    "\x00", "\x01", "\x7f", "\udcff", "é\\", "\u202e", "time", "!", "if", "then", "fi", "done",
    "function", "coproc", "case", "esac", "2>", ">&", "{fd}>", "bash -c ", "eval ", "exec ",
]  # fmt: skip
RULES = [
    "bash(git diff *)", "bash(git log:*)", "bash(echo 'a b' \"c\" \\d)", "bash(*)", "bash(git * main)",
    "edit(src/**)", "read", "mcp:github/*", "mcp:git", "grep(**/*.py)", "bash", "bash(x\\ y *)",
    "write(tests/[a-z]*.py)", "fetch(https://*)", "*", "bash(npm run test*)",
]  # fmt: skip
RULE_TOKENS = [
    "(",
    ")",
    "*",
    "**",
    "'",
    '"',
    "\\",
    ":",
    ":*",
    "/",
    " ",
    "\x00",
    "é",
    "[",
    "]",
    "{",
    "mcp:",
    "?",
    "",
]


class _TooSlow(Exception):
    pass


@contextlib.contextmanager
def _at_most(seconds: float) -> Iterator[None]:
    """A case that takes longer fails instead of hanging the suite (a loop in the
    recognizer was found this way)."""

    def expire(signum: int, frame: object) -> None:
        raise _TooSlow(f"no decision within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _mutate(rng: random.Random, text: str, tokens: list[str]) -> str:
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        at = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.45:
            text = text[:at] + rng.choice(tokens) + text[at:]
        elif roll < 0.6 and text:
            end = min(len(text), at + rng.randrange(1, 8))
            text = text[:at] + text[end:]
        elif roll < 0.7 and text:
            end = min(len(text), at + rng.randrange(1, 12))
            text = text[:at] + text[at:end] * rng.randrange(2, 6) + text[end:]
        elif roll < 0.8:
            depth = rng.choice((3, 40, 300))
            opening = rng.choice(("$(", "( ", "{ ", '"$(', "`"))
            closing = {"$(": ")", "( ": " )", "{ ": "; }", '"$(': ')"', "`": "`"}[opening]
            text = opening * depth + text + closing * depth
        elif roll < 0.9:
            text = text[:at]
        else:
            text = text[:at] + chr(rng.randrange(0x20, 0x3000)) + text[at:]
    return text


def _seed_lines(rng: random.Random) -> list[str]:
    generator = LineGenerator(random.Random(rng.random()), "/tmp/fuzz")
    attacks = [line for lines in ITEMS.values() for line in lines]
    return [*COMMON, *attacks, *(generator.line() for _ in range(200))]


def test_the_checker_never_raises_on_mutated_lines(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    seeds = _seed_lines(rng)
    guarded = PermissionPolicy.from_spec(
        PermissionsSpec(
            default="allow", allow=("bash(echo *)", "bash(cat *)", "bash(git *)"),
            deny=("bash(rm *)", "bash(touch *)"), ask=("bash(git push *)",),
        ),
        workspace=tmp_path,
    )  # fmt: skip
    bypass = guarded.with_mode("bypass")
    failures: list[str] = []
    for case in range(CASES):
        line = _mutate(rng, rng.choice(seeds), TOKENS)
        try:
            with _at_most(30):
                parsed = parse_command_line(line)
                decision = guarded.decide("bash", {"command": line}, None)
                bypassed = bypass.decide("bash", {"command": line}, None)
                if parsed.hidden:
                    assert decision.verdict != "allow", decision
                    assert bypassed.verdict == "deny" or decision.verdict == "deny", bypassed
                if decision.rule is not None and decision.verdict == "allow":
                    assert parsed.allowable and not any(
                        p.startswith("not verifiable") for p in parsed.problems
                    )
        except Exception:
            failures.append(f"case {case}: {line!r}\n{traceback.format_exc(limit=6)}")
    assert not failures, f"{len(failures)} of {CASES} lines failed:\n" + "\n".join(failures[:5])


def test_rules_fail_only_with_a_rule_error(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    failures: list[str] = []
    calls = [
        ("bash", {"command": "git diff HEAD -- src"}),
        ("bash", {"command": "echo $x *.py"}),
        ("edit", {"path": "src/a.py"}),
        ("grep", {"path": "."}),
        ("read", {"path": "../outside"}),
        ("fetch", {"url": "https://example.com"}),
    ]
    for case in range(CASES):
        rule = _mutate(rng, rng.choice(RULES), RULE_TOKENS)
        verdict = rng.choice(("allow", "ask", "deny"))
        try:
            try:
                policy = PermissionPolicy.from_spec(
                    PermissionsSpec(**{verdict: (rule,)}), workspace=tmp_path
                )
            except PermissionRuleError as exc:
                assert isinstance(exc, AssemblerError) and str(exc)
                continue
            for tool, arguments in calls:
                policy.decide(tool, arguments, None)
                policy.session_rules_for(tool, arguments, None)
        except Exception:
            failures.append(f"case {case}: {rule!r}\n{traceback.format_exc(limit=6)}")
    assert not failures, f"{len(failures)} of {CASES} rules failed:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("size", [10_000, 30_000])
def test_long_lines_are_decided(tmp_path: Path, size: int) -> None:
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=("bash(echo *)",), deny=("bash(rm *)",)),
        workspace=tmp_path,
    )
    word = "a'b'\"c$x\"$(echo d) "
    line = "echo " + word * (size // len(word))
    assert policy.decide("bash", {"command": line}, None).verdict == "allow"
    assert policy.decide("bash", {"command": line + "; rm x"}, None).verdict == "deny"
    too_long = "echo " + "a" * 300_000
    decision = policy.decide("bash", {"command": too_long}, None)
    assert decision.verdict == "ask" and "longer than 256 KiB" in decision.reason


@pytest.mark.parametrize(
    "line",
    ["$[" * 20_000, "<<-A " * 8_000, "f() " * 8_000, "cat <<A " * 20_000 + "\n"],
    ids=["arithmetic", "stripped here-documents", "functions", "here-documents"],
)
def test_lines_tree_sitter_reads_slowly_are_decided(tmp_path: Path, line: str) -> None:
    """tree-sitter's time grows faster than the length on these: its reading is cut
    short (and the line unverifiable) rather than holding the agent for minutes."""
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="allow", allow=("bash(cat *)",), deny=("bash(rm *)",)),
        workspace=tmp_path,
    )
    with _at_most(60):
        decision = policy.decide("bash", {"command": line}, None)
    assert decision.verdict == "ask" and "not verifiable" in decision.reason
