"""Built-in guidelines name only active tools (issue 12): the `readonly` set has no
`bash`, so its prompt must not say "use `grep` rather than `bash` grep". The tool-mention
lint of `assemble validate` is run over the guidelines of every combination of built-in
tools, so a new guideline that points at a tool the agent may lack fails here."""

from __future__ import annotations

from itertools import combinations

import pytest

from assembler.tools.builtin.names import BUILTIN_SETS, BUILTIN_TOOL_NAMES
from assembler.tools.builtin.sets import BUILTIN_TOOLS, resolve_builtin
from assembler.tools.registry import ToolRegistry, names_only_active
from assembler.validation.mentions import tool_mentions

SUBSETS = [
    names
    for size in range(1, len(BUILTIN_TOOL_NAMES) + 1)
    for names in combinations(BUILTIN_TOOL_NAMES, size)
]


@pytest.mark.parametrize("names", SUBSETS, ids=",".join)
def test_the_lint_finds_no_inactive_tool_in_built_in_guidelines(names: tuple[str, ...]) -> None:
    registry = ToolRegistry(resolve_builtin(names))
    _, guidelines = registry.prompt_view()
    for line in guidelines:
        mentioned = {mention.name for mention in tool_mentions(line)}
        assert mentioned <= set(names), f"{line!r} names {mentioned - set(names)}"


def test_the_readonly_set_keeps_its_own_guidelines_and_drops_bash() -> None:
    _, guidelines = ToolRegistry(resolve_builtin(["readonly"])).prompt_view()
    assert guidelines == (
        "Use `grep` to search file contents; narrow a search with its glob or path argument.",
        "Use `find` to locate files by name before reading them.",
    )
    assert not any("bash" in line for line in guidelines)


def test_the_full_set_shows_every_guideline() -> None:
    _, guidelines = ToolRegistry(resolve_builtin(["all"])).prompt_view()
    every = [line for name in BUILTIN_SETS["all"] for line in BUILTIN_TOOLS[name].guidelines]
    assert sorted(guidelines) == sorted(set(every))
    # every built-in tool but the plan tool, which a manifest asks for by name
    assert set(BUILTIN_SETS["all"]) == set(BUILTIN_TOOL_NAMES) - {"todo_write"}


def test_a_guideline_appears_when_the_tool_it_names_is_registered() -> None:
    registry = ToolRegistry(resolve_builtin(["read"]))
    bash_line = "Use `read` instead of `cat`/`head`/`tail` in `bash` to look at files."
    assert bash_line not in registry.prompt_view()[1]
    registry.register(BUILTIN_TOOLS["bash"])
    assert bash_line in registry.prompt_view()[1]


def test_only_built_in_names_in_back_quotes_count() -> None:
    assert names_only_active("Use `read` with `offset`.", {"read"})
    assert not names_only_active("Use `read`, not `bash`.", {"read"})
    assert names_only_active("Prefer grep in bash.", {"read"})  # not quoted: not a mention
