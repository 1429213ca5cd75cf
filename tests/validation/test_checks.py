"""What `assemble validate` checks beyond the schema (`assembler.validation`).

Referenced paths exist; skill folders are checked with positions in their SKILL.md;
section templates parse and use only what the renderer provides; a Python reference
names a top-level function (read from source, never imported); back-quoted tool
names that no active tool provides are warnings. Each test writes a small project
into a temporary directory and compares the exact lines `validate` prints.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from assembler.python_refs import find_module_source, resolve_function
from assembler.validation.checks import active_tool_names
from assembler.validation.mentions import tool_mentions
from assembler.validation.validator import validate_file

HEAD = "version: 1\nname: demo\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), "utf-8")


def _validate(root: Path, manifest: str, **files: str) -> list[str]:
    """Issues of `agent.yaml` (HEAD + `manifest`) as printed, with `files` beside it."""
    _files(root, {"agent.yaml": HEAD + textwrap.dedent(manifest), **files})
    return [issue.format() for issue in validate_file(Path("agent.yaml"), env={}).issues]


# --- referenced paths ----------------------------------------------------------------


def test_a_missing_workspace(project: Path) -> None:
    assert _validate(project, "identity: x\nworkspace: nowhere\n") == [
        f"agent.yaml:4:12: error: workspace {project.resolve()}/nowhere does not exist [workspace]"
    ]


def test_a_workspace_that_is_a_file(project: Path) -> None:
    lines = _validate(project, "identity: x\nworkspace: notes.txt\n", **{"notes.txt": "x"})
    assert lines == [
        f"agent.yaml:4:12: error: workspace {project.resolve()}/notes.txt is not a directory "
        "[workspace]"
    ]


def test_relative_paths_resolve_against_the_manifest_not_the_cwd(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _files(project, {"agents/agent.yaml": HEAD + "identity: x\nworkspace: ../repo\n"})
    (project / "repo").mkdir()
    monkeypatch.chdir(project / "repo")
    assert validate_file(project / "agents" / "agent.yaml", env={}).issues == ()


def test_missing_skill_directory_script_and_mcp_cwd(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: x
        model: scripted:replies.yaml
        skills: [skills, other]
        tools:
          sets: [{mcp: {command: sh, cwd: srv}}]
        """,
        **{"other/README.md": "not a skill"},
    )
    assert lines == [
        "agent.yaml:4:8: error: script file replies.yaml not found [model]",
        "agent.yaml:5:10: error: skill directory skills does not exist [skills[0]]",
        "agent.yaml:7:35: error: directory srv does not exist [tools.sets[0].mcp.cwd]",
    ]


def test_a_scripted_model_needs_a_script(project: Path) -> None:
    assert _validate(project, "identity: x\nmodel: {provider: scripted}\n") == [
        "agent.yaml:4:19: error: the `scripted` provider needs a script: `scripted:<file>` or "
        "`script:` [model.provider]"
    ]


def test_context_files_are_looked_up_in_the_workspace(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\nworkspace: ws\ncontext_files: [AGENTS.md, NOTES.md]\n",
        **{"ws/AGENTS.md": "# agents\n", "NOTES.md": "beside the manifest, not in ws"},
    )
    assert lines == [
        "agent.yaml:5:28: warning: context file NOTES.md not found in the workspace "
        "[context_files[1]]"
    ]


