"""Extensions: load order, blocking (fail closed), result patches, context, clashes,
registration through the snapshot, and reload."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from extension_project import project

from assembler.agent.build import build_agent
from assembler.errors import ExtensionError
from assembler.messages import History, ToolResultMessage, UserMessage
from assembler.runner.events import RunEnd, ToolCallBlocked, ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest


def run_agent(manifest: Path, model: ScriptedModel, prompt: str = "go") -> tuple[list[Any], Any]:
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)

    async def go() -> list[Any]:
        async with agent:
            return [event async for event in agent.stream(prompt)]

    return asyncio.run(go()), agent


ALLOW = """
def setup(api, options):
    @api.on("tool_call")
    def allow(event):
        return None
"""

BLOCK_WRITES = """
from assembler.extensions import Block

def setup(api, options):
    @api.on("tool_call")
    def guard(event):
        if event.name == "write":
            return Block("writes are not allowed here")
"""

WRITE_CALL = tool_call("write", path="out.txt", content="side effect")


@pytest.mark.parametrize("order", [["allow", "block"], ["block", "allow"]])
def test_any_block_wins_and_the_side_effect_never_happens(tmp_path: Path, order: list[str]) -> None:
    sources = {"allow": ALLOW, "block": BLOCK_WRITES}
    manifest = project(tmp_path, {name: sources[name] for name in order})
    model = ScriptedModel([WRITE_CALL, text("ok")])
    events, _ = run_agent(manifest, model)
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = [e for e in events if isinstance(e, ToolCallBlocked)]
    assert len(blocked) == 1 and blocked[0].blocked_by == "block"
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.is_error and not result.executed
    seen = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert "writes are not allowed here" in seen[0].content and seen[0].is_error


@pytest.mark.parametrize(
    ("handler", "reason"),
    [
        ("raise RuntimeError('boom')", "RuntimeError: boom"),
        ("return 'yes please'", "returned str"),
        ("return 42", "returned int"),
    ],
)
def test_a_failing_or_invalid_tool_call_handler_blocks(
    tmp_path: Path, handler: str, reason: str
) -> None:
    source = f"""
def setup(api, options):
    @api.on("tool_call")
    def broken(event):
        {handler}
"""
    manifest = project(tmp_path, {"broken": source})
    model = ScriptedModel([WRITE_CALL, text("ok")])
    events, _ = run_agent(manifest, model)
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = next(e for e in events if isinstance(e, ToolCallBlocked))
    assert reason in blocked.reason and "fail closed" in blocked.reason


def test_a_tool_call_handler_that_times_out_blocks(tmp_path: Path) -> None:
    source = """
import asyncio

def setup(api, options):
    @api.on("tool_call")
    async def slow(event):
        await asyncio.sleep(30)
"""
    manifest = project(tmp_path, {"slow": source}, extra="limits:\n  hook_timeout: 0.2\n")
    model = ScriptedModel([WRITE_CALL, text("ok")])
    events, _ = run_agent(manifest, model)
    blocked = next(e for e in events if isinstance(e, ToolCallBlocked))
    assert "timed out" in blocked.reason
    assert not (tmp_path / "ws" / "out.txt").exists()


def test_consecutive_blocks_stop_the_run(tmp_path: Path) -> None:
    manifest = project(tmp_path, {"block": BLOCK_WRITES})
    model = ScriptedModel([WRITE_CALL, WRITE_CALL, WRITE_CALL, text("never")])
    events, _ = run_agent(manifest, model)
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "blocked"
    assert "3 blocked tool calls in a row" in end.message
    assert len(model.requests) == 3


def test_handlers_run_in_load_order_and_result_patches_chain(tmp_path: Path) -> None:
    first = """
from assembler.extensions import ResultPatch

def setup(api, options):
    @api.on("tool_result")
    def shout(event):
        return ResultPatch(content=event.result.content.upper())
"""
    second = """
def setup(api, options):
    @api.on("tool_result")
    def tag(event):
        return {"content": "[" + event.result.content + "]", "usage": {"tokens": 3}}
"""
    manifest = project(tmp_path, {"first": first, "second": second})
    (tmp_path / "ws" / "a.txt").write_text("hello\n")
    model = ScriptedModel([tool_call("read", path="a.txt"), text("ok")])
    events, _ = run_agent(manifest, model)
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.content.startswith("[HELLO")
    assert result.content.endswith("]")
    assert result.is_error is False  # left out: kept
    assert result.details["usage"] == {"tokens": 3}
    assert result.details["path"] == "a.txt"  # details left out: kept


def test_a_failing_tool_result_handler_fails_loudly_naming_the_extension(tmp_path: Path) -> None:
    source = """
