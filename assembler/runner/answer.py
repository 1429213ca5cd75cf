"""One run's way to its typed answer (the manifest's `output`), for the runner.

The contract (`typed.output.OutputContract`) is compiled once per agent; an `Answer`
lives for one run and keeps the score:

- every request offers the `final_answer` tool and carries the `OutputRequest`, so a
  provider with native structured output may ask for the answer as text instead
  (OpenAI); the tool is forced (`tool_choice`) when it is the only one, and after a
  reply in plain text;
- a `final_answer` call, or a native reply's text, is parsed and validated: a valid
  answer ends the run; an invalid one goes back to the model with every error, up to
  `retries` times, and then the run ends as `output_invalid` with the last errors;
- a reply in plain text where a call was expected is answered once with a request to
  call the tool (not counted: that is how a provider without native structured output
  is asked for it); each later one counts as an invalid answer. A native reply that is
  not JSON at all means the server ignored the format (llama-cpp-python does): the run
  goes on with the tool for the rest of it, once, uncounted.

The `final_answer` call bypasses permission rules and extension guards: it has no side
effect, and a rule that blocked it would leave the agent no way to finish.
"""

from __future__ import annotations

from typing import Any

from assembler.messages import ForcedTool, OutputRequest, ToolCall, ToolChoice, ToolSchema
from assembler.tools.base import ToolResult
from assembler.typed.output import NOT_JSON, OutputContract, Verdict

OUTPUT_INVALID = "output_invalid"
"""The end reason of a run whose answers stayed invalid after every retry."""

ACCEPTED = "Answer accepted; the run ends."
ALREADY = "Not used: an answer was already accepted in this message."


class Answer:
    """The typed answer of one run: what to ask for, and the verdicts so far."""

    def __init__(self, contract: OutputContract) -> None:
        self.contract = contract
        self.retries_left = contract.retries
        self.value: Any = None
        self.accepted = False
        self.failed = False
        self.errors: tuple[str, ...] = ()
        self.native = True
        """Native structured output may be asked for (until a server ignored it)."""
        self._force = False
        self._reminded = False

    @property
    def tool(self) -> str:
        return self.contract.tool

    @property
    def done(self) -> bool:
        return self.accepted or self.failed

    def tool_schema(self) -> ToolSchema:
        return self.contract.tool_schema()

    def request(self) -> OutputRequest:
        return self.contract.request(native=self.native)

    def tool_choice(self, *, alone: bool) -> ToolChoice | None:
        """The tool is forced when it is the only one (answering is all there is to
        do), or after a reply in plain text; None leaves the choice as it was."""
        return ForcedTool(self.tool) if alone or self._force else None

    def note(self) -> str:
        """Why the run failed, for its end event."""
        listed = "; ".join(self.errors)
        attempts = self.contract.retries + 1
        return f"no valid answer after {attempts} attempt{'' if attempts == 1 else 's'}: {listed}"

    # -- answers ---------------------------------------------------------------------------

    def on_call(self, call: ToolCall) -> ToolResult:
        """A `final_answer` call: accepted, or the errors for the model."""
        self._force = False
        if self.done:
            return ToolResult(ALREADY, is_error=self.failed)
        verdict = self.contract.from_arguments(
            call.arguments, raw=call.raw_arguments, problem=call.arguments_error
        )
        if self._judge(verdict):
            return ToolResult(ACCEPTED, details={"output": "accepted"})
        return ToolResult(self._feedback(f"call `{self.tool}` again"), is_error=True)

    def on_text(self, text: str, via: str) -> str | None:
        """The model replied with text and no calls, where the run would end: None when
        it may end (an answer accepted, or none left to try), else the message to send
        back before the next request."""
        if self.done:
            return None
        if via == "native":
            verdict = self.contract.from_text(text)
            ignored = not verdict.valid and verdict.errors[0].startswith(NOT_JSON)
            if ignored and self.native:  # the server ignored the format: the tool from now on
                self.native = False
                self._force = True
                return (
                    f"{verdict.errors[0]}. Give your final answer by calling the "
                    f"`{self.tool}` tool, with the answer as its arguments."
                )
            if self._judge(verdict):
                return None
            return None if self.failed else self._feedback("reply with the corrected JSON")
        self._force = True
        if not self._reminded:
            self._reminded = True
            return (
                f"Now give your final answer by calling the `{self.tool}` tool, with the "
                "answer as its arguments; text is not read as the answer."
            )
        self._judge(
            Verdict(None, (f"the answer came as text; it must be given by calling `{self.tool}`",))
        )
        return None if self.failed else self._feedback(f"call `{self.tool}`")

    def _judge(self, verdict: Verdict) -> bool:
        """Record a verdict; True when the answer was accepted."""
        if verdict.valid:
            self.accepted, self.value, self.errors = True, verdict.value, ()
            return True
        self.errors = verdict.errors
        if self.retries_left > 0:
            self.retries_left -= 1
        else:
            self.failed = True
        return False

    def _feedback(self, what_next: str) -> str:
        listed = "\n".join(f"- {error}" for error in self.errors)
        if self.failed:
            return f"The answer is invalid:\n{listed}\nNo attempts are left; the run ends."
        left = self.retries_left + 1
        return (
            f"The answer does not match the output schema:\n{listed}\n"
            f"Fix every error and {what_next} ({left} attempt{'' if left == 1 else 's'} left)."
        )