def test_mcp_commands_are_looked_up_on_path_without_starting_them(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: x
        tools:
          servers:
            a: {command: no-such-command-xyz}
            b: {command: ./bin/server}
            c: {command: ./bin/missing}
            d: {command: "${SERVER_BIN}"}
          sets: [{mcp: a}, {mcp: b}, {mcp: c}, {mcp: d}]
        """,
        **{"bin/server": "#!/bin/sh\n"},
    )
    assert lines == [
        "agent.yaml:6:18: warning: command `no-such-command-xyz` not found on PATH "
        "[tools.servers.a.command]",
        "agent.yaml:8:18: warning: command `./bin/missing` not found on PATH "
        "[tools.servers.c.command]",
    ]


def test_the_default_workspace_is_the_manifest_directory(project: Path) -> None:
    assert _validate(project, "identity: x\n") == []


# --- the context ---------------------------------------------------------------------


def test_context_must_be_canonical_json(project: Path) -> None:
    assert _validate(project, "identity: x\ncontext: {a: {b: [1, .inf]}}\n") == [
        "agent.yaml:4:22: error: Infinity is not valid JSON [context.a.b[1]]"
    ]


def test_context_integers_beyond_the_safe_range(project: Path) -> None:
    lines = _validate(project, "identity: x\ncontext: {big: 9007199254740993}\n")
    assert len(lines) == 1 and lines[0].startswith("agent.yaml:4:16: error: ")
    assert lines[0].endswith("[context.big]")


# --- models --------------------------------------------------------------------------


def test_an_unknown_provider_is_an_error_without_extensions(project: Path) -> None:
    assert _validate(project, "identity: x\nmodel: {provider: acme, name: big}\n") == [
        "agent.yaml:4:19: error: unknown provider `acme`; known providers: `openai`, "
        "`anthropic`, `scripted`, `ollama`, `llamacpp`, `vllm`, `lmstudio` [model.provider]"
    ]


def test_an_unknown_provider_is_a_warning_when_an_extension_may_register_it(
    project: Path,
) -> None:
    lines = _validate(
        project,
        "identity: x\nmodel: acme:big\nextensions: [{path: ext.py}]\n",
        **{"ext.py": "def setup(api, options):\n    pass\n"},
    )
    assert lines == [
        "agent.yaml:4:8: warning: provider `acme` is not built in (`openai`, `anthropic`, "
        "`scripted`, `ollama`, `llamacpp`, `vllm`, `lmstudio`); an extension must register it "
        "[model]"
    ]


# --- skills --------------------------------------------------------------------------


def test_skill_problems_are_errors_positioned_in_the_skill_md(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\nskills: [skills]\n",
        **{
            "skills/pdf-tools/SKILL.md": """\
                ---
                name: pdf_tools
                description: Works with PDF files.
                ---
                # body
                """,
            "skills/empty-desc/SKILL.md": "---\nname: empty-desc\ndescription: ''\n---\n",
            "skills/broken/SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\n",
            "skills/ok/SKILL.md": "---\nname: ok\ndescription: Fine.\n---\n",
        },
    )
    assert lines == [
        "skills/broken/SKILL.md:4:1: error: YAML syntax error: while parsing a flow sequence "
        "did not find expected ',' or ']'",
        "skills/empty-desc/SKILL.md:3:14: error: `description` must be a non-empty string "
        "[description]",
        "skills/pdf-tools/SKILL.md:2:7: error: name 'pdf_tools' must match the folder name "
        "'pdf-tools' [name]",
        "skills/pdf-tools/SKILL.md:2:7: error: name has invalid characters '_'; use letters, "
        "digits, `-` [name]",
    ]


def test_the_skills_profile_spec_makes_deviations_errors(project: Path) -> None:
    _files(
        project,
        {
            "agent.yaml": HEAD + "identity: x\nskills: [skills]\n",
            "skills/a/SKILL.md": "---\nname: a\ndescription: A.\nversion: 2\n---\n",
        },
    )
    lenient = validate_file(Path("agent.yaml"), env={}).issues
    spec = validate_file(Path("agent.yaml"), env={}, skills_profile="spec").issues
    assert [(i.severity, i.line) for i in lenient] == [("warning", 4)]
    assert [(i.severity, i.line) for i in spec] == [("error", 4)]


# --- section templates ---------------------------------------------------------------


def test_inline_templates_are_parsed_and_checked(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: x
        prompt:
          identity:
            template: |
              {{ identity }}
              {{ context_json }} {{ tools }}
          workspace:
            template: "{{ workspace }} {{ workspace._root }} {{ workspace['__dict__'] }}"
          memory:
            template: "{% if memories %}"
        """,
    )
    assert lines == [
        # A template problem is reported at the start of its line within the template.
        "agent.yaml:8:7: error: template uses `tools`, which the identity section does not "
        "provide (it has `context_json`, `identity`) [prompt.identity.template]",
        "agent.yaml:10:16: error: template reaches for `__dict__`; the sandbox refuses Python "
        "internals [prompt.workspace.template]",
        "agent.yaml:10:16: error: template reaches for `_root`; the sandbox refuses Python "
        "internals [prompt.workspace.template]",
        "agent.yaml:12:16: error: template syntax error: Unexpected end of template. Jinja was "
        "looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that "
        "needs to be closed is 'if'. [prompt.memory.template]",
    ]


def test_template_files_are_checked_with_their_own_positions(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\nprompt:\n  tools: {file: t/tools.j2}\n  skills: {file: t/none.j2}\n",
        **{
            "t/tools.j2": """\
                {% for tool in tools %}
                - {{ tool.name }}
                {% endfor %}
                {{ skills }}
                {{ guidelines | join(", ") }}
                """
        },
    )
    assert lines == [
        "agent.yaml:6:18: error: template file t/none.j2 not found [prompt.skills.file]",
        "t/tools.j2:4:1: error: template uses `skills`, which the tools section does not provide "
        "(it has `guidelines`, `tools`) [prompt.tools.file]",
    ]