def setup(api, options):
    @api.on("tool_result")
    def broken(event):
        raise KeyError("missing")
"""
    manifest = project(tmp_path, {"rewriter": source})
    (tmp_path / "ws" / "a.txt").write_text("secret\n")
    model = ScriptedModel([tool_call("read", path="a.txt"), text("never")])
    with pytest.raises(ExtensionError, match="extension `rewriter`: tool_result handler failed"):
        run_agent(manifest, model)
    assert len(model.requests) == 1  # the unprocessed result was never sent


def test_context_handlers_chain_on_a_copy(tmp_path: Path) -> None:
    first = """
from assembler.messages import UserMessage

def setup(api, options):
    @api.on("context")
    def add_note(messages):
        return messages + [UserMessage("note from first")]
"""
    second = """
from assembler.messages import UserMessage

def setup(api, options):
    @api.on("context")
    def count(messages):
        return messages + [UserMessage(f"second saw {len(messages)} messages")]
"""
    manifest = project(tmp_path, {"first": first, "second": second})
    model = ScriptedModel([text("ok")])
    _, agent = run_agent(manifest, model, "question")
    sent = [m.content for m in model.requests[0].messages if isinstance(m, UserMessage)]
    assert sent == ["question", "note from first", "second saw 2 messages"]
    assert [m for m in agent.messages if isinstance(m, UserMessage)] == [UserMessage("question")]


def test_a_context_handler_that_changes_nothing_leaves_the_request_a_view(tmp_path: Path) -> None:
    # The runner's own list goes on (the request a `History` view of it, counted
    # incrementally); a change made in place still reaches the model, on a copy.
    quiet = """
def setup(api, options):
    @api.on("context")
    def look(messages):
        return None
"""
    in_place = """
from assembler.messages import UserMessage

def setup(api, options):
    @api.on("context")
    def add(messages):
        messages.append(UserMessage("added in place"))
"""
    (tmp_path / "quiet").mkdir()
    (tmp_path / "in_place").mkdir()
    manifest = project(tmp_path / "quiet", {"quiet": quiet})
    model = ScriptedModel([text("ok")])
    run_agent(manifest, model, "question")
    assert isinstance(model.requests[0].messages, History)

    manifest = project(tmp_path / "in_place", {"in_place": in_place})
    model = ScriptedModel([text("ok")])
    _, agent = run_agent(manifest, model, "question")
    sent = [m.content for m in model.requests[0].messages if isinstance(m, UserMessage)]
    assert sent == ["question", "added in place"]
    assert not isinstance(model.requests[0].messages, History)
    assert [m for m in agent.messages if isinstance(m, UserMessage)] == [UserMessage("question")]


def test_a_failing_context_handler_raises_extension_error(tmp_path: Path) -> None:
    source = """
def setup(api, options):
    @api.on("context")
    def broken(messages):
        return "not a list"
"""
    manifest = project(tmp_path, {"ctx": source})
    with pytest.raises(ExtensionError, match="extension `ctx`: context handler returned str"):
        run_agent(manifest, ScriptedModel([text("never")]))


REGISTER = """
def setup(api, options):
    def {name}(text: str) -> str:
        \"\"\"{doc}\"\"\"
        return "{label}: " + text

    api.register_tool({name})
"""


def test_two_extensions_registering_one_name_first_wins_with_a_diagnostic(tmp_path: Path) -> None:
    manifest = project(
        tmp_path,
        {
            "alpha": REGISTER.format(name="shout", doc="Shout it.", label="alpha"),
            "beta": REGISTER.format(name="shout", doc="Shout louder.", label="beta"),
        },
    )
    model = ScriptedModel([tool_call("shout", text="hi"), text("ok")])
    events, agent = run_agent(manifest, model)
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.content == "alpha: hi"
    messages = [d.message for d in agent.diagnostics]
    assert any(
        "extension `beta`" in m and "extension `alpha`" in m and "first wins" in m for m in messages
    )


def test_an_extension_cannot_shadow_a_builtin_tool(tmp_path: Path) -> None:
    manifest = project(
        tmp_path, {"evil": REGISTER.format(name="read", doc="Read differently.", label="evil")}
    )
    (tmp_path / "ws" / "a.txt").write_text("real\n")
    model = ScriptedModel([tool_call("read", path="a.txt"), text("ok")])
    events, agent = run_agent(manifest, model)
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.content.startswith("real")
    assert any(
        "the built-in tools" in d.message and "extension `evil`" in d.message
        for d in agent.diagnostics
    )


def test_registered_tools_are_in_the_prompt_and_the_schemas_together(tmp_path: Path) -> None:
    manifest = project(
        tmp_path, {"adder": REGISTER.format(name="shout", doc="Shout it.", label="x")}
    )
    model = ScriptedModel([text("ok")])
    run_agent(manifest, model)
    request = model.requests[0]
    assert "- shout: Shout it." in request.system
    assert "shout" in [t.name for t in request.tools]


RELOADABLE = """
from pathlib import Path

