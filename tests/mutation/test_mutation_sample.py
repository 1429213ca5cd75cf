"""Mutation testing in CI: a fixed sample of mutants of each module in `CI_SAMPLE` (the
prompt renderer, the session codec, the permission checker's patterns, matching,
wrappers, policy, bash line reader and path patterns, trust and the files it finds)
must each be killed by the tests (docs/testing.md, "Mutation testing").

`bench/mutation.py --ci` runs in its own process: it forks one child per mutant, which
is only safe in a process without threads (pytest-xdist's workers have some).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from mutation import CI_SAMPLE  # noqa: E402


@pytest.mark.slow
def test_every_sampled_mutant_is_killed() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "mutation.py"), "--ci"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "SURVIVED" not in report
    assert report.count(" killed: 100.0% ") == len(CI_SAMPLE), report
