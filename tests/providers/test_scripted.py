"""ScriptedProvider and the YAML script format."""

from __future__ import annotations

from pathlib import Path

import pytest
from wire.drive import run

from assembler.errors import ManifestError, ProviderError
from assembler.messages import AssistantMessage, ModelRequest, ToolCall, Usage, UserMessage
from assembler.providers.base import ModelProvider
from assembler.providers.script_file import check_script
from assembler.providers.scripted import ScriptedProvider, load_script, parse_steps, split_text

REQUEST = ModelRequest(model="demo", system="sys", messages=(UserMessage("go"),))

SCRIPT = """\
# a replay of a short session
- text: "Let me look at the readme first."
  tool_calls:
    - {name: read, arguments: {path: README.md}}
    - {name: read, id: my_id, arguments: {path: docs/index.md}}
- id: final
  text: "It is a README."
  usage: {input_tokens: 120, output_tokens: 8}
"""


def write(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_script_and_replay_in_order(tmp_path: Path) -> None:
    steps = load_script(write(tmp_path, SCRIPT))
    provider = ScriptedProvider(steps, name="scripted:script.yaml")
    assert isinstance(provider, ModelProvider)

    first, second, third = run(lambda: provider, REQUEST, REQUEST, REQUEST)

    assert len(first.deltas) > 1, "text is streamed in several deltas"
    assert "".join(first.deltas) == "Let me look at the readme first."
    assert first.done.message.tool_calls == (
        ToolCall("call_1_1", "read", {"path": "README.md"}, raw_arguments='{"path": "README.md"}'),
        ToolCall(
            "my_id", "read", {"path": "docs/index.md"}, raw_arguments='{"path": "docs/index.md"}'
        ),
    )
    assert first.done.stop_reason == "tool_calls"
    assert second.done.message == AssistantMessage(text="It is a README.")
    assert (second.done.usage.input_tokens, second.done.usage.output_tokens) == (120, 8)
    assert isinstance(third.error, ProviderError)
    assert "script exhausted after 2 replies" in str(third.error)
    assert str(third.error).startswith("scripted:script.yaml: ")
    assert provider.requests == [REQUEST, REQUEST, REQUEST]


def test_string_arguments_replay_a_malformed_call() -> None:
    provider = ScriptedProvider([{"tool_calls": [{"name": "read", "arguments": '{"path": '}]}])

    (outcome,) = run(lambda: provider, REQUEST)

    (call,) = outcome.done.message.tool_calls
    assert call.arguments is None
    assert call.raw_arguments == '{"path": '
    assert "not valid JSON" in call.arguments_error


def test_a_mapping_with_steps_is_accepted(tmp_path: Path) -> None:
    steps = load_script(write(tmp_path, "steps:\n  - text: hi\n  - hello\n"))
    assert [s.message.text for s in steps] == ["hi", "hello"]


MALFORMED_SCRIPTS = [
    ("a: 1\n", "a script must be a list of steps"),
    ("- 42\n", "step 1: must be a mapping with `text` and/or `tool_calls`"),
    (
        "- {txt: hi}\n",
        "step 1: unknown key(s) txt; allowed: text, tool_calls, id, usage, reasoning",
    ),
    ("- {id: x}\n", "step 1: needs `text`, `tool_calls`, or both"),
    ("- {text: [1]}\n", "step 1: `text` must be a string"),
    ("- text: ok\n- {tool_calls: [{arguments: {}}]}\n", "step 2: a tool call needs a `name`"),
    ("- {tool_calls: {name: read}}\n", "`tool_calls` must be a list"),
    ("- {tool_calls: [{name: read, arguments: [1]}]}\n", "`arguments` must be a mapping"),
    ("- {tool_calls: [{name: read, args: {}}]}\n", "unknown key(s) args"),
    ("- {text: hi, usage: {input_tokens: many}}\n", "`usage` must be"),
]
"""Scripts a run refuses, and what the message says."""


@pytest.mark.parametrize(("text", "expected"), MALFORMED_SCRIPTS)
def test_malformed_scripts_name_the_file_and_step(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text, "bad.yaml")
    with pytest.raises(ManifestError) as info:
        load_script(path)
    message = str(info.value)
    assert str(path) in message
    assert expected in message


@pytest.mark.parametrize(("text", "expected"), MALFORMED_SCRIPTS)
def test_check_script_refuses_what_load_script_refuses(
    tmp_path: Path, text: str, expected: str
) -> None:
    # `validate` calls `check_script`: the same issues, at the same places, as a run's
    path = write(tmp_path, text, "bad.yaml")
    with pytest.raises(ManifestError) as loading:
        load_script(path)
    with pytest.raises(ManifestError) as checking:
        check_script(path, "shown.yaml")
    shown = [(i.line, i.column, i.path, i.message) for i in checking.value.issues]
    assert shown == [(i.line, i.column, i.path, i.message) for i in loading.value.issues]
    assert {i.file for i in checking.value.issues} == {"shown.yaml"}


def test_check_script_accepts_what_load_script_accepts(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT + "- {tool_calls: [{name: read, arguments: '{\"a\": '}]}\n")
    assert len(load_script(path)) == 3
    assert check_script(path) is None


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, "- {txt: a}\n- text: fine\n- 7\n")
    with pytest.raises(ManifestError) as info:
        load_script(path)
    issues = info.value.issues
    assert [issue.path for issue in issues] == ["[0].txt", "[0]", "[2]"]
    assert [(issue.line, issue.column) for issue in issues] == [(1, 9), (1, 3), (3, 3)]


def test_invalid_yaml_has_a_line_number(tmp_path: Path) -> None:
    path = write(tmp_path, "- text: ok\n- text: [unclosed\n")
    with pytest.raises(ManifestError) as info:
        load_script(path)
    (issue,) = info.value.issues
    assert issue.file == str(path)
    assert (issue.line, issue.column) == (3, 1)
    assert "YAML syntax error" in issue.message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_script_says_what_a_script_is(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ManifestError, match="the script is empty; a script must be a list of"):
        load_script(path)


def test_missing_script_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"missing\.yaml: error: file not found"):
        load_script(tmp_path / "missing.yaml")


def test_parse_steps_accepts_messages_and_strings() -> None:
    message = AssistantMessage(text="x", tool_calls=(ToolCall("", "t", {}),))
    steps = parse_steps([message, "plain text"])
    assert steps[0].message is message
    assert steps[1].message == AssistantMessage(text="plain text")


@pytest.mark.parametrize("text", ["", "one", "two words", "a b c d e f g", "  spaced  out  "])
def test_split_text_keeps_every_character(text: str) -> None:
    pieces = split_text(text)
    assert "".join(pieces) == text
    assert len(pieces) <= 3
    assert all(pieces)


def test_a_script_can_report_cache_usage() -> None:
    (step,) = parse_steps(
        [{"text": "hi", "usage": {"input_tokens": 9, "output_tokens": 2, "cache_read_tokens": 7}}]
    )
    assert step.usage == Usage(input_tokens=9, output_tokens=2, cache_read_tokens=7)


def test_an_unknown_usage_key_is_refused() -> None:
    with pytest.raises(ManifestError, match="`usage` must be"):
        parse_steps([{"text": "hi", "usage": {"input_tokens": 9, "cached": 7}}])