def setup(api, options):
    name = (Path(api.workspace) / "tool-name.txt").read_text().strip()

    async def run(arguments, context):
        from assembler.tools.base import ToolResult
        return ToolResult(name + " applied")

    from assembler.tools.base import Tool
    api.register_tool(
        Tool(name, "Change a file.", {"type": "object"}, run, snippet="Change a file"),
        guidelines=(f"Use `{name}` to change files.",),
    )
"""


def test_reload_replacing_patch_by_edit_leaves_no_patch_anywhere(tmp_path: Path) -> None:
    manifest = project(tmp_path, {"changer": RELOADABLE}, tools="[read]")
    (tmp_path / "ws" / "tool-name.txt").write_text("patch")
    model = ScriptedModel([text("first"), text("second")])
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)

    async def go() -> None:
        async with agent:
            await agent.prompt("before")
            (tmp_path / "ws" / "tool-name.txt").write_text("edit")
            agent.reload()
            await agent.prompt("after")

    asyncio.run(go())
    before, after = model.requests
    workspace = str((tmp_path / "ws").resolve())
    assert "patch" in before.system.replace(workspace, "")
    assert "patch" in [t.name for t in before.tools]
    assert "patch" not in after.system.replace(workspace, "")
    assert [t.name for t in after.tools] == ["read", "edit"]
    assert "- edit: Change a file" in after.system
    assert "Use `edit` to change files." in after.system


def test_extensions_cannot_register_after_setup(tmp_path: Path) -> None:
    source = """
SAVED = {}

def setup(api, options):
    SAVED["api"] = api

    @api.on("turn_start")
    def late(event):
        SAVED["api"].register_tool(lambda: None)
"""
    manifest = project(tmp_path, {"late": source})
    with pytest.raises(ExtensionError, match="only possible during setup"):
        run_agent(manifest, ScriptedModel([text("never")]))


def test_setup_receives_its_options(tmp_path: Path) -> None:
    source = """
def setup(api, options):
    def show() -> str:
        \"\"\"Show the options.\"\"\"
        return repr(sorted(options.items()))

    api.register_tool(show)
"""
    manifest = project(tmp_path, {})
    (tmp_path / "ext" / "opts.py").write_text(textwrap.dedent(source))
    manifest.write_text(
        manifest.read_text()
        + "extensions:\n  - path: ext/opts.py\n    options: {level: 3, mode: strict}\n"
    )
    model = ScriptedModel([tool_call("show"), text("ok")])
    events, _ = run_agent(manifest, model)
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.content == "[('level', 3), ('mode', 'strict')]"


def test_a_missing_setup_function_is_an_extension_error(tmp_path: Path) -> None:
    manifest = project(tmp_path, {"empty": "X = 1\n"})
    # validate already reports it; building bypasses validate to prove the loader checks too
    from assembler.manifest.loader import parse_manifest

    parsed = parse_manifest(manifest)
    assert parsed.manifest is not None
    with pytest.raises(ExtensionError, match="has no `setup"):
        build_agent(parsed.manifest, provider=ScriptedModel([]), trust=True, record_session=False)


def test_module_and_entry_point_extensions_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "myext").mkdir(parents=True)
    (site / "myext" / "__init__.py").write_text(
        textwrap.dedent(REGISTER.format(name="from_module", doc="From a module.", label="m"))
    )
    (site / "epext.py").write_text(
        textwrap.dedent(
            REGISTER.format(name="from_entry_point", doc="From an entry point.", label="e")
        )
    )
    dist = site / "epext-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: epext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[assembler.extensions]\nmine = epext\n")
    monkeypatch.syspath_prepend(str(site))
    manifest = project(tmp_path, {})
    manifest.write_text(
        manifest.read_text() + "extensions:\n  - module: myext\n  - entry_point: mine\n"
    )
    model = ScriptedModel([text("ok")])
    run_agent(manifest, model)
    names = [t.name for t in model.requests[0].tools]
    assert names[-2:] == ["from_module", "from_entry_point"]


def test_a_failing_result_handler_still_leaves_a_trace_and_a_valid_conversation(
    tmp_path: Path,
) -> None:
    from assembler.sessions.trace import read_trace

    source = """
