"""An agent's typed inputs and output at run time: the one home front ends ask.

`AgentIO` is built with the agent, from its manifest: the parameters compiled
(`typed.parameters`), the output schema compiled (`typed.output`, once per agent,
never per turn), and the values bound for the runs to come. The CLI, the SDK, RPC,
eval and a parent agent all go through it, so a value is checked the same way
wherever it comes from, and the first message of a run is made in one place:

- a prompt given is the message (`-p`, `agent.prompt("...")`);
- else the `task` template, rendered with the values;
- else, for an agent with parameters (a sub-agent called with arguments), the values
  as a JSON object;
- else there is nothing to say: a `UsageError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assembler.errors import UsageError
from assembler.manifest.model import Manifest
from assembler.prompt.task import render_task
from assembler.tools.registry import ToolRegistry
from assembler.typed.output import OutputContract
from assembler.typed.parameters import Parameters


class AgentIO:
    """The parameters, task and output of one built agent."""

    def __init__(self, manifest: Manifest) -> None:
        self.name = manifest.name
        self.parameters = Parameters(manifest.parameters, agent=manifest.name)
        self.task = manifest.task
        spec = manifest.output
        self.output = (
            OutputContract(spec.schema, retries=spec.retries, description=spec.description)
            if spec is not None
            else None
        )
        self.values: dict[str, Any] | None = None
        """The values bound for the next runs (None: not yet; defaults at the first)."""

    def bind(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """Check `given` and fill in defaults; the values of the next runs. Raises
        `ParameterError` listing every problem."""
        self.values = self.parameters.bind(given)
        return self.values

    def current(self) -> dict[str, Any]:
        """The values bound, binding the defaults first if nothing was given yet."""
        return self.values if self.values is not None else self.bind(None)

    def first_message(self, prompt: str | None) -> str:
        """The user message a run starts with (see the module docstring)."""
        if prompt is not None:
            return prompt
        values = self.current()
        if self.task is not None:
            return render_task(self.task, values)
        if self.parameters:
            return json.dumps(values, ensure_ascii=False, indent=2)
        raise UsageError(f"agent `{self.name}` has no `task:`; give it a prompt to run")

    def schema(self) -> dict[str, Any]:
        """The agent's interface as JSON Schemas, for programs that call it
        (`assemble schema --io`): its parameters and its output (null without one)."""
        return {
            "name": self.name,
            "parameters": self.parameters.input_schema(),
            "output": dict(self.output.schema) if self.output is not None else None,
        }


def check_output_tool(registry: ToolRegistry, name: str) -> None:
    """The output tool's name must be free: a tool of the same name could never be
    called (the run reads every call of that name as the answer)."""
    tool = registry.get(name)
    if tool is not None:
        raise UsageError(
            f"the tool `{name}` ({tool.source}) has the name of the tool an agent with "
            f"`output:` answers with; rename it"
        )
