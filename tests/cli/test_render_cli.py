"""`assemble render`: the exact system prompt of the first request, without side effects
in a dry run; JSON, snapshots, bad input and trust."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.sandbox.spec import DEFAULT_HIDDEN
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest

SNAPSHOT = (
    Path(__file__).resolve().parents[1] / "prompt" / "snapshots" / "shipping-fixer.prompt.txt"
)
EXTENSION_NOTE = (
    "dry run: extension `protect_tests` is not loaded in a dry run: tools, commands and "
    "handlers it registers are not shown"
)


def first_request(manifest: Path) -> tuple[str, list[Any]]:
    """The system prompt and tool schemas the real agent sends on its first request."""
    model = ScriptedModel(["Done."])
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)

    async def run() -> None:
        await agent.prompt("hi")
        await agent.aclose()

    asyncio.run(run())
    request = model.requests[0]
    return request.system, list(request.tools)


@pytest.fixture
def shipping_manifest(shipping: Path) -> Path:
    return shipping / "agents" / "shipping-fixer.yaml"


@pytest.fixture
def package_name() -> Iterator[str]:
    """A module name no other test uses; forgotten again afterwards."""
    name = f"shop_{uuid.uuid4().hex[:10]}"
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


FEES = '''\
import pathlib

pathlib.Path(__file__).parent.parent.joinpath("MARKER-{label}").write_text("imported")


def quote_fee(weight_kg: float, express: bool = False) -> int:
    """Quote the shipping fee in cents.

    Args:
        weight_kg: Weight of the parcel.
        express: Next-day delivery.
    """
    return 499


def ship(order_id: str, notes: list[str] | None = None) -> str:
    """Ship a paid order."""
    return order_id
'''


def python_tools_project(root: Path, package: str, extra: str = "") -> Path:
    """A manifest whose tools are Python functions in the workspace; importing the
    module (or its package) leaves a marker file next to the workspace."""
    workspace = root / "ws"
    (workspace / package).mkdir(parents=True)
    (workspace / package / "__init__.py").write_text(
        "import pathlib\n\n"
        'pathlib.Path(__file__).parent.parent.joinpath("MARKER-package").write_text("x")\n',
        "utf-8",
    )
    (workspace / package / "fees.py").write_text(FEES.format(label="module"), "utf-8")
    (workspace / "AGENTS.md").write_text("# Shop\nPrices in cents.\n", "utf-8")
    manifest = root / "agent.yaml"
    manifest.write_text(
        textwrap.dedent(
            f"""\
            version: 1
            name: python-tools
            identity: You quote shipping fees.
            context: {{currency: EUR}}
            workspace: ws
            tools:
              sets:
                - builtin: [read]
                - python: [{package}.fees:quote_fee, {package}.fees:ship]
                  guidelines: [Quote in cents.]
            """
        )
        + extra,
        "utf-8",
    )
    return manifest


# -- the prompt, exactly -------------------------------------------------------------


def test_dry_run_prints_the_exact_prompt_then_a_tool_summary(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path, shipping: Path
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(shipping_manifest))
    assert result.code == 0
    system, tools = first_request(shipping_manifest)
    head = f"{system}\n\n---- tool schemas (3) ----\n"
    assert result.out.startswith(head)
    summary = result.out[len(head) :].splitlines()
    assert summary == [
        "read(path: string, offset?: integer, limit?: integer)  [builtin]",
        f"    {tools[0].description.splitlines()[0]}",
        "bash(command: string, timeout?: number)  [builtin]",
        f"    {tools[1].description.splitlines()[0]}",
        "edit(path: string, old_text: string, new_text: string)  [builtin]",
        f"    {tools[2].description.splitlines()[0]}",
        "",
        "---- sandbox ----",
        "filesystem: workspace-write",
        "network: off",
        f"writable: {(shipping / 'examples' / 'shipping').resolve()}, $TMPDIR (private)",
        "hidden: " + ", ".join(DEFAULT_HIDDEN),
    ]
    assert [tool.name for tool in tools] == ["read", "bash", "edit"]
    assert result.err.splitlines() == [EXTENSION_NOTE]


def test_prompt_only_is_byte_for_byte_the_first_request_of_the_shipping_agent(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    result = assemble(capsys, "render", "--dry-run", "--prompt-only", str(shipping_manifest))
    assert result.code == 0
    system, _ = first_request(shipping_manifest)  # its extension registers no tools
    assert result.out == system  # byte for byte: no newline added
    assert result.out.startswith("## identity\nYou are a careful maintainer")


def test_prompt_only_is_byte_for_byte_the_first_request_with_python_tools(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, package_name: str
) -> None:
    manifest = python_tools_project(tmp_path / "project", package_name)
    result = assemble(capsys, "render", "--dry-run", "--prompt-only", str(manifest))
    assert result.code == 0, result.err
    assert not list((tmp_path / "project").rglob("MARKER-*"))
    workspace = (tmp_path / "project" / "ws").resolve()
    assert result.out == (
        "## identity\n"
        "You quote shipping fees.\n"
        'context: {"currency":"EUR"}\n'
        "\n"
        "## tools\n"
        "- read: Read a file's contents (text; line ranges with offset/limit)\n"
        "- quote_fee: Quote the shipping fee in cents.\n"
        "- ship: Ship a paid order.\n"
        "\n"
        "Guidelines:\n"  # no `bash` here, so `read`'s guideline about it is left out
        "- Quote in cents.\n"
        "\n"
        "## workspace\n"
        f"{workspace}\n"
        "\n"
        "### AGENTS.md\n"
        "# Shop\n"
        "Prices in cents."
    )
    system, tools = first_request(manifest)
    assert (tmp_path / "project" / "ws" / "MARKER-module").exists()  # the real agent imported it
    assert result.out == system
    # the schemas the dry run shows are the ones the real agent sends
    full = assemble(capsys, "render", "--dry-run", "--format", "json", str(manifest))
    shown = [(t["name"], t["description"], t["parameters"]) for t in json.loads(full.out)["tools"]]
    assert shown == [(t.name, t.description, dict(t.parameters)) for t in tools]


def test_live_render_with_trust_shows_the_same_prompt(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    dry = assemble(capsys, "render", "--dry-run", str(shipping_manifest))
    live = assemble(capsys, "render", "--trust", str(shipping_manifest))
    assert live.code == 0, live.err
    assert live.out == dry.out
    assert "dry run:" not in live.err


# -- a dry run has no side effects ----------------------------------------------------


def side_effect_project(root: Path, package: str) -> Path:
    """Everything a dry run must not touch: an extension and a Python tool that write
    a marker when imported, a stdio and an HTTP MCP server, a memory store."""
    manifest = python_tools_project(
        root,
        package,
        textwrap.dedent(
            """\
            skills: [ws/skills]
            extensions:
              - path: ext.py
            memory:
              store: .memory
            """
        ),
    )
    text = manifest.read_text("utf-8").replace(
        "      guidelines: [Quote in cents.]\n",
        "      guidelines: [Quote in cents.]\n"
        '    - mcp: {command: python3, args: [-c, \'open("MARKER-mcp", "w")\']}\n'
        "    - mcp: {url: 'http://127.0.0.1:9/mcp'}\n",
    )
    manifest.write_text(text, "utf-8")
    (root / "ext.py").write_text(
        "import pathlib\n\n"
        'pathlib.Path(__file__).with_name("MARKER-extension").write_text("x")\n\n\n'
        "def setup(api, options):\n"
        '    pathlib.Path(__file__).with_name("MARKER-setup").write_text("x")\n',
        "utf-8",
    )
    skill = root / "ws" / "skills" / "pricing"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pricing\ndescription: How prices are set.\n---\nBody.\n", "utf-8"
    )
    return manifest


def tree(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every file and directory under `root` with its kind, size and mtime."""
    found: dict[str, tuple[bool, int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            found[os.path.relpath(path, root)] = (name in dirs, info.st_size, info.st_mtime_ns)
    return found


def user_dirs() -> list[Path]:
    return [Path(os.environ["ASSEMBLER_CONFIG_DIR"]), Path(os.environ["ASSEMBLER_DATA_DIR"])]


def test_a_dry_run_imports_spawns_connects_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    package_name: str,
) -> None:
    manifest = side_effect_project(tmp_path / "project", package_name)
    attempts: list[str] = []

    def forbid(what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise AssertionError(f"a dry run must not {what}")

        return refuse

    monkeypatch.setattr(subprocess.Popen, "__init__", forbid("start a process"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, forbid(f"call os.{name}"))
    monkeypatch.setattr(socket.socket, "connect", forbid("connect a socket"))
    monkeypatch.setattr(socket.socket, "connect_ex", forbid("connect a socket"))
    monkeypatch.setattr(socket, "create_connection", forbid("open a connection"))
    monkeypatch.setattr(socket, "getaddrinfo", forbid("resolve a name"))
    modules_before = set(sys.modules)
    before = tree(tmp_path)

    result = assemble(capsys, "render", "--dry-run", str(manifest))

    assert result.code == 0, result.err
    assert attempts == []
    assert tree(tmp_path) == before
    assert not [p for p in (tmp_path / "project").rglob("MARKER-*")]
    assert not [m for m in set(sys.modules) - modules_before if m.startswith(package_name)]
    assert "ext" not in set(sys.modules) - modules_before
    for folder in user_dirs():
        assert not folder.exists() or not any(folder.iterdir()), folder
    # what it could not know without running code is listed on stderr
    assert result.err.splitlines() == [
        "dry run: extension `ext` is not loaded in a dry run: tools, commands and handlers "
        "it registers are not shown",
        "dry run: MCP server `sets[2]` is not started in a dry run: its tools are not shown",
        "dry run: MCP server `sets[3]` is not started in a dry run: its tools are not shown",
        "memory: selection `keyword` depends on the user's message; "
        '--input "..." shows the memories it would select',
    ]
    assert "\n- quote_fee: Quote the shipping fee in cents.\n" in result.out
    assert "- **pricing**: How prices are set." in result.out


AUDIT = r"""
import json, os, sys

PROJECT = {package!r}
BANNED = {{
    "subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec",
    "os.system", "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto",
    "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link",
    "os.truncate", "os.chmod", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
}}
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
seen = []
armed = True


def hook(event, args):
    if not armed:
        return
    if event == "open":
        path, mode, flags = args
        writes = isinstance(mode, str) and any(c in mode for c in "wax+")
        if writes or (isinstance(flags, int) and flags & WRITES):
            seen.append([event, str(path)])
    elif event in BANNED:
        seen.append([event, repr(args)[:200]])
    elif event == "import" and args[0].split(".")[0] == PROJECT:
        seen.append([event, args[0]])


sys.addaudithook(hook)
from assembler.cli.main import main

code = 0
try:
    main({argv!r})
except SystemExit as exit:
    code = exit.code if isinstance(exit.code, int) else 1
armed = False
sys.stdout.flush()
sys.stderr.write("AUDIT " + json.dumps(seen) + "\n")
sys.exit(code)
"""


def test_a_fresh_process_dry_run_trips_no_audit_event(tmp_path: Path, package_name: str) -> None:
    """The same, watched by an audit hook in a new interpreter: every import, spawn,
    connection and write on the way, including those of modules imported for it."""
    manifest = side_effect_project(tmp_path / "project", package_name)
    before = tree(tmp_path)
    script = AUDIT.format(package=package_name, argv=["render", "--dry-run", str(manifest)])
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    audit = [line for line in done.stderr.splitlines() if line.startswith("AUDIT ")]
    assert audit == ["AUDIT []"], done.stderr
    assert tree(tmp_path) == before
    assert done.stdout.startswith("## identity\nYou quote shipping fees.\n")


def test_strict_turns_unknowns_into_exit_1(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    strict = assemble(capsys, "render", "--dry-run", "--strict", str(shipping_manifest))
    assert strict.code == 1
    assert strict.err.splitlines() == [EXTENSION_NOTE]
    assert strict.out.startswith("## identity\n")  # the prompt is still shown
    known = assemble(
        capsys, "render", "--dry-run", "--strict", "--no-extensions", str(shipping_manifest)
    )
    assert (known.code, known.err) == (0, "")


def test_no_skills_with_an_explicit_skill_on_the_command_line(
    capsys: pytest.CaptureFixture[str], shipping: Path, shipping_manifest: Path
) -> None:
    skill_line = "\n\n## skills\nRead a skill's file before you follow it.\n- **fix-workflow**: "
    plain = assemble(capsys, "render", "--dry-run", "--prompt-only", str(shipping_manifest))
    assert skill_line in plain.out
    off = assemble(
        capsys, "render", "--dry-run", "--prompt-only", "--no-skills", str(shipping_manifest)
    )
    assert "## skills" not in off.out
    assert off.out == plain.out[: plain.out.index(skill_line)]
    back = assemble(
        capsys,
        "render",
        "--dry-run",
        "--prompt-only",
        "--no-skills",
        "--skill",
        str(shipping / "examples" / "shipping" / "skills" / "fix-workflow"),
        str(shipping_manifest),
    )
    assert back.out == plain.out


def test_no_context_files_drops_agents_md_only(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    result = assemble(
        capsys, "render", "--dry-run", "--prompt-only", "--no-context-files", str(shipping_manifest)
    )
    workspace = (shipping_manifest.parent.parent / "examples" / "shipping").resolve()
    assert f"\n\n## workspace\n{workspace}\n\n## skills\n" in result.out
    assert "### AGENTS.md" not in result.out


def test_manifest_template_overrides_reshape_section_bodies_only(
    capsys: pytest.CaptureFixture[str], shipping: Path, shipping_manifest: Path
) -> None:
    (shipping / "agents" / "skills.md.j2").write_text(
        "{% for skill in skills %}{{ skill.name }} -> {{ skill.path }}\n{% endfor %}", "utf-8"
    )
    text = shipping_manifest.read_text("utf-8")
    shipping_manifest.write_text(
        text
        + "prompt:\n"
        + "  tools:\n"
        + '    template: "{% for tool in tools %}[{{ tool.name }}] {% endfor %}"\n'
        + "  skills:\n"
        + "    file: skills.md.j2\n",
        "utf-8",
    )
    result = assemble(capsys, "render", "--dry-run", "--prompt-only", str(shipping_manifest))
    assert result.code == 0, result.err
    assert "\n\n## tools\n[read] [bash] [edit]\n\n## workspace\n" in result.out
    assert result.out.endswith("\n\n## skills\nfix-workflow -> skills/fix-workflow/SKILL.md")
    data = json.loads(
        assemble(capsys, "render", "--dry-run", "--format", "json", str(shipping_manifest)).out
    )
    assert [(s["name"], s["template"]) for s in data["sections"]] == [
        ("identity", "default identity template"),
        ("tools", "manifest prompt.tools.template"),
        ("workspace", "default workspace template"),
        ("skills", str(shipping / "agents" / "skills.md.j2")),
    ]
    args = ["--dry-run", "--prompt-only", "--no-prompt-templates", str(shipping_manifest)]
    default = assemble(capsys, "render", *args)
    committed = SNAPSHOT.read_text("utf-8").split("\n\n---- tool schemas")[0]
    workspace = str((shipping / "examples" / "shipping").resolve())
    assert default.out == committed.replace("{workspace}", workspace)


def test_prompt_only_into_a_pipe_hashes_like_the_json_and_refuses_json(
    shipping_manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`render --prompt-only | sha256sum` is the `sha256` of `--format json`, through a
    real pipe; asking for both is a usage error, not one silently ignored."""
    command = [sys.executable, "-m", "assembler", "render", "--dry-run", str(shipping_manifest)]
    piped = subprocess.run([*command, "--prompt-only"], capture_output=True, check=True)
    as_json = subprocess.run([*command, "--format", "json"], capture_output=True, check=True)
    data = json.loads(as_json.stdout)
    assert hashlib.sha256(piped.stdout).hexdigest() == data["sha256"]
    assert not piped.stdout.endswith(b"\n")
    both = assemble(capsys, "render", "--dry-run", "--prompt-only", "--format", "json",
                    str(shipping_manifest))  # fmt: skip
    assert both.code == 2 and both.out == ""
    assert "--prompt-only prints the prompt as text: leave out --format json" in both.err


# -- --format json ---------------------------------------------------------------------


def test_json_lists_sections_with_sources_tokens_schemas_and_the_hash(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    result = assemble(capsys, "render", "--dry-run", "--format", "json", str(shipping_manifest))
    assert result.code == 0
    data = json.loads(result.out)
    system, tools = first_request(shipping_manifest)
    assert data["prompt"] == system
    assert data["sha256"] == hashlib.sha256(data["prompt"].encode("utf-8")).hexdigest()
    prompt_only = assemble(capsys, "render", "--dry-run", "--prompt-only", str(shipping_manifest))
    assert hashlib.sha256(prompt_only.out.encode("utf-8")).hexdigest() == data["sha256"]
    sections = data["sections"]
    assert [s["name"] for s in sections] == ["identity", "tools", "workspace", "skills"]
    assert "\n\n".join(f"## {s['name']}\n{s['text']}" for s in sections) == data["prompt"]
    for section in sections:
        assert section["estimated_tokens"] == (len(section["text"]) + 3) // 4 > 0
        assert section["template"] == f"default {section['name']} template"
    workspace = str((shipping_manifest.parent.parent / "examples" / "shipping").resolve())
    skill = Path(workspace) / "skills" / "fix-workflow" / "SKILL.md"
    assert {s["name"]: s["sources"] for s in sections} == {
        "identity": ["manifest: identity", "manifest: context"],
        "tools": ["builtin: read", "builtin: bash", "builtin: edit"],
        "workspace": [f"workspace: {workspace}", "context file: AGENTS.md"],
        "skills": [str(skill)],
    }
    assert data["estimated_tokens"] == (len(data["prompt"]) + 3) // 4
    assert [(t["name"], t["description"], t["parameters"]) for t in data["tools"]] == [
        (t.name, t.description, dict(t.parameters)) for t in tools
    ]
    assert data["unknown"] == [EXTENSION_NOTE.removeprefix("dry run: ")]


# -- --check and --write ---------------------------------------------------------------


def test_the_committed_snapshot_matches_from_the_repository(
    capsys: pytest.CaptureFixture[str], repo_root: Path
) -> None:
    manifest = repo_root / "agents" / "shipping-fixer.yaml"
    result = assemble(capsys, "render", "--dry-run", str(manifest), "--check", str(SNAPSHOT))
    assert result.code == 0, result.out
    assert result.out == ""
    assert result.err.splitlines() == [EXTENSION_NOTE, f"{SNAPSHOT}: prompt unchanged"]


def test_the_snapshot_holds_the_dry_run_with_a_workspace_placeholder(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    text = SNAPSHOT.read_text("utf-8")
    workspace = str((shipping_manifest.parent.parent / "examples" / "shipping").resolve())
    dry = assemble(capsys, "render", "--dry-run", str(shipping_manifest))
    assert text == dry.out.replace(workspace, "{workspace}")
    assert "\n## workspace\n{workspace}\n\n### AGENTS.md\n" in text
    # and from a checkout elsewhere (the tmp copy) it still matches
    check = assemble(
        capsys, "render", "--dry-run", str(shipping_manifest), "--check", str(SNAPSHOT)
    )
    assert check.code == 0, check.out


def test_write_then_check_round_trips(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "prompt.txt"
    wrote = assemble(capsys, "render", "--dry-run", str(shipping_manifest), "--write", str(target))
    assert wrote.code == 0
    assert wrote.out == ""
    assert wrote.err.splitlines()[-1] == f"wrote {target}"
    assert target.read_text("utf-8") == SNAPSHOT.read_text("utf-8")
    assert str(shipping_manifest.parent.parent) not in target.read_text("utf-8")
    check = assemble(capsys, "render", "--dry-run", str(shipping_manifest), "--check", str(target))
    assert check.code == 0


def test_a_json_snapshot_is_portable_and_its_hash_is_of_its_own_prompt(
    capsys: pytest.CaptureFixture[str], repo_root: Path, shipping_manifest: Path, tmp_path: Path
) -> None:
    target = tmp_path / "prompt.json"
    repo_manifest = repo_root / "agents" / "shipping-fixer.yaml"
    wrote = assemble(
        capsys,
        "render",
        "--dry-run",
        "--format",
        "json",
        str(repo_manifest),
        "--write",
        str(target),
    )
    assert wrote.code == 0
    data = json.loads(target.read_text("utf-8"))
    assert "\n## workspace\n{workspace}\n" in data["prompt"]
    assert str(repo_root) not in target.read_text("utf-8")
    assert data["sha256"] == hashlib.sha256(data["prompt"].encode("utf-8")).hexdigest()
    assert data["characters"] == len(data["prompt"])
    # the same snapshot holds for a checkout somewhere else
    args = ["--dry-run", "--format", "json", str(shipping_manifest), "--check", str(target)]
    check = assemble(capsys, "render", *args)
    assert check.code == 0, check.out


def test_a_changed_identity_drifts_with_a_diff_naming_the_line(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path
) -> None:
    text = shipping_manifest.read_text("utf-8")
    shipping_manifest.write_text(
        text.replace("a careful maintainer", "a hasty maintainer"), "utf-8"
    )
    result = assemble(
        capsys, "render", "--dry-run", str(shipping_manifest), "--check", str(SNAPSHOT)
    )
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[:2] == [f"--- {SNAPSHOT}", "+++ rendered now"]
    assert re.fullmatch(r"@@ -\d+,\d+ \+\d+,\d+ @@", lines[2])
    changed = [line for line in lines[2:] if line[:1] in "+-"]
    assert changed == [
        "-You are a careful maintainer of a small Python repository.",
        "+You are a hasty maintainer of a small Python repository.",
    ]
    assert result.err.splitlines()[-1] == (
        f"{SNAPSHOT}: the rendered prompt drifted from the snapshot; if the change is "
        f"intended, rerun with --write {SNAPSHOT} and commit the result"
    )


def test_check_without_a_snapshot_fails(
    capsys: pytest.CaptureFixture[str], shipping_manifest: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "none.txt"
    result = assemble(
        capsys, "render", "--dry-run", str(shipping_manifest), "--check", str(missing)
    )
    assert result.code == 1
    assert result.err.splitlines()[-1] == f"no snapshot at {missing}; create it with --write"
    assert not missing.exists()


# -- bad input and trust ---------------------------------------------------------------

BAD = {
    "schema": """\
        version: 1
        name: bad
        identity: "   "
        tools:
          sets:
            - builtin: nope
          bogus: 1
        """,
    "checks": """\
        version: 1
        name: bad
        identity: Fine.
        skills: [nowhere]
        prompt:
          tools:
            template: "{{ ''.__class__.__mro__ }}"
          memory:
            template: "{{ tools }}"
        """,
    "yaml": """\
        version: 1
        name: bad
        name: twice
        identity: [unclosed
        """,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_invalid_manifest_prints_the_errors_of_validate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(textwrap.dedent(BAD[case]), "utf-8")
    validate = assemble(capsys, "validate", str(manifest))
    assert validate.code == 1
    expected = [line for line in validate.out.splitlines() if line.startswith(str(manifest))]
    assert expected
    for flags in (["--dry-run"], []):
        render = assemble(capsys, "render", *flags, str(manifest))
        assert render.code == 1
        assert render.out == ""
        *issues, summary = render.err.splitlines()
        assert issues == expected
        assert summary == f"{len(expected)} error(s); nothing was run"


def test_a_missing_manifest_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(tmp_path / "nothing.yaml"))
    assert result.code == 1
    assert result.out == ""
    assert "nothing.yaml" in result.err


def test_a_live_render_of_an_untrusted_project_is_refused(
    capsys: pytest.CaptureFixture[str], shipping: Path, shipping_manifest: Path
) -> None:
    refused = assemble(capsys, "render", str(shipping_manifest))
    assert refused.code == 1
    assert refused.out == ""
    root = shipping_manifest.parent.resolve()
    assert refused.err == (
        f"error: {root} is not a trusted directory, and building this agent would run code "
        "or send secrets on its say-so:\n"
        "  - extension file extensions/protect_tests.py\n"
        f"Read that code, then trust the directory with `assemble trust add {root}` "
        "or pass --trust for this run.\n"
    )
    trusted = assemble(capsys, "render", "--trust", "--prompt-only", str(shipping_manifest))
    assert trusted.code == 0, trusted.err
    assert trusted.out.startswith("## identity\n")
    for folder in user_dirs():  # --trust is for this run: nothing is remembered
        assert not (folder / "trust.json").exists()
