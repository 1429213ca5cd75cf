"""Pins for the trust check itself (`assembler/trust.py`): what counts as project code,
what the question shows, the trust store's failures, and the decision later builds
are held to. Each was a mutant no test noticed (issue 28, round 8).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from assembler.errors import TrustError
from assembler.manifest.model import Manifest
from assembler.trust import (
    ProjectCode,
    TrustDecision,
    TrustStore,
    check_trust,
    file_digest,
    project_code,
    require_trust,
)
from assembler.validation.load import load_manifest

HEAD = "version: 1\nname: a\nidentity: Hi.\n"


def manifest_at(path: Path, body: str = "") -> Manifest:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + body)
    return load_manifest(path)


def with_extension(directory: Path) -> Manifest:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ext.py").write_text("def setup(api, options):\n    pass\n")
    return manifest_at(directory / "agent.yaml", "extensions:\n  - path: ext.py\n")


def test_trust_false_refuses_project_code_without_asking(tmp_path: Path) -> None:
    manifest = with_extension(tmp_path)
    asked: list[Path] = []

    def ask(directory: Path, listing: list[str]) -> bool:
        asked.append(directory)
        return True

    with pytest.raises(TrustError, match=r"extension file ext\.py"):
        check_trust(manifest, False, ask)
    assert asked == []
    check_trust(manifest, True)  # the explicit --trust


def test_a_sub_agents_project_code_needs_trust(tmp_path: Path) -> None:
    parent = manifest_at(tmp_path / "agent.yaml")
    child = with_extension(tmp_path / "helpers")
    (tmp_path / "helpers" / "tools.py").write_text("def hi() -> str:\n    return 'hi'\n")
    (tmp_path / "helpers" / "replay.yaml").write_text("- tool_calls:\n    - name: bash\n")
    child = manifest_at(
        tmp_path / "helpers" / "agent.yaml",
        "extensions:\n  - path: ext.py\ntools:\n  sets:\n    - python: tools:hi\n"
        "model: scripted:replay.yaml\n",
    )
    check_trust(parent, None)  # the parent alone runs no project code
    with pytest.raises(TrustError) as caught:
        check_trust(parent, None, children=[("helpers/agent.yaml", child)])
    message = str(caught.value)
    assert f"{(tmp_path / 'helpers').resolve()} is not a trusted directory" in message
    for item in (
        "extension file ext.py",
        "Python tool tools:hi (tools.py)",
        "replay script replay.yaml (calls bash)",
    ):
        assert f"  - sub-agent helpers/agent.yaml: {item}\n" in message
    TrustStore().add(tmp_path / "helpers")
    check_trust(parent, None, children=[("helpers/agent.yaml", child)])


def test_extensions_count_unless_switched_off(tmp_path: Path) -> None:
    manifest = with_extension(tmp_path)
    assert [c.description for c in project_code(manifest)] == ["extension file ext.py"]
    assert project_code(manifest, include_extensions=False) == []


def test_a_project_tools_module_file_is_what_gets_fingerprinted(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text("def hi() -> str:\n    return 'hi'\n")
    manifest = manifest_at(tmp_path / "agent.yaml", "tools:\n  sets:\n    - python: tools:hi\n")
    [code] = project_code(manifest)
    assert code.files == ((tmp_path / "tools.py").resolve(),)


def test_an_mcp_header_variable_names_the_url_it_goes_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "t0ken")
    manifest = manifest_at(
        tmp_path / "agent.yaml",
        "tools:\n  sets:\n    - mcp:\n        url: https://mcp.example.net/x\n"
        "        headers: {Authorization: 'Bearer ${TOKEN}'}\n",
    )
    assert [c.description for c in project_code(manifest)] == [
        "MCP server `sets[0]` sends ${TOKEN} to https://mcp.example.net/x"
    ]


REPLAY = "- tool_calls:\n    - name: bash\n"


def test_only_a_scripted_model_names_a_replay(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(REPLAY)
    manifest = manifest_at(tmp_path / "agent.yaml")
    assert project_code(manifest, model="openai:r.yaml") == []
    assert project_code(manifest, model="scripted:") == []
    assert [c.description for c in project_code(manifest, model="scripted:r.yaml")] == [
        "replay script r.yaml (calls bash)"
    ]


def test_the_manifests_own_replay_needs_the_manifests_directory_too(tmp_path: Path) -> None:
    (tmp_path / "replays").mkdir()
    (tmp_path / "replays" / "r.yaml").write_text(REPLAY)
    manifest = manifest_at(tmp_path / "agent.yaml", "model: scripted:replays/r.yaml\n")
    own = {c.root for c in project_code(manifest)}
    assert own == {tmp_path.resolve(), (tmp_path / "replays").resolve()}
    # chosen on the command line: the user picked it, only its own directory holds code
    plain = manifest_at(tmp_path / "plain.yaml")
    chosen = {c.root for c in project_code(plain, model="scripted:replays/r.yaml")}
    assert chosen == {(tmp_path / "replays").resolve()}


def test_a_remote_endpoint_lists_each_variable_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENANT", "t1")
    monkeypatch.setenv("REGION", "eu")
    manifest = manifest_at(
        tmp_path / "agent.yaml",
        "model:\n  provider: openai\n  name: m\n"
        "  base_url: https://${REGION}.example.net/${TENANT}/v1\n  api_key_env: MY_KEY\n",
    )
    [code] = [c.description for c in project_code(manifest)]
    assert code == (
        "model endpoint https://${REGION}.example.net/${TENANT}/v1 receives "
        "${REGION} and ${TENANT} and your API key ($MY_KEY)"
    )


def test_the_store_keeps_when_each_directory_was_added(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "config")
    store.add(tmp_path)
    written = json.loads(store.file.read_text())
    added = written["trusted"][0]["added"]
    assert added.startswith("20")
    assert [(e.path, e.added) for e in store.entries()] == [(tmp_path.resolve(), added)]
    assert store.file.read_text() == json.dumps(written, indent=2) + "\n"


def test_a_store_entry_without_a_date_reads_as_an_empty_date(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    store.file.write_text(
        json.dumps({"trusted": ["/not/an/entry", {"added": "x"}, {"path": "/srv/a"}]})
    )
    assert [(e.path, e.added) for e in store.entries()] == [(Path("/srv/a"), "")]


def test_a_corrupt_store_is_one_trust_error(tmp_path: Path) -> None:
    store = TrustStore(tmp_path)
    store.file.write_text("{not json")
    with pytest.raises(TrustError, match=r"cannot read the trust store .*trust\.json"):
        store.is_trusted(tmp_path)


def test_an_unwritable_store_is_one_trust_error(tmp_path: Path) -> None:
    # a dangling link where the config directory should be: reading finds no store,
    # creating the directory fails (this runs as root too, where modes do not stop it)
    (tmp_path / "config").symlink_to(tmp_path / "gone")
    store = TrustStore(tmp_path / "config")
    with pytest.raises(TrustError, match=r"cannot write the trust store"):
        store.add(tmp_path)


def test_only_a_directory_can_be_trusted(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("")
    store = TrustStore(tmp_path / "config")
    with pytest.raises(TrustError, match=r"file\.txt is not a directory"):
        store.add(tmp_path / "file.txt")
    assert store.entries() == []


def test_removing_an_untrusted_directory_says_no(tmp_path: Path) -> None:
    assert TrustStore(tmp_path).remove(tmp_path) is False


def test_a_yes_for_one_directory_does_not_skip_the_next(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code = [
        ProjectCode("first", (tmp_path / "a").resolve()),
        ProjectCode("second", (tmp_path / "b").resolve()),
        ProjectCode("third", (tmp_path / "b").resolve()),
    ]
    with pytest.raises(TrustError) as caught:
        require_trust(code, None, lambda d, listing: d.name == "a")
    assert f"{(tmp_path / 'b').resolve()} is not a trusted directory" in str(caught.value)
    assert ":\n  - second\n  - third\nRead that code" in str(caught.value)


def test_what_a_decision_did_not_cover_is_named(tmp_path: Path) -> None:
    code_file = tmp_path / "ext.py"
    code_file.write_text("x = 1\n")
    code = [ProjectCode("extension file ext.py", tmp_path, (code_file,))]
    decision = TrustDecision.of([tmp_path / "agent.yaml"], code, False)
    assert decision.unseen([tmp_path / "agent.yaml"], code, False) == []
    code_file.write_text("x = 2\n")
    other = (tmp_path / "other.yaml").resolve()
    assert decision.unseen([tmp_path / "agent.yaml", other], code, True) == [
        f"the manifest {other} was not part of the agent tree trust was decided for",
        "extensions were switched off when trust was decided",
        f"extension file ext.py: {code_file} changed since it was trusted",
    ]


def test_a_decision_from_a_worker_without_the_flag_covers_extensions() -> None:
    assert TrustDecision.from_dict({"manifests": [], "digests": []}).include_extensions is True


def test_a_fifo_where_code_should_be_is_no_digest_and_no_hang(tmp_path: Path) -> None:
    """Opening a FIFO to read waits for a writer unless it is opened without blocking:
    a FIFO planted where a project file is expected must not stop the trust check.
    Run in a thread of this process (the mutation runner's mutants live here); if it
    blocks, a writer is opened to release it and the test fails."""
    fifo = tmp_path / "ext.py"
    os.mkfifo(fifo)
    results: list[str | None] = []
    digesting = threading.Thread(target=lambda: results.append(file_digest(fifo)), daemon=True)
    digesting.start()
    digesting.join(timeout=30)
    blocked = digesting.is_alive()
    if blocked:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader waits: release it
        digesting.join(timeout=30)
    assert not blocked, "file_digest blocked opening a FIFO"
    assert results == [None]


def test_digesting_leaves_no_file_open(tmp_path: Path) -> None:
    code_file = tmp_path / "ext.py"
    code_file.write_text("x = 1\n")
    code = [ProjectCode("extension", tmp_path, (code_file,))]
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        TrustDecision.of([tmp_path / "agent.yaml"], code, True)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_replay_that_is_a_symlink_loop_is_a_trust_question_not_a_crash(tmp_path: Path) -> None:
    """`--model scripted:loop.yaml` naming a symlink loop used to end in an internal
    error (Python 3.11's `Path.resolve` raises RuntimeError for a loop)."""
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    manifest = manifest_at(tmp_path / "agent.yaml")
    [code] = project_code(manifest, model="scripted:loop.yaml")
    assert code.description.startswith("replay script loop.yaml (cannot be read to check")
    assert code.root == tmp_path.resolve()
    with pytest.raises(TrustError, match=r"replay script loop\.yaml"):
        require_trust([code], None)


def test_a_remote_endpoint_without_a_named_key_still_says_it_gets_the_key(
    tmp_path: Path,
) -> None:
    manifest = manifest_at(
        tmp_path / "agent.yaml",
        "model:\n  provider: openai\n  name: m\n  base_url: https://models.example.net/v1\n",
    )
    assert [c.description for c in project_code(manifest)] == [
        "model endpoint https://models.example.net/v1 receives your API key"
    ]


def test_an_mcp_server_sent_two_variables_names_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "t0ken")
    monkeypatch.setenv("TEAM", "t1")
    manifest = manifest_at(
        tmp_path / "agent.yaml",
        "tools:\n  sets:\n    - mcp:\n        url: https://mcp.example.net/${TEAM}\n"
        "        headers: {Authorization: 'Bearer ${TOKEN}'}\n",
    )
    assert [c.description for c in project_code(manifest)] == [
        "MCP server `sets[0]` sends ${TEAM}, ${TOKEN} to https://mcp.example.net/${TEAM}"
    ]
