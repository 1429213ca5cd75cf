"""Text mode shows what the model was told about a call that never ran, and each error
once (issue 12): an unknown tool had no result line at all, and a provider error was
printed twice (`error: X`, then `run ended: error: X`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble


def _run(shipping: Path, capsys: pytest.CaptureFixture[str], script: str) -> tuple[int, str]:
    (shipping / "agents" / "out.script.yaml").write_text(script)
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--no-session", "--model", "scripted:out.script.yaml", "-p", "hi",
    )  # fmt: skip
    return result.code, result.err


def test_a_call_to_an_unknown_tool_shows_the_error_the_model_got(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(
        shipping,
        capsys,
        "- tool_calls: [{name: patch, arguments: {path: x}}]\n- text: Sorry.\n",
    )
    assert code == 0
    lines = err.splitlines()
    proposed = lines.index("→ patch x")
    assert lines[proposed + 1] == (
        "← patch not run: there is no tool named `patch`; available tools: read, bash, edit"
    )


def test_a_blocked_call_is_shown_once_as_blocked(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(
        shipping,
        capsys,
        "- tool_calls: [{name: edit, arguments: {path: tests/test_fees.py, old_text: a, "
        "new_text: b}}]\n- text: Fine.\n",
    )
    assert code == 0
    assert "✗ edit blocked by protect_tests" in err
    assert "not run" not in err


def test_a_provider_error_is_printed_once(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(
        shipping, capsys, "- tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n"
    )
    assert code == 1
    assert err.count("exhausted") == 1, err
    assert "error: " in err and "run ended" not in err


def test_other_endings_still_say_why(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (shipping / "agents" / "out.script.yaml").write_text(
        "- tool_calls: [{name: read, arguments: {path: AGENTS.md}}]\n" * 3
    )
    result = assemble(
        capsys, "run", str(shipping / "agents" / "shipping-fixer.yaml"), "--trust",
        "--no-session", "--model", "scripted:out.script.yaml", "--max-turns", "1", "-p", "hi",
    )  # fmt: skip
    assert "run ended: max_turns" in result.err
