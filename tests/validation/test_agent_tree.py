"""`assemble validate` follows a team's tree of manifests (the corpus has the cases
`valid/team`, `invalid/agent_cycle`, `invalid/agent_depth`, `invalid/agent_children`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import assemble

from assembler.errors import ManifestError
from assembler.validation.load import load_manifest


def write_team(tmp_path: Path, child_extra: str = "") -> Path:
    (tmp_path / "s.yaml").write_text("- text: done\n")
    (tmp_path / "child.yaml").write_text(
        "version: 1\nname: child\nidentity: You work.\nmodel: scripted:s.yaml\n" + child_extra
    )
    (tmp_path / "parent.yaml").write_text(
        "version: 1\nname: parent\nidentity: Call `child` for the work.\nmodel: scripted:s.yaml\n"
        "tools:\n  sets:\n    - agent: child.yaml\n"
    )
    return tmp_path / "parent.yaml"


def test_a_directory_reports_each_issue_of_a_sub_agent_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_team(tmp_path, "limits: {max_turns: 0}\n")
    monkeypatch.chdir(tmp_path)
    result = assemble(capsys, "validate", ".")
    assert result.code == 1
    assert result.out.splitlines() == [
        "child.yaml:5:21: error: must be at least 1, got 0 [limits.max_turns]",
        "parent.yaml:7:14: error: sub-agent child.yaml has 1 error (reported at its own lines)"
        " [tools.sets[0].agent]",
        "2 error(s), 0 warning(s) in 2 manifests",
    ]


def test_loading_a_parent_refuses_a_broken_child_at_the_childs_lines(tmp_path: Path) -> None:
    parent = write_team(tmp_path, "limits: {max_turns: 0}\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(parent)
    shown = str(caught.value)
    assert f"{tmp_path / 'child.yaml'}:5:21: error: must be at least 1" in shown


def test_validating_a_team_runs_none_of_its_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "marker"
    (tmp_path / "ext.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef setup(api, options):\n    pass\n"
    )
    parent = write_team(tmp_path, "extensions:\n  - path: ext.py\n")
    result = assemble(capsys, "validate", str(parent))
    assert result.code == 0, result.out
    assert not marker.exists()


def test_without_the_sub_agent_its_tool_name_is_an_unknown_mention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = write_team(tmp_path)
    assert assemble(capsys, "validate", str(parent)).out == "1 manifest valid\n"
    parent.write_text(parent.read_text().replace("    - agent: child.yaml\n", "    - readonly\n"))
    result = assemble(capsys, "validate", str(parent))
    assert "mentions tool `child`, but no active tool has that name" in result.out


@pytest.mark.parametrize(
    "targets", [["parent.yaml"], ["child.yaml"], ["."], ["child.yaml", "parent.yaml"]]
)
def test_a_cycle_is_one_error_naming_the_chain_whichever_file_validation_starts_from(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    targets: list[str],
) -> None:
    parent = write_team(tmp_path)
    child = tmp_path / "child.yaml"
    child.write_text(child.read_text() + "tools:\n  sets:\n    - agent: parent.yaml\n")
    monkeypatch.chdir(tmp_path)
    result = assemble(capsys, "validate", *targets)
    assert result.code == 1
    # the loop starts at its first file in path order, and is reported at the edge
    # that closes it: parent.yaml's `agent: child.yaml`
    assert result.out.splitlines()[:-1] == [
        f"{parent.name}:7:14: error: sub-agents form a cycle: child.yaml -> parent.yaml -> "
        "child.yaml [tools.sets[0].agent]"
    ]
    assert result.out.splitlines()[-1].startswith("1 error(s), 0 warning(s) in ")


def test_validate_refuses_a_tree_deeper_than_max_agent_depth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = write_team(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert assemble(capsys, "validate", parent.name).code == 0
    parent.write_text(parent.read_text() + "limits: {max_agent_depth: 0}\n")
    result = assemble(capsys, "validate", parent.name)
    assert result.code == 1
    assert result.out.splitlines()[0] == (
        "parent.yaml:7:14: error: sub-agent child.yaml is too deep: parent.yaml -> "
        "child.yaml nests 1 level of sub-agents, and `limits.max_agent_depth` of "
        "parent.yaml allows 0 [tools.sets[0].agent]"
    )
