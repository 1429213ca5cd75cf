"""`/reload`'s summary of the prompt's changes (`cli/prompt_changes.py`)."""

from __future__ import annotations

from assembler.cli.prompt_changes import prompt_changes, sections

BEFORE = "## identity\nYou help.\n\n## tools\n- read\n- bash\n\n## workspace\nwork\n"


def test_sections_by_heading() -> None:
    assert list(sections(BEFORE)) == ["identity", "tools", "workspace"]
    assert sections("intro\n## a\nx\n") == {"(top)": ["intro"], "a": ["x"]}


def test_one_line_per_section_that_changed() -> None:
    after = "## identity\nYou help.\n\n## tools\n- read\n- grep\n- find\n\n## skills\n- fees\n"
    assert prompt_changes(BEFORE, BEFORE) == []
    assert prompt_changes(BEFORE, after) == [
        "~ tools: +2 lines, -1 line",
        "+ skills: new section (1 line)",
        "- workspace: section removed (1 line)",
    ]
