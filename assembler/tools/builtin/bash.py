"""`bash`: run a shell command in the workspace, and never leave it running.

The command runs as `bash -c` under a supervisor process of its own
(`assembler.tools.processes`), which is a child subreaper: everything the command
starts stays below it, even through `setsid`, a double fork or `nohup`. On a timeout
or a cancelled call the supervisor SIGTERMs every descendant, then SIGKILLs what is
left after a short grace; killing only `bash` (or only its process group) would leave
detached jobs running, and a job holding the output pipe would hang the call. A
background job that still holds the output pipe after `bash` itself exits is stopped
the same way. One that redirected its output (`cmd > log 2>&1 &`) keeps running
until it ends or the assembler exits, whichever is first: nothing a command starts
outlives the assembler process.

The environment is an allowlist (`tool_environment`): the basics from the user's
environment plus what the manifest passes through; the agent builds it into
`ToolContext.env`.

With a sandbox (`ToolContext.sandbox`), the command supervisor confines the command
in the kernel right before `exec` (`assembler.sandbox`), and everything it starts
inherits that; the result's `details["sandbox"]` says how it ran, and a failure the
sandbox likely caused ends with a note saying so (`sandbox.denials`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assembler.tools.arguments import guarded
from assembler.tools.base import Tool, ToolContext, ToolResult


@guarded("bash", ("command", "timeout"))
async def _bash(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    # Imported here for start-up cost: describing the tool (`render --dry-run`)
    # needs none of running it (issue 21).
    from assembler.tools.builtin.bash_run import run_bash

    return await run_bash(args, ctx)


BASH_TOOL = Tool(
    name="bash",
    description=(
        "Run a shell command with `bash -c` in the workspace directory and return its "
        "combined stdout and stderr (the end is kept when long). A non-zero exit code is "
        "reported as an error. Commands are killed, with everything they started, when they "
        "exceed the timeout; background jobs that keep writing to the output are stopped "
        "when the command exits."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": (
                    "Seconds before the command is killed; capped by the agent's tool "
                    "timeout (default 120)."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    execute=_bash,
    snippet="Run a shell command in the workspace (output, exit code; killed on timeout)",
    guidelines=(
        "Use `bash` for builds, tests, git and file operations the other tools do not cover.",
        "Commands do not read stdin; avoid interactive programs and long-running servers.",
    ),
)
