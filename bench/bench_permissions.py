"""Permission decisions: one call against 10 to 10,000 rules, and bash lines of growing
length.

Issue 14's target: under 50 us for 100 rules, against one `fnmatch` call measured in
the same run. Issue 21: bash decisions grew with the square of the number of rules
(one regular expression alternation of every pattern: 27 ms a decision at 10,000
rules); they must grow linearly. Measured here:

- a `bash` line of four commands (its parse cached, as in a session that repeats
  commands), a decision against N bash rules, two ways: rules naming different
  programs (the usual case: the index looks a command up by its first word) and
  rules all starting with `git` (the worst case: every one is tried);
- the previous matcher, one alternation of all patterns, on the same commands, as
  the named baseline for the growth;
- an `edit` whose path is resolved on a real temporary filesystem, and a `read`
  decided by a bare rule;
- reading a bash line of 100 to 100,000 characters, uncached (the recognizer and
  tree-sitter's second reading), against tree-sitter's parse alone.

Times are the median CPU time of the measuring thread. Run:
`python bench/bench_permissions.py`.
"""

from __future__ import annotations

import fnmatch
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _timing import report

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_command_line
from assembler.permissions.bash import parse_cache_clear
from assembler.permissions.bash_treesitter import treesitter_commands
from assembler.permissions.command_patterns import compile_command_pattern

SIZES = (10, 100, 1000, 10000)
LINE = "git status && git diff HEAD~1 -- src | head -50; python3 -m unittest discover -s tests"
NEEDED = ("bash(git status)", "bash(git diff *)", "bash(head *)", "bash(python3 -m unittest *)")
LENGTHS = (100, 1000, 10000, 100000)


def _bash_rules(count: int, *, same_program: bool) -> PermissionsSpec:
    """`count` bash rules; the ones the line needs come last, so every rule before
    them is a candidate in the worst case."""
    filler = [
        f"bash(git sub{i} *)" if same_program else f"bash(tool{i} run *)"
        for i in range(count - len(NEEDED))
    ]
    return PermissionsSpec(default="ask", allow=(*filler, *NEEDED), deny=("bash(rm *)",))


def _alternation(spec: PermissionsSpec) -> re.Pattern[str]:
    """The previous matcher: every pattern as a regular expression, one alternation."""
    parts = []
    for index, rule in enumerate(spec.allow):
        pattern = compile_command_pattern(rule[5:-1])
        body = ".*".join(re.escape(p) for p in pattern.pieces)
        parts.append(f"(?P<r{index}>{body}{'(?: .*)?' if pattern.tail else ''})")
    return re.compile("|".join(parts), re.DOTALL)


def median_seconds(function: Callable[[], object], *, repeat: int = 200, warmup: int = 5) -> float:
    """The median CPU time of this thread for one call: on a machine shared by many
    jobs, wall time measures the load more than the code."""
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.thread_time()
        function()
        samples.append(time.thread_time() - start)
    return statistics.median(samples)


def _line(length: int) -> str:
    word = "'a b' \"c$x\" $(echo d) e\\ f "
    return ("echo " + word * (length // len(word) + 1))[:length].rstrip("\\ $(")


def main() -> None:
    root = Path(tempfile.mkdtemp())
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/fee.py").write_text("x = 1\n")
    baseline = median_seconds(lambda: fnmatch.fnmatch("src/pkg/fee.py", "src/*"), repeat=2000)
    rows = [("baseline: one fnmatch.fnmatch call", f"{baseline * 1e6:.2f} us")]
    commands = [c.text for c in parse_command_line(LINE).commands]
    first: dict[str, float] = {}
    for size in SIZES:
        spec = _bash_rules(size, same_program=True)
        regex = _alternation(spec)
        old = median_seconds(lambda: [regex.fullmatch(c) for c in commands], repeat=50)  # noqa: B023
        for same in (False, True):
            policy = PermissionPolicy.from_spec(
                _bash_rules(size, same_program=same), workspace=root
            )
            arguments = {"command": LINE}
            assert policy.decide("bash", arguments, None).verdict == "allow"
            seconds = median_seconds(lambda: policy.decide("bash", arguments, None), repeat=200)  # noqa: B023
            name = "rules all `git ...` (worst case)" if same else "rules for other programs"
            first.setdefault(name, seconds)
            rows.append(
                (
                    f"bash decision, {size} {name}",
                    f"{seconds * 1e6:.1f} us (x{seconds / first[name]:.1f} of 10 rules; "
                    f"{seconds / baseline:.0f}x fnmatch)",
                )
            )
        first.setdefault("old", old)
        rows.append(
            (
                f"previous matcher (one alternation), {size} rules, matching only",
                f"{old * 1e6:.1f} us (x{old / first['old']:.1f} of 10 rules)",
            )
        )
    for name, tool, arguments in (
        ("edit src/pkg/fee.py", "edit", {"path": "src/pkg/fee.py"}),
        ("read (bare rule)", "read", {"path": "README.md"}),
    ):
        spec = PermissionsSpec(
            default="ask", allow=("read", "edit(src/**)"), deny=("edit(tests/**)",)
        )
        policy = PermissionPolicy.from_spec(spec, workspace=root)
        seconds = median_seconds(lambda: policy.decide(tool, arguments, None), repeat=500)  # noqa: B023
        rows.append((name, f"{seconds * 1e6:.1f} us ({seconds / baseline:.0f}x fnmatch)"))
    per_char: float | None = None
    for length in LENGTHS:
        line = _line(length)

        def read_uncached() -> None:
            parse_cache_clear()
            parse_command_line(line)  # noqa: B023

        repeat = 20 if length >= 10000 else 100
        seconds = median_seconds(read_uncached, repeat=repeat, warmup=2)
        tree = median_seconds(lambda: treesitter_commands(line), repeat=repeat, warmup=2)  # noqa: B023
        cost = seconds / length
        per_char = per_char or cost
        rows.append(
            (
                f"read a {length:,}-character line, uncached",
                f"{seconds * 1e3:.2f} ms ({cost * 1e9:.0f} ns/char, x{cost / per_char:.2f} of "
                f"the 100-char rate; {seconds / tree:.1f}x tree-sitter alone)",
            )
        )
    cached = median_seconds(lambda: parse_command_line(LINE), repeat=2000)
    rows.append(("read the 4-command line, cached", f"{cached * 1e6:.2f} us"))
    report("permission decisions (median)", rows)


if __name__ == "__main__":
    main()