def test_a_template_file_that_is_not_utf8(project: Path) -> None:
    _files(project, {"agent.yaml": HEAD + "identity: x\nprompt: {tools: {file: t.j2}}\n"})
    (project / "t.j2").write_bytes(b"caf\xe9")
    (issue,) = validate_file(Path("agent.yaml"), env={}).issues
    assert (issue.line, issue.column, issue.path) == (4, 24, "prompt.tools.file")
    assert issue.message.startswith("template file t.j2 cannot be read: ")


def test_the_shipped_default_templates_pass_their_own_checks() -> None:
    from assembler.prompt.templates import (
        SECTION_VARIABLES,
        default_template_text,
        template_problems,
    )

    for section in SECTION_VARIABLES:
        assert template_problems(section, default_template_text(section)) == []


# --- Python tool references ----------------------------------------------------------


FEES = """\
import os
from json import dumps as helper

RATE = 150


def quote_fee(weight: int) -> int:
    return weight * RATE


async def fetch_rate() -> int:
    return RATE


class Quote:
    def total(self) -> int:
        return 0


if os.environ.get("X"):
    def conditional() -> None:
        pass

try:
    import json as codec

    def tried() -> None:
        pass
except ImportError:
    codec = None

if os.environ.get("Y"):
    def either() -> None:
        pass
else:
    def either() -> None:
        pass
"""


@pytest.mark.parametrize(
    ("reference", "problem", "uncertain"),
    [
        ("shop.fees:quote_fee", "", ""),
        ("shop.fees:fetch_rate", "", ""),
        ("shop.fees:Quote", "`shop.fees:Quote` is a class, not a function", ""),
        ("shop.fees:total", "`shop.fees` has no top-level function `total`", ""),
        # a `def` under a module-level `if`/`try` runs on import: found, unless the name
        # is bound again elsewhere (which binding wins is then only known at run time)
        ("shop.fees:conditional", "", ""),
        ("shop.fees:tried", "", ""),
        (
            "shop.fees:either",
            "",
            "`shop.fees:either` is bound more than once under `if`/`try`: which one it is is "
            "decided when the module runs, so it is not statically visible",
        ),
        (
            "shop.fees:RATE",
            "",
            "`shop.fees:RATE` is assigned or imported, not defined with `def`; it cannot be "
            "checked statically",
        ),
        (
            "shop.fees:helper",
            "",
            "`shop.fees:helper` is assigned or imported, not defined with `def`; it cannot be "
            "checked statically",
        ),
        ("shop.nothing:f", "module `shop.nothing` not found in package `shop`", ""),
        (
            "shop.fees.deeper:f",
            "module `shop.fees.deeper` not found: `shop.fees` is a module, not a package, and "
            "imports no module as `deeper`",
            "",
        ),
        # below a plain module, a name is the module it imports under that name
        ("shop.fees.codec:dumps", "", ""),
        ("shop.fees.codec:nope", "`shop.fees.codec` has no top-level function `nope`", ""),
        (
            "shop.fees.helper:f",
            "module `shop.fees.helper` not found: `shop.fees` is a module, not a package, and "
            "imports no module as `helper`",
            "",
        ),
        ("os.path:basename", "", ""),
        ("os.path:nope", "`os.path` has no top-level function `nope`", ""),
        (
            "no_such_top_level_xyz:f",
            "module `no_such_top_level_xyz` not found on the manifest's path or among installed "
            "packages",
            "",
        ),
        ("broken:f", "cannot parse broken.py (line 1: invalid syntax)", ""),
        ("json:dumps", "", ""),
        ("json.decoder:nope", "`json.decoder` has no top-level function `nope`", ""),
        ("sys:exit", "", "`sys` is compiled; `exit` cannot be checked statically"),
    ],
)
def test_python_references_resolve_without_importing(
    tmp_path: Path, reference: str, problem: str, uncertain: str
) -> None:
    _files(tmp_path, {"shop/__init__.py": "raise SystemExit('imported!')\n", "shop/fees.py": FEES})
    (tmp_path / "broken.py").write_text("def (:\n", "utf-8")
    modules = set(sys.modules)
    found = resolve_function(reference, [tmp_path])
    assert (found.problem, found.uncertain) == (problem, uncertain)
    assert {m for m in set(sys.modules) - modules if m.split(".")[0] in {"shop", "broken"}} == set()


