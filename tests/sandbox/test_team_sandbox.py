"""Sub-agents inherit the parent's sandbox and may only narrow it, also at run time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from escapes import needs_landlock, needs_seccomp

from assembler.agent.build import build_agent
from assembler.errors import ManifestError
from assembler.validation.load import load_manifest

pytestmark = [needs_landlock, needs_seccomp]


def team(root: Path, lead_sandbox: str, child_sandbox: str = "") -> Path:
    outside = root / "outside.txt"
    (root / "ws").mkdir(parents=True, exist_ok=True)
    (root / "lead.script.yaml").write_text(
        yaml.safe_dump(
            [
                {"text": "", "tool_calls": [{"name": "helper", "arguments": {"task": "go"}}]},
                {"text": "done"},
            ]
        )
    )
    (root / "helper.script.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "text": "",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": f"echo x > {outside}; echo in > inside.txt"},
                        }
                    ],
                },
                {"text": "helped"},
            ]
        )
    )
    (root / "helper.yaml").write_text(
        "version: 1\nname: helper\nidentity: helps\nmodel: scripted:helper.script.yaml\n"
        f"workspace: ws\ntools: {{sets: [coding]}}\n{child_sandbox}"
    )
    lead = root / "lead.yaml"
    lead.write_text(
        "version: 1\nname: lead\nidentity: leads\nmodel: scripted:lead.script.yaml\n"
        "workspace: ws\ntools: {sets: [{agent: helper.yaml}]}\n" + lead_sandbox
    )
    return lead


def run(lead: Path) -> None:
    agent = build_agent(load_manifest(lead), trust=True, record_session=False)

    async def go() -> None:
        try:
            await agent.prompt("start")
        finally:
            await agent.aclose()

    asyncio.run(go())


def test_a_child_without_a_block_runs_in_the_parents_sandbox(tmp_path: Path) -> None:
    control = tmp_path / "control"
    run(team(control, ""))
    assert (control / "outside.txt").exists()  # unconfined, the helper writes outside
    confined = tmp_path / "confined"
    run(team(confined, "sandbox: {filesystem: workspace-write, network: off}\n"))
    assert not (confined / "outside.txt").exists()
    assert (confined / "ws" / "inside.txt").read_text() == "in\n"


def test_a_child_that_widens_is_refused_when_built(tmp_path: Path) -> None:
    lead = team(
        tmp_path,
        "sandbox: {filesystem: read-only, network: off}\n",
        "sandbox: {filesystem: workspace-write, network: off}\n",
    )
    # validation reports it at the helper's line; building refuses it the same way
    with pytest.raises(ManifestError, match="may only narrow its parent's sandbox"):
        run(lead)
    assert not (tmp_path / "ws" / "inside.txt").exists()
