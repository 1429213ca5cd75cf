"""`assemble run` with budgets and a reasoning model: `--budget-tokens` and
`--budget-usd` override the manifest, a budget stop exits 3 with the stop in the
final JSON event, reasoning is dimmed on stderr (never stdout), `--hide-reasoning`
hides it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import assemble
from wire.anthropic_server import AnthropicServer
from wire.modeled import Say, anthropic_responder, replies


def manifest(tmp_path: Path, base_url: str, extra: str = "", limits: str = "") -> Path:
    (tmp_path / "notes.txt").write_text("alpha\n", "utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: spender\nidentity: You read.\n"
        f"model: {{provider: anthropic, name: claude-sonnet-4-5, base_url: '{base_url}'{extra}}}\n"
        "tools: {sets: [{builtin: [read]}]}\n"
        f"limits: {{max_turns: 6{limits}}}\n",
        "utf-8",
    )
    return path


def chatty() -> Say:
    return Say(text=" ".join(["word"] * 4_000), calls=[("toolu_1", "read", {"path": "notes.txt"})])


@pytest.mark.parametrize(
    ("flag", "budget"),
    [
        (("--budget-tokens", "2500"), {"budget": "tokens", "limit": 2500}),
        (("--budget-usd", "0.01"), {"budget": "cost_usd", "limit": 0.01}),
    ],
)
def test_a_budget_stop_exits_3_with_the_stop_in_the_final_event(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: tuple[str, str],
    budget: dict[str, object],
) -> None:
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(replies(chatty())))
        # the manifest's own budget is larger: the command line wins
        path = manifest(
            tmp_path, server.base_url, limits=", budget: {tokens: 900000, cost_usd: 50}"
        )
        result = assemble(capsys, "run", str(path), "-p", "talk", "--json", "--no-session", *flag)

    assert result.code == 3, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    end = events[-1]
    assert end["type"] == "run_end" and end["reason"] == "budget"
    assert {k: end["budget"][k] for k in ("budget", "limit")} == budget
    assert end["cost_usd"] > 0  # claude-sonnet-4 is in the price table
    usage = [e for e in events if e["type"] == "usage"]
    assert usage and all(e["cost_usd"] is not None for e in usage)
    assert usage[-1]["total_cost_usd"] == pytest.approx(end["cost_usd"])
    assert all(body["max_tokens"] < 2500 for body in server.bodies)


def test_reasoning_is_dimmed_on_stderr_and_can_be_hidden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thinking = ", max_tokens: 8000, thinking: {budget_tokens: 2000}"
    say = Say(thinking="Pondering the notes deeply.", text="The answer.")
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(replies(say)))
        path = manifest(tmp_path, server.base_url, thinking)
        shown = assemble(capsys, "run", str(path), "-p", "think", "--no-session")
        hidden = assemble(
            capsys, "run", str(path), "-p", "think", "--no-session", "--hide-reasoning"
        )

    assert shown.code == 0 and hidden.code == 0
    assert shown.out.strip() == hidden.out.strip() == "The answer."
    # a priced model: what the run cost, on stderr after the answer
    assert re.search(r"cost \$0\.\d{4} · [\d,]+ tokens", shown.err), shown.err
    assert "Pondering the notes deeply." in shown.err
    assert "Pondering" not in hidden.err


def test_the_session_file_records_cost_and_the_budget_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "sessions"
    with AnthropicServer() as server:
        server.respond_with(anthropic_responder(replies(chatty())))
        path = manifest(tmp_path, server.base_url, limits=", budget: {tokens: 2500}")
        result = assemble(capsys, "run", str(path), "-p", "talk", "--session-dir", str(sessions))

    assert result.code == 3
    (session,) = [p for p in sessions.rglob("*.jsonl") if ".trace." not in p.name]
    entries = [json.loads(line) for line in session.read_text().splitlines()]
    priced = [e for e in entries if e.get("type") == "message" and "cost_usd" in e]
    assert priced and all(e["cost_usd"] > 0 and e["usage"]["output_tokens"] > 0 for e in priced)
    (end,) = [
        e["event"] for e in entries if e.get("type") == "event" and e["event"]["type"] == "run_end"
    ]
    assert end["reason"] == "budget"
    assert end["budget"]["budget"] == "tokens" and end["cost_usd"] == pytest.approx(
        sum(e["cost_usd"] for e in priced)
    )
