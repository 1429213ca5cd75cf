"""Permission decisions: one call against 10, 100 and 1,000 rules.

Target (issue 14): under 50 us for 100 rules, reported against a single `fnmatch`
call measured in the same run. Three calls are timed: a bash line of three commands
(its parse cached, as in a session that repeats commands), an `edit` whose path is
resolved on a real temporary filesystem (the same resolution the tool does), and a
`read` decided by a bare rule. The edit call's time includes the path resolution
the tool itself does (shown alone as a second baseline). Parsing a command line with tree-sitter, uncached, is
reported on its own. Run: `python bench/bench_permissions.py`.
"""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

from _timing import median_seconds, report

from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy, parse_command_line
from assembler.permissions.bash import parse_cache_clear
from assembler.tools.builtin.workspace import resolve_in_workspace

SIZES = (10, 100, 1000)
LINE = "git status && git diff HEAD~1 -- src | head -50; python3 -m unittest discover -s tests"
CALLS = {
    "bash (3 commands, parse cached)": ("bash", {"command": LINE}),
    "edit src/pkg/fee.py": ("edit", {"path": "src/pkg/fee.py"}),
    "read (bare rule)": ("read", {"path": "README.md"}),
}


def _rules(count: int) -> PermissionsSpec:
    """`count` rules of every kind; the ones the calls need come last, so every rule
    before them is tried."""
    filler = []
    for i in range(count - 8):
        kind = i % 4
        if kind == 0:
            filler.append(f"bash(tool{i} run *)")
        elif kind == 1:
            filler.append(f"edit(generated/part{i}/**)")
        elif kind == 2:
            filler.append(f"mcp:server{i}/*")
        else:
            filler.append(f"tool_{i}")
    allow = (
        *filler,
        "read",
        "bash(git status)",
        "bash(git diff *)",
        "bash(head *)",
        "bash(python3 -m unittest *)",
        "edit(src/**)",
    )
    return PermissionsSpec(default="ask", allow=allow, deny=("bash(rm *)", "edit(tests/**)"))


def main() -> None:
    root = Path(tempfile.mkdtemp())
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/fee.py").write_text("x = 1\n")
    baseline = median_seconds(lambda: fnmatch.fnmatch("src/pkg/fee.py", "src/*"), repeat=2000)
    rows = [("baseline: one fnmatch.fnmatch call", f"{baseline * 1e6:.2f} us")]
    resolve = median_seconds(lambda: resolve_in_workspace(root, "src/pkg/fee.py"), repeat=500)
    rows.append(("the edit tool's own path resolution", f"{resolve * 1e6:.1f} us"))
    for name, (tool, arguments) in CALLS.items():
        previous = None
        for size in SIZES:
            policy = PermissionPolicy.from_spec(_rules(size), workspace=root)
            assert policy.decide(tool, arguments, None).verdict == "allow"
            seconds = median_seconds(lambda: policy.decide(tool, arguments, None), repeat=500)  # noqa: B023
            growth = f", x{seconds / previous:.1f} for x10 rules" if previous else ""
            rows.append(
                (
                    f"{name}, {size} rules",
                    f"{seconds * 1e6:.1f} us ({seconds / baseline:.0f}x fnmatch{growth})",
                )
            )
            previous = seconds

    def parse_uncached() -> None:
        parse_cache_clear()
        parse_command_line(LINE)

    parse = median_seconds(parse_uncached, repeat=500)
    cached = median_seconds(lambda: parse_command_line(LINE), repeat=2000)
    rows.append(("parse the bash line, uncached (tree-sitter)", f"{parse * 1e6:.1f} us"))
    rows.append(("parse the bash line, cached", f"{cached * 1e6:.2f} us"))
    report("permission decisions (median)", rows)


if __name__ == "__main__":
    main()
