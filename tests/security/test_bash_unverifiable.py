"""Issue 20, items 1-9: every way found to run a command no rule allows, end to end.

Each attack line hides `touch MARKER` where the old checker (tree-sitter's reading)
saw none. Each test proves the attack is real (the same line run by bash creates the
marker), then runs it through an agent (a scripted model calls `bash`, the permission
gate decides, nobody can answer): the marker must not exist afterwards. With
`default: allow` and `deny: bash(touch *)` the line must not be allowed either: a
line the checker cannot model is never matched against a deny rule as if it were safe.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assembler import build_agent, load_manifest
from assembler.manifest.model import PermissionsSpec
from assembler.permissions import PermissionPolicy
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="real bash")

M = "touch MARKER"
ALLOW = '  default: ask\n  allow: ["bash(echo *)", "bash(cat *)", "bash(true)"]\n'
DENY = '  default: allow\n  deny: ["bash(touch *)"]\n'

ITEMS = {
    "1 partly quoted here-document delimiter": [
        f'cat <<E"O"F\nx\nEOF\n{M}\nE"O"F\n',
        f"cat <<EO'F'\nEOF\n{M}\nEO'F'\n",
        f'cat <<E""OF\nEOF\n{M}\nE""OF\n',
        f"cat <<$'EOF'\nEOF\n{M}\n$'EOF'\n",
    ],
    "2 unquoted here-document body": [
        f"cat <<EOF\n  $({M})\nEOF\n",
        f"cat <<EOF\nx `{M}` y\nEOF\n",
        f"cat <<EOF\n${{x:-$({M})}}\nEOF\n",
    ],
    "3 substitutions inside parameter expansions": [
        f"echo ${{x:-`{M}`}}",
        f"echo ${{x:-<({M})}}",
        f"echo \"${{x:-'$({M})'}}\"",
    ],
    "4 nested backquotes": [f"echo `echo \\`{M}\\``"],
    "5 arithmetic and subscripts": [
        f"[[ 'a[$({M})]' -eq 0 ]]",
        f"[[ -v 'a[$({M})]' ]]",
        f"[ -v 'a[$({M})]' ]",
        f"test -v 'a[$({M})]'",
        f"echo ${{a['$({M})']}}",
        f"echo $(( 'a[$({M})]' ))",
        f"true 'a[$({M})]'; echo $(( $_ ))",
        f"let 'a[$({M})]'",
        f"printf -v 'a[$({M})]' x",
        f"read 'a[$({M})]' <<< x",
        f"declare 'a[$({M})]=1'",
        f"f() {{ local 'a[$({M})]=1'; }}; f",
    ],
    "6 values evaluated as code": [
        f"true '$({M})'; echo ${{_@P}}",
        f"true 'a[$({M})]'; echo ${{!_}}",
        f"true 'a[$({M})]'; echo $((_))",
        f"true 'a[$({M})]'; echo $_ ${{a[_]}}",
    ],
    "7 line continuation inside a word": [
        "echo ok; tou\\\nch MARKER",
        "echo ok &\\\n& touch MARKER",
        "e\\\ncho `tou\\\nch MARKER`",
    ],
}
CASES = [(item, line) for item, lines in ITEMS.items() for line in lines]


def _agent_runs(workspace: Path, line: str, permissions: str, mode: str = "default") -> str:
    """Run `line` through an agent's bash tool; the tool result the model saw."""
    (workspace / "agent.yaml").write_text(
        "version: 1\nname: attack\nidentity: Test.\ntools: {sets: [bash]}\n"
        f"permissions:\n{permissions}"
    )
    model = ScriptedModel([tool_call("bash", command=line), text("done")])
    manifest = load_manifest(workspace / "agent.yaml")
    agent = build_agent(manifest, provider=model, record_session=False, permission_mode=mode)  # type: ignore[arg-type]

    async def go() -> str:
        async with agent:
            events = [e async for e in agent.stream("go")]
        [result] = [e for e in events if isinstance(e, ToolCallResult)]
        return result.content

    return asyncio.run(go())


def _bash_runs_marker(tmp_path: Path, line: str) -> bool:
    scratch = tmp_path / "control"
    scratch.mkdir()
    bash = shutil.which("bash") or "bash"
    subprocess.run([bash, "-c", line], cwd=scratch, capture_output=True, timeout=30, check=False)
    return (scratch / "MARKER").exists()