def test_a_namespace_package_is_not_a_module(tmp_path: Path) -> None:
    (tmp_path / "space").mkdir()
    assert find_module_source("space", [tmp_path]) == (
        None,
        "`space` is a namespace package, not a module",
    )


def test_the_manifest_directory_comes_before_the_workspace_and_installed_packages(
    project: Path,
) -> None:
    """A project `json.py` beside the manifest shadows the standard library's."""
    lines = _validate(
        project,
        "identity: x\ntools: {sets: [{python: 'json:dumps'}]}\n",
        **{"json.py": "def loads(text):\n    return text\n"},
    )
    assert lines == [
        "agent.yaml:4:25: error: `json` has no top-level function `dumps` [tools.sets[0].python]"
    ]


def test_python_tools_in_the_workspace_are_found(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\nworkspace: repo\ntools: {sets: [{python: [tools_pkg.fees:quote]}]}\n",
        **{"repo/tools_pkg/__init__.py": "", "repo/tools_pkg/fees.py": "def quote():\n    pass\n"},
    )
    assert lines == []


# --- extensions ----------------------------------------------------------------------


def test_extensions_are_checked_for_a_setup_function(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: x
        extensions:
          - path: ext/good.py
          - path: ext/bad.py
          - path: ext/gone.py
          - module: ext_pkg
          - entry_point: nobody-installed-this
        """,
        **{
            "ext/good.py": "async def setup(api, options):\n    pass\n",
            "ext/bad.py": "def set_up(api, options):\n    pass\n",
            "ext_pkg/__init__.py": "from ext_pkg.impl import setup\n",
            "ext_pkg/impl.py": "def setup(api, options):\n    pass\n",
        },
    )
    assert lines == [
        "agent.yaml:5:11: error: `good:setup` must be a plain function, not `async def` "
        "[extensions[0].path]",
        "agent.yaml:6:11: error: `bad` has no top-level function `setup` [extensions[1].path]",
        "agent.yaml:7:11: error: extension file ext/gone.py not found [extensions[2].path]",
        "agent.yaml:8:13: warning: `ext_pkg:setup` is assigned or imported, not defined with "
        "`def`; it cannot be checked statically [extensions[3].module]",
        "agent.yaml:9:18: error: no `assembler.extensions` entry point named "
        "`nobody-installed-this` (none are installed) [extensions[4].entry_point]",
    ]


# --- tool mentions -------------------------------------------------------------------


def test_use_patch_when_only_edit_exists_is_a_warning(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: |
          You fix bugs.
          Use `patch` to change files; `edit` is fine too.
        tools:
          sets: [{builtin: coding, allow: [read, edit]}]
        """,
    )
    assert lines == [
        "agent.yaml:5:7: warning: mentions tool `patch`, but no active tool has that name "
        "(active: `edit`, `read`) [identity]"
    ]


def test_mentions_in_guidelines_and_phrases(project: Path) -> None:
    lines = _validate(
        project,
        """\
        identity: Run `pytest` and `make test`; call `deploy` when green.
        tools:
          sets:
            - builtin: readonly
              guidelines: ["The `lookup` tool finds prices.", "Prefer `grep` to `find`."]
          guidelines:
            - Never `write` outside the workspace.
        """,
    )
    assert lines == [
        "agent.yaml:3:46: warning: mentions tool `deploy`, but no active tool has that name "
        "(active: `find`, `grep`, `ls`, `read`) [identity]",
        "agent.yaml:7:25: warning: mentions tool `lookup`, but no active tool has that name "
        "(active: `find`, `grep`, `ls`, `read`) [tools.sets[0].guidelines[0]]",
        "agent.yaml:9:13: warning: mentions tool `write`, but no active tool has that name "
        "(active: `find`, `grep`, `ls`, `read`) [tools.guidelines[0]]",
    ]


def test_mentions_with_mcp_or_extensions_may_still_be_provided_later(project: Path) -> None:
    lines = _validate(
        project,
        "identity: Use `web_search`.\ntools: {sets: [read, {mcp: {command: sh}}]}\n",
    )
    assert lines == [
        "agent.yaml:3:15: warning: mentions tool `web_search`, but no active tool has that name "
        "(active: `read`); MCP servers or extensions may still add it at run time [identity]"
    ]


def test_mentions_in_skill_descriptions_point_into_the_skill_md(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\ntools: {sets: [read]}\nskills: [skills]\n",
        **{
            "skills/fix/SKILL.md": (
                "---\nname: fix\ndescription: |\n  Reproduce first.\n"
                "  Then `apply_patch` the fix.\n---\n"
            )
        },
    )
    assert lines == [
        "skills/fix/SKILL.md:5:8: warning: mentions tool `apply_patch`, but no active tool has "
        "that name (active: `read`) [description]"
    ]


