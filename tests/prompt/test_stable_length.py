"""`stable_length`: where a rendered prompt's per-turn part starts (a cache breakpoint
goes before it)."""

from __future__ import annotations

from assembler.prompt.renderer import stable_length


def test_the_stable_part_ends_before_the_memory_section() -> None:
    prompt = "## identity\nYou help.\n\n## memory\n- deploys on Tuesdays\n"
    assert stable_length(prompt) == prompt.index("\n\n## memory\n")
    assert prompt[: stable_length(prompt)] == "## identity\nYou help."


def test_without_a_per_turn_section_all_of_it_is_stable() -> None:
    assert stable_length("## identity\nYou help.\n\n## tools\n- read\n") is None
    # a heading that only starts like the section's is not it
    assert stable_length("## identity\nYou help.\n\n## memory notes are kept elsewhere") is None


def test_a_per_turn_section_at_the_very_start() -> None:
    assert stable_length("\n\n## memory\n- a\n") == 0