@pytest.mark.parametrize(
    ("item", "line"), CASES, ids=[f"{i[:1]}-{n}" for n, (i, _) in enumerate(CASES)]
)
def test_a_hidden_command_is_never_allowed(tmp_path: Path, item: str, line: str) -> None:
    assert _bash_runs_marker(tmp_path, line), f"not an attack: bash runs no marker for {line!r}"
    result = _agent_runs(tmp_path, line, ALLOW)
    assert "needs approval" in result, result
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize(
    ("item", "line"), CASES, ids=[f"{i[:1]}-{n}" for n, (i, _) in enumerate(CASES)]
)
def test_a_deny_rule_is_never_ruled_out_by_a_misreading(
    tmp_path: Path, item: str, line: str
) -> None:
    decision = PermissionPolicy.from_spec(
        PermissionsSpec(default="allow", deny=("bash(touch *)",)), workspace=tmp_path
    ).decide("bash", {"command": line}, None)
    assert decision.verdict in ("deny", "ask"), (line, decision)
    assert decision.unanswered().verdict == "deny"


def test_8_a_line_nested_a_thousand_levels_is_refused_with_a_reason(tmp_path: Path) -> None:
    # 1,000 levels of `$(` in about 3 KB: the old walker died with RecursionError.
    for line in (
        "echo " + "$(" * 1000 + "true" + ")" * 1000,
        "echo " + "$(echo " * 1000 + "x" + ")" * 1000,
        "( " * 1000 + "true" + " )" * 1000,
        "{ " * 1000 + "true; " + "} " * 1000,
        '"$(' * 500 + "touch MARKER" + ')"' * 500,
    ):
        assert 2000 <= len(line) <= 9000
        decision = PermissionPolicy.from_spec(
            PermissionsSpec(default="ask", allow=("bash(echo *)", "bash(true)")),
            workspace=tmp_path,
        ).decide("bash", {"command": line}, None)
        assert decision.verdict == "ask"
        assert "nested more than" in decision.reason, decision
    deep = "echo " + "$(" * 1000 + M + ")" * 1000
    result = _agent_runs(tmp_path, deep, ALLOW)
    assert "needs approval" in result  # refused with a reason; the run went on
    assert not (tmp_path / "MARKER").exists()
    result = _agent_runs(tmp_path, deep, DENY)
    assert "bash(touch *)" in result or "needs approval" in result
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("mode", ["bypass", "deny-asks"])
def test_9_bypass_skips_questions_not_deny_rules(tmp_path: Path, mode: str) -> None:
    line = "echo ok; tou\\\nch MARKER; echo ${x:-`touch MARKER`}"
    assert _bash_runs_marker(tmp_path, line)
    result = _agent_runs(tmp_path, line, DENY, mode)
    assert "cannot be checked against `bash(touch *)`" in result or "denied" in result, result
    assert not (tmp_path / "MARKER").exists()
    # what can be checked still runs under bypass, and a visible deny still denies
    assert _agent_runs(tmp_path, "echo fine", DENY, mode).strip() == "fine"
    assert "denied by the rule `bash(touch *)`" in _agent_runs(tmp_path, M, DENY, mode)
    assert not (tmp_path / "MARKER").exists()


def test_9_bypass_from_the_command_line(tmp_path: Path) -> None:
    """The same through `assemble run --permission-mode bypass` and a scripted replay."""
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: attack\nidentity: Test.\nmodel: scripted:replay.yaml\n"
        f"tools: {{sets: [bash]}}\npermissions:\n{DENY}"
    )
    (tmp_path / "replay.yaml").write_text(
        "- tool_calls:\n    - name: bash\n      arguments:\n"
        '        command: "cat <<E\\"O\\"F\\nEOF\\ntouch MARKER\\nE\\"O\\"F\\n"\n'
        "- text: done\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "run", "agent.yaml", "--trust", "--no-session",
         "--permission-mode", "bypass", "-p", "go"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "cannot be checked against `bash(touch *)`" in done.stderr + done.stdout
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("line", ["touch $x MARKER", "x=; touch MARKER $x", "touch $x$y MARKER"])
def test_an_empty_expansion_is_no_word_for_a_deny_rule(tmp_path: Path, line: str) -> None:
    """An unquoted `$x` that is empty vanishes: `touch $x MARKER` runs `touch MARKER`,
    so an exact deny rule for that command must hold it where nobody is asked (found
    merging issue 20: the deny side filled the hole but kept its space). With a person
    to ask, a line with `$x` is asked about anyway."""
    assert _bash_runs_marker(tmp_path, line)
    deny = '  default: allow\n  deny: ["bash(touch MARKER)"]\n'
    result = _agent_runs(tmp_path, line, deny, "bypass")
    assert "bash(touch MARKER)" in result, result
    assert not (tmp_path / "MARKER").exists()
    for mode in ("default", "deny-asks"):
        assert "needs approval" in _agent_runs(tmp_path, line, deny, mode)
        assert not (tmp_path / "MARKER").exists()