def test_tools_active_by_default_and_memory_adds_remember() -> None:
    assert active_tool_names({}) == ({"read", "bash", "edit", "write"}, False)
    assert active_tool_names({"tools": {"sets": []}, "memory": {}}) == ({"remember"}, False)
    names, open_ended = active_tool_names(
        {"tools": {"sets": [{"python": [{"function": "a:b", "name": "quote"}, "c.d:e"]}]}}
    )
    assert (names, open_ended) == ({"quote", "e"}, False)
    assert active_tool_names({"extensions": [{"path": "x.py"}]})[1] is True


def test_which_back_quoted_words_count_as_tool_mentions() -> None:
    text = "Use `patch`, run `pytest`, call `deploy`, the `lookup` tool, `README.md`, `Read`."
    assert [m.name for m in tool_mentions(text)] == ["patch", "deploy", "lookup", "Read"]


# --- one run reports everything ------------------------------------------------------


def test_schema_errors_and_checks_are_reported_together(project: Path) -> None:
    lines = _validate(
        project,
        "identity: Use `patch`.\nworkspace: nowhere\nlimits: {max_turns: 0}\nskills: [gone]\n",
    )
    assert lines == [
        "agent.yaml:3:15: warning: mentions tool `patch`, but no active tool has that name "
        "(active: `bash`, `edit`, `read`, `write`) [identity]",
        f"agent.yaml:4:12: error: workspace {project.resolve()}/nowhere does not exist [workspace]",
        "agent.yaml:5:21: error: must be at least 1, got 0 [limits.max_turns]",
        "agent.yaml:6:10: error: skill directory gone does not exist [skills[0]]",
    ]


def test_a_value_the_schema_rejected_is_not_checked_again(project: Path) -> None:
    lines = _validate(
        project,
        "identity: x\nextensions: [{module: my-ext}, {path: ext.txt}]\nskills: ['']\n",
    )
    assert lines == [
        "agent.yaml:4:23: error: a module is a dotted Python name, for example "
        "`my_package.guard` [extensions[0].module]",
        "agent.yaml:4:39: error: an extension file is a Python file ending in `.py` "
        "[extensions[1].path]",
        "agent.yaml:5:10: error: must not be empty [skills[0]]",
    ]


def test_the_checked_variables_are_the_ones_the_renderer_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`template_problems` allows exactly the variables `DynamicPromptRenderer` gives
    each section, and templates that validate (the corpus's) render without error."""
    from assembler.prompt import renderer as renderer_module
    from assembler.prompt.renderer import (
        ContextFileView,
        DynamicPromptRenderer,
        MemoryEntry,
        SkillEntry,
        WorkspaceView,
    )
    from assembler.prompt.templates import SECTION_VARIABLES
    from assembler.tools.registry import ToolEntry
    from assembler.validation.load import load_manifest

    passed: dict[str, set[str]] = {}
    real = renderer_module.render_template

    def recording(template: object, variables: dict[str, object], origin: str) -> str:
        section = next(s for s, names in SECTION_VARIABLES.items() if set(variables) == names)
        passed[section] = set(variables)
        return real(template, variables, origin)  # type: ignore[arg-type]

    monkeypatch.setattr(renderer_module, "render_template", recording)
    corpus = (
        Path(__file__).resolve().parents[1]
        / "manifest"
        / "corpus"
        / "valid"
        / "prompt_overrides"
        / "agent.yaml"
    )
    manifest = load_manifest(corpus, env={})
    assert set(manifest.prompt) == set(SECTION_VARIABLES)
    text = DynamicPromptRenderer(manifest.prompt).render(
        identity=manifest.identity,
        context={"team": "docs"},
        tools=[ToolEntry("read", "read a file", "Read a file.")],
        guidelines=["Be brief."],
        workspace=WorkspaceView("/ws", (ContextFileView("AGENTS.md", "Run make."),)),
        skills=[SkillEntry("fix", "Fix bugs.", "/ws/skills/fix/SKILL.md")],
        memory=[MemoryEntry("tabs", "preference", "Indentation", "Use tabs.")],
    )
    assert passed == {section: set(names) for section, names in SECTION_VARIABLES.items()}
    assert "- **fix**: Fix bugs. (/ws/skills/fix/SKILL.md)" in text
    assert "### tabs (preference)" in text
