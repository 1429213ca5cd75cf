"""Issue 20: the bash check must see what bash runs, as a property against real bash.

Lines generated from bash's grammar (quoting, here-documents, expansions, arithmetic,
tests, continuations, nesting, and each construct of items 1-7) hide a marker command;
the checker decides them under `bash(echo *)`, `bash(cat *)`, `bash(true)`; every
allowed line runs in real bash exactly as the tool runs it (`tests/security/bash_lines`),
and the test fails when an allowed line ran anything the checker did not see: a marker
file, or any name other than the allowed ones in bash's own trace. The old checker
(tree-sitter's reading) allowed 52 such lines among the first 2,000 of seed 1.

A fixed seed runs in every suite; `test_a_long_run_with_a_fresh_seed` (slow) draws a
new seed each time and prints it: rerun one with `ASSEMBLER_BASH_SEED=<seed>`.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from bash_lines import Report, differential

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real bash")

SEED = 20261201


def _explain(report: Report, seed: int) -> str:
    shown = "\n".join(f"  {line!r}\n    ran: {ran}" for line, ran in report.hidden[:10])
    return f"seed {seed}: {len(report.hidden)} allowed lines ran unseen commands:\n{shown}"


def test_no_allowed_line_runs_a_command_the_checker_did_not_see(tmp_path: Path) -> None:
    report = differential(SEED, 2500, tmp_path)
    assert report.hidden == [], _explain(report, SEED)
    # Not vacuous: many lines are allowed, with the constructs the checker models, and
    # the markers in refused lines do run in bash.
    assert report.allowed >= 200, report
    assert all(report.allowed_with.get(name, 0) >= 5 for name in (
        "here-document", "command substitution", "process substitution", "double quotes",
        "single quotes", "continuation", "parameter", "subshell or group",
    )), str(report.allowed_with)  # fmt: skip
    assert report.refused_fired >= report.refused_run // 8 > 0, report


def test_the_modeled_builtins_run_nothing_unseen(tmp_path: Path) -> None:
    """The same with `printf`, `test`, `[`, `cd`, `:`, `pwd` and `type` allowed too."""
    report = differential(SEED + 1, 800, tmp_path, wide=True)
    assert report.hidden == [], _explain(report, SEED + 1)
    assert report.allowed >= 100, report


@pytest.mark.slow
@pytest.mark.parametrize("wide", [False, True], ids=["rules of the issue", "builtins too"])
def test_a_long_run_with_a_fresh_seed(tmp_path: Path, wide: bool) -> None:
    seed = int(os.environ.get("ASSEMBLER_BASH_SEED") or random.SystemRandom().randrange(10**9))
    print(f"differential bash seed: {seed} (rerun with ASSEMBLER_BASH_SEED={seed})")
    count = int(os.environ.get("ASSEMBLER_BASH_LINES", "6000"))
    report = differential(seed, count, tmp_path, wide=wide)
    assert report.hidden == [], _explain(report, seed)
