"""assembler.testing: the models users write their agent tests with."""

from __future__ import annotations

import asyncio

import pytest
from wire.drive import run

from assembler.errors import ProviderError
from assembler.messages import AssistantMessage, ModelRequest, ToolCall, UserMessage
from assembler.providers.base import ModelProvider
from assembler.testing import FunctionModel, ScriptedModel, reply, text, tool_call


def request(content: str = "go") -> ModelRequest:
    return ModelRequest(model="test", system="sys", messages=(UserMessage(content),))


def test_helpers_build_steps() -> None:
    assert text("hi") == AssistantMessage(text="hi")
    assert tool_call("read", path="a", name="n") == AssistantMessage(
        tool_calls=(ToolCall("", "read", {"path": "a", "name": "n"}),)
    )
    step = reply("Checking. ", tool_call("a"), tool_call("b", x=1))
    assert step.text == "Checking. "
    assert [c.name for c in step.tool_calls] == ["a", "b"]


def test_scripted_model_replays_and_records_requests() -> None:
    model = ScriptedModel(
        [tool_call("read", path="README.md"), {"text": "Done."}, AssistantMessage(text="Bye")]
    )
    assert isinstance(model, ModelProvider)

    outcomes = run(lambda: model, request("a"), request("b"), request("c"))

    first = outcomes[0].done.message
    assert first.tool_calls == (ToolCall("call_1_1", "read", {"path": "README.md"}),)
    assert [o.done.message.text for o in outcomes[1:]] == ["Done.", "Bye"]
    assert [r.messages[0] for r in model.requests] == [
        UserMessage("a"),
        UserMessage("b"),
        UserMessage("c"),
    ]
    assert model.last_request is model.requests[-1]
    model.assert_consumed()


def test_assert_consumed_lists_the_unused_steps() -> None:
    model = ScriptedModel(["first", {"id": "wrap-up", "text": "second"}, tool_call("read")])
    run(lambda: model, request())

    with pytest.raises(AssertionError) as info:
        model.assert_consumed()

    message = str(info.value)
    assert "2 of 3 scripted steps were never used" in message
    assert "asked 1 times" in message
    assert "step 2: [wrap-up] text 'second'" in message
    assert "step 3: read(...)" in message


def test_context_manager_fails_when_steps_remain() -> None:
    with pytest.raises(AssertionError, match="1 of 1 scripted steps were never used"):  # noqa: SIM117
        with ScriptedModel(["never asked"]):
            pass


def test_context_manager_passes_when_consumed_and_keeps_the_real_error() -> None:
    with ScriptedModel(["ok"]) as model:
        run(lambda: model, request())

    with pytest.raises(KeyError), ScriptedModel(["unused"]):
        raise KeyError("the test's own failure is not hidden")


def test_async_context_manager() -> None:
    async def main() -> None:
        async with ScriptedModel(["hello"]) as model:
            events = [e async for e in model.stream(request())]
            assert events[-1].message.text == "hello"  # type: ignore[union-attr]

    asyncio.run(main())

    async def unused() -> None:
        async with ScriptedModel(["hello"]):
            pass

    with pytest.raises(AssertionError):
        asyncio.run(unused())


def test_exhausted_script_is_a_provider_error() -> None:
    model = ScriptedModel([])
    (outcome,) = run(lambda: model, request())
    assert isinstance(outcome.error, ProviderError)
    assert "script exhausted after 0 replies" in str(outcome.error)
    with pytest.raises(AssertionError, match="received no request"):
        _ = ScriptedModel([]).last_request


def test_function_model_with_a_sync_function() -> None:
    def echo(req: ModelRequest) -> str:
        (message,) = req.messages
        assert isinstance(message, UserMessage)
        return f"you said {message.content}"

    model = FunctionModel(echo)
    assert isinstance(model, ModelProvider)
    assert model.name == "function:echo"

    first, second = run(lambda: model, request("hi"), request("there"))

    assert first.done.message.text == "you said hi"
    assert "".join(second.deltas) == "you said there"
    assert len(model.requests) == 2


def test_function_model_with_an_async_function_returning_tool_calls() -> None:
    async def decide(req: ModelRequest) -> AssistantMessage:
        await asyncio.sleep(0)
        return reply("Looking.", tool_call("read", path=req.system))

    (outcome,) = run(lambda: FunctionModel(decide, name="fn:test"), request())

    message = outcome.done.message
    assert message.text == "Looking."
    assert message.tool_calls == (ToolCall("call_1_1", "read", {"path": "sys"}),)
