"""A recorded session replayed against the agent as it is now, compared at every request.

`ReplayProvider` is a model provider: before it answers a request with the session's
next reply, it compares the request with what the session recorded there
(`diagnose.compare_request`) and tells the shared `Diagnosis`. In `strict` mode the
first divergence stops the run (`ReplayDivergence`, whose message locates it); in
`outcome` mode the replay goes on and the divergences are notes.

The requests are classified first: a compaction's summary request (its own system
prompt), a turn (the system prompt the agent rendered for it), or a side request
(memory extraction or selection asking the model on the side, which a session does
not record): a side request gets an empty answer and is counted, never compared.

Sub-agents: each recorded sub-agent session is a replay of its own (`ReplayTree`),
chosen when the child's first request shows its task; `install` points an agent's
sub-agents (and theirs, as they are built) at them.

`{workspace}` and `{repo}` in the recorded tool calls stand for the paths of this run.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import ContextOverflowError, ConversionError, ManifestError, ReplayDivergence
from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    StreamEvent,
    ToolCall,
    ToolSchema,
    UserMessage,
)
from assembler.providers.script_file import ScriptStep, load_script
from assembler.providers.scripted import stream_reply
from assembler.regress.diagnose import (
    Divergence,
    compare_prompt,
    compare_request,
    with_sources,
)
from assembler.regress.expected import ChildLink, Expected, PromptRecord, load_expected
from assembler.regress.scrub import Scrubber
from assembler.regress.texts import Normalizer
from assembler.runner.compaction import SUMMARY_SYSTEM_PROMPT

if TYPE_CHECKING:
    from assembler.agent.agent import Agent

Sections = Callable[[str], Sequence[tuple[str, str]] | None]
Describe = Callable[[str, Sequence[ToolSchema]], Mapping[str, Any]]
MODES = ("strict", "outcome")


@dataclass
class Diagnosis:
    """Every divergence of one replay (its sub-agents' included), in the order found."""

    mode: str = "strict"
    divergences: list[Divergence] = field(default_factory=list)
    side_requests: int = 0
    replies: int = 0

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def evidence(self) -> str:
        """One line for the results: the first divergence, and how many there were."""
        first = self.first
        if first is None:
            side = (
                f"; {self.side_requests} side request(s) answered empty"
                if self.side_requests
                else ""
            )
            return f"{self.replies} replies, every request as recorded{side}"
        more = len(self.divergences) - 1
        return first.message + (f" (and {more} more)" if more else "")


@dataclass
class ReplayTree:
    """One recorded session's replay: its steps and expected inputs, and the sessions
    of its sub-agents not taken yet."""

    steps: list[ScriptStep]
    expected: Expected
    base: Path
    agent_path: str = ""
    taken: set[int] = field(default_factory=set)

    @classmethod
    def load(cls, script: Path, expected: Path, agent_path: str = "") -> ReplayTree:
        try:
            steps = load_script(script)
        except ManifestError as e:
            raise ConversionError(f"the replay {script}: {e.issues[0].format()}") from e
        loaded = load_expected(expected)
        if len(loaded.steps) != len(steps):
            raise ConversionError(
                f"{script} has {len(steps)} steps and {expected} expects {len(loaded.steps)}: "
                "they come from the same session; convert it again"
            )
        return cls(steps, loaded, expected.parent, agent_path)

    def take_child(self, path: str, tool: str, task: str) -> ReplayTree | None:
        """The first sub-agent session not replayed yet of this sub-agent, preferring
        one whose task is `task` (calls that ran side by side may start in any order)."""
        links = [
            (i, link)
            for i, link in enumerate(self.expected.children)
            if i not in self.taken and (link.agent_path == path or link.tool == tool)
        ]
        chosen = next(((i, lk) for i, lk in links if lk.task == task), links[0] if links else None)
        if chosen is None:
            return None
        index, link = chosen
        self.taken.add(index)
        return ReplayTree.load(self.base / link.script, self.base / link.expected, link.agent_path)

    @property
    def children(self) -> tuple[ChildLink, ...]:
        return self.expected.children


class ReplayProvider:
    """Answers with the recorded replies, comparing each request first."""

    def __init__(
        self,
        tree: ReplayTree | Callable[[str], ReplayTree | None],
        *,
        diagnosis: Diagnosis,
        places: Mapping[str, str],
        scrubber: Scrubber | None = None,
        name: str = "scripted:replay",
    ) -> None:
        self._tree = tree if isinstance(tree, ReplayTree) else None
        self._choose = None if isinstance(tree, ReplayTree) else tree
        self.diagnosis = diagnosis
        self.places = dict(places)
        """Placeholder -> this run's path (`{workspace}` -> the task's copy)."""
        self.scrubber = scrubber
        self._name = name
        self._used = 0
        self._overflowed: set[int] = set()
        self.sections: Sections | None = None
        self.describe: Describe | None = None
        self._prompts: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[str]]] = {}
        self._normalize: Normalizer | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def tree(self) -> ReplayTree | None:
        return self._tree

    def bind(self, sections: Sections, describe: Describe | None = None) -> None:
        """How to split a system prompt the agent rendered into its sections, and
        where each section and tool schema comes from now (to name it)."""
        self.sections = sections
        self.describe = describe

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        tree = self._resolve(request)
        kind = self._kind(request)
        if kind == "side":
            self.diagnosis.side_requests += 1
            async for event in stream_reply(AssistantMessage(text="")):
                yield event
            return
        index = self._used
        if index >= len(tree.steps):
            self._diverge(
                tree, [Divergence(f"turn {index + 1}", "the agent asked the model again after the session's last reply")], stop=True
            )  # fmt: skip
        step = tree.expected.steps[index]
        found: list[Divergence] = []
        if step.kind == "summary" and kind == "turn":
            if step.reason == "overflow" and index not in self._overflowed:
                self._overflowed.add(index)
                raise ContextOverflowError("replay: this request was too long for the model")
            found.append(Divergence(step.label, f"the session compacted here ({step.reason}); the agent sent its next turn instead"))  # fmt: skip
        elif step.kind == "turn" and kind == "summary":
            found.append(Divergence(step.label, "the agent compacted the conversation here; the session did not"))  # fmt: skip
        elif step.kind == "turn":
            prompt = tree.expected.prompts[step.prompt] if step.prompt is not None else None
            sections = self.sections(request.system) if self.sections is not None else None
            normalize = self._normalizer(tree)

            def check_prompt(record: PromptRecord, request: ModelRequest) -> list[str]:
                return self._compare_prompt(record, request, sections, normalize)

            found = compare_request(
                step, prompt, request, sections, normalize, check_prompt=check_prompt
            )
            if found and self.describe is not None and sections is not None:
                found = with_sources(found, self.describe(request.system, request.tools))
        if found:
            self._diverge(tree, found, stop=self.diagnosis.mode == "strict")
        self._used += 1
        self.diagnosis.replies += 1
        reply = tree.steps[index]
        async for event in stream_reply(
            self._placed(reply.message), reply.usage, reply_number=self._used
        ):
            yield event

    def _compare_prompt(
        self,
        record: PromptRecord,
        request: ModelRequest,
        sections: Sequence[tuple[str, str]] | None,
        normalize: Normalizer,
    ) -> list[str]:
        """`compare_prompt`, once per prompt, system text and tool list: the turns of
        a run send the same ones, and comparing them is most of a turn's cost."""
        # the registry makes new schemas each request, around the same parameters
        kept = (record, request.settings, *(tool.parameters for tool in request.tools))
        key = (
            request.system,
            *map(id, kept),
            *((tool.name, tool.description) for tool in request.tools),
        )
        known = self._prompts.get(key)
        if known is not None and all(a is b for a, b in zip(known[0], kept, strict=True)):
            return known[1]
        found = compare_prompt(record, request, sections, normalize)
        self._prompts[key] = (kept, found)  # kept alive, so their ids stay theirs
        return found

    def _resolve(self, request: ModelRequest) -> ReplayTree:
        if self._tree is not None:
            return self._tree
        assert self._choose is not None
        task = next((m.content for m in request.messages if isinstance(m, UserMessage)), "")
        chosen = self._choose(self._unplaced(task))
        if chosen is None:
            divergence = Divergence(
                "turn 1", "the agent started a sub-agent more often than the session did"
            )
            self.diagnosis.divergences.append(divergence)
            raise ReplayDivergence(divergence.message)
        self._tree = chosen
        return chosen

    def _kind(self, request: ModelRequest) -> str:
        """`summary`, `turn`, or `side`: a request with neither the agent's rendered
        prompt nor tools (memory selection or extraction asking the model)."""
        if request.system == SUMMARY_SYSTEM_PROMPT and not request.tools:
            return "summary"
        if self.sections is None or self.sections(request.system) is not None:
            return "turn"
        return "turn" if request.tools else "side"

    def _diverge(self, tree: ReplayTree, found: list[Divergence], *, stop: bool) -> None:
        tagged = [replace(d, agent=tree.agent_path) for d in found]
        self.diagnosis.divergences.extend(tagged)
        if stop:
            raise ReplayDivergence(tagged[0].message)

    def _normalizer(self, tree: ReplayTree) -> Normalizer:
        if self._normalize is None:
            actual = {path: placeholder for placeholder, path in self.places.items() if path}
            actual.update(
                {os.path.realpath(path): placeholder for path, placeholder in list(actual.items())}
            )
            self._normalize = Normalizer(actual, tree.expected.rules, self.scrubber)
        return self._normalize

    def _placed(self, message: AssistantMessage) -> AssistantMessage:
        """The recorded reply with `{workspace}`/`{repo}` in its calls made this run's."""
        if not message.tool_calls:
            return message
        calls = tuple(
            replace(call, arguments=self._place(dict(call.arguments)), raw_arguments="")
            if call.arguments is not None
            else call
            for call in message.tool_calls
        )
        calls = tuple(_raw(call) for call in calls)
        return replace(message, tool_calls=calls)

    def _place(self, value: Any) -> Any:
        if isinstance(value, str):
            for placeholder, path in self.places.items():
                value = value.replace(placeholder, path)
            return value
        if isinstance(value, Mapping):
            return {k: self._place(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._place(v) for v in value]
        return value

    def _unplaced(self, text: str) -> str:
        for placeholder, path in self.places.items():
            if path:
                text = text.replace(path, placeholder)
        return text


def _raw(call: ToolCall) -> ToolCall:
    if call.raw_arguments or call.arguments is None:
        return call
    return replace(call, raw_arguments=json.dumps(dict(call.arguments), ensure_ascii=False))


def install(agent: Agent, provider: ReplayProvider) -> None:
    """Compare `agent`'s requests through `provider`, and give each sub-agent it builds
    (and each of theirs) the replay of the session the recorded call started."""
    provider.bind(agent.prompt_sections, agent.describe_prompt)
    for subagent in agent.subagents:
        subagent.model = _child_factory(provider, subagent.path, subagent.name)
    team = agent.team
    if team is None:
        return
    build = team.builder

    def builder(manifest: Any, options: Any) -> Any:
        child = build(manifest, options)
        if isinstance(child.provider, ReplayProvider):
            install(child, child.provider)
        return child

    team.builder = builder


def _child_factory(parent: ReplayProvider, path: str, tool: str) -> Callable[[], ReplayProvider]:
    def choose(task: str) -> ReplayTree | None:
        tree = parent.tree
        return tree.take_child(path, tool, task) if tree is not None else None

    def make() -> ReplayProvider:
        return ReplayProvider(
            choose,
            diagnosis=parent.diagnosis,
            places=parent.places,
            scrubber=parent.scrubber,
            name=f"scripted:replay of {path}",
        )

    return make
