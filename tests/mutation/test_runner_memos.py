"""The mutation runner empties the package's memos before every test (`clear_memos`).

A memo runs its function's body for the first caller in a process only. Without the
clearing, the baseline credited a memoised body to the first test that happened to
ask, a mutant there ran against that test alone, and the sandbox's class (built once
per process) survived mutants its tests do notice (issue 28, round 6).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from _mutation_run import MEMOS, clear_memos  # noqa: E402

LIMITS = textwrap.dedent(
    """
    from functools import cache


    @cache
    def limit() -> int:
        return 3


    def allowed(size: int) -> bool:
        return size <= limit()
    """
).lstrip()

# The first test asks first (and fills the memo) but cannot tell 3 from 4; only the
# second one can, and it reaches `return 3` only when the memo is empty again.
TESTS = textwrap.dedent(
    """
    from memopkg.limits import allowed


    def test_a_small_size_is_allowed():
        assert allowed(1)


    def test_the_limit_is_three():
        assert allowed(3)
        assert not allowed(4)
    """
)

RUN = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    from pathlib import Path
    from _mutants import mutants
    from _mutation_run import run_module

    path = "memopkg/limits.py"
    found = [m for m in mutants(path, Path(path).read_text()) if m.after == "return 4"]
    outcomes, baseline = run_module(path, ["test_limits.py"], found, jobs=1, root=Path.cwd())
    print(json.dumps({
        "outcomes": [[o.mutant.ident, o.status, o.tests] for o in outcomes],
        "reaching": sorted(t for t, lines in baseline.lines_by_test.items() if 6 in lines),
    }))
    """
)


def test_a_mutant_inside_a_memoised_function_is_run_against_every_test_that_needs_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "memopkg").mkdir()
    (tmp_path / "memopkg" / "__init__.py").write_text("")
    (tmp_path / "memopkg" / "limits.py").write_text(LIMITS)
    assert LIMITS.splitlines()[5].strip() == "return 3"  # line 6 of the file
    (tmp_path / "test_limits.py").write_text(TESTS)
    (tmp_path / "run.py").write_text(RUN)
    done = subprocess.run(
        [sys.executable, "run.py", str(REPO / "bench"), str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["outcomes"] == [["memopkg/limits.py:6: return 3 -> return 4", "killed", 2]]
    assert report["reaching"] == [
        "test_limits.py::test_a_small_size_is_allowed",
        "test_limits.py::test_the_limit_is_three",
    ]


def test_the_packages_memos_are_found_and_emptied() -> None:
    from assembler.prompt import templates

    templates.environment()
    templates.compile_template("{{ x }}")
    assert templates.environment.cache_info().currsize == 1
    emptied = clear_memos("assembler")
    assert templates.environment.cache_info().currsize == 0
    assert templates.compile_template.cache_info().currsize == 0
    assert emptied >= 2 + len(MEMOS)


def test_every_listed_memo_exists_and_can_be_emptied() -> None:
    import importlib

    for dotted in MEMOS:
        owner, _, name = dotted.rpartition(".")
        memo = getattr(importlib.import_module(owner), name)
        assert callable(memo.clear), dotted