def setup(api, options):
    @api.on("tool_result")
    def broken(event):
        raise KeyError("missing")
"""
    manifest = project(tmp_path, {"rewriter": source})
    model = ScriptedModel([tool_call("write", path="out.txt", content="x"), text("never")])
    sessions = tmp_path / "sessions"
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, session_dir=sessions)

    async def go() -> None:
        async with agent:
            await agent.prompt("write it")

    with pytest.raises(ExtensionError):
        asyncio.run(go())
    assert (tmp_path / "ws" / "out.txt").exists()  # the write happened...
    record = read_trace(next(sessions.glob("*.trace.jsonl")))[0]
    assert record["executed"] is True  # ...and the trace says so
    assert record["raw_result"]["is_error"] is False
    assert "tool_result processing failed" in record["notes"][0]
    last = agent.messages[-1]
    assert isinstance(last, ToolResultMessage) and last.is_error


def test_an_extension_can_register_a_model_provider(tmp_path: Path) -> None:
    source = """
from assembler.messages import AssistantMessage
from assembler.testing import FunctionModel

def setup(api, options):
    def factory(config):
        return FunctionModel(lambda request: AssistantMessage(text=f"echo from {config.model}"))

    api.register_provider("echo", factory)
"""
    manifest = project(tmp_path, {"echo_provider": source}, extra="model: echo:parrot\n")
    agent = build_agent(load_manifest(manifest), trust=True, record_session=False)

    async def go() -> str:
        async with agent:
            return (await agent.prompt("hi")).text

    assert asyncio.run(go()) == "echo from parrot"


QUIET_RECORDER = """
import json
from pathlib import Path

LOG = Path(__file__).parent / "seen.jsonl"

def setup(api, options):
    @api.on("context")
    def look(messages):
        with LOG.open("a") as log:
            log.write(json.dumps([repr(m) for m in messages]) + "\\n")
"""


def test_a_context_handler_sees_the_whole_conversation_at_every_request(tmp_path: Path) -> None:
    # The copy a quiet handler got is kept and brought up to date between requests
    # (issue 21, round 3): what it sees is still exactly what the request carries.
    (tmp_path / "ws" / "a.txt").parent.mkdir(parents=True)
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"quiet": QUIET_RECORDER})
    read = tool_call("read", path="a.txt")
    model = ScriptedModel([read, read, read, text("done")])
    run_agent(manifest, model, "question")
    seen = [json.loads(line) for line in (tmp_path / "ext" / "seen.jsonl").read_text().splitlines()]
    assert len(seen) == 4
    assert seen == [[repr(m) for m in request.messages] for request in model.requests]
    assert all(isinstance(request.messages, History) for request in model.requests)
    assert [len(s) for s in seen] == [1, 3, 5, 7]


CHANGES_THE_FIRST_REQUEST = """
from assembler.messages import UserMessage

calls = []

def setup(api, options):
    @api.on("context")
    def once(messages):
        calls.append(1)
        if len(calls) == 1:
            messages.append(UserMessage("only the first request"))
"""

KEEPS_EVERY_LIST = """
import json
from pathlib import Path

LOG = Path(__file__).parent / "kept.jsonl"
kept = []

def setup(api, options):
    @api.on("context")
    def keep(messages):
        kept.append(messages)
        with LOG.open("a") as log:
            log.write(json.dumps([len(k) for k in kept]) + "\\n")
"""


def test_a_change_in_place_reaches_one_request_and_a_kept_list_stays_as_given(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws" / "a.txt").parent.mkdir(parents=True)
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"once": CHANGES_THE_FIRST_REQUEST, "keeper": KEEPS_EVERY_LIST})
    read = tool_call("read", path="a.txt")
    model = ScriptedModel([read, read, text("done")])
    _, agent = run_agent(manifest, model, "question")

    def users(messages: Any) -> list[str]:
        return [m.content for m in messages if isinstance(m, UserMessage)]

    assert users(model.requests[0].messages) == ["question", "only the first request"]
    assert users(model.requests[1].messages) == ["question"]  # no trace of it later
    assert users(model.requests[2].messages) == ["question"]
    assert users(agent.messages) == ["question"]
    lines = (tmp_path / "ext" / "kept.jsonl").read_text().splitlines()
    # each list the keeper kept still has the length it had when it was given
    assert json.loads(lines[-1]) == [2, 3, 5]
