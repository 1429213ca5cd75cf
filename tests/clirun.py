"""Run `assemble` in-process the way the console script does, capturing everything.

`main()` is where errors become messages and exit codes, so tests go through it; a
traceback escaping it fails the test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from assembler.cli.main import main


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def assemble(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return Outcome(code, captured.out, captured.err)
