"""What `/reload` changed in the system prompt, section by section.

The prompt is made of sections, each headed by a `## name` line (DESIGN.md section 4);
a reload can add one (a first skill), drop one, or change one (an edited context file,
a new tool). The person sees one line per section that changed, with the lines it
gained and lost, rather than a diff of the whole prompt: which part moved is what tells
them whether the reload did what they meant.
"""

from __future__ import annotations

import difflib

_HEADING = "## "


def sections(prompt: str) -> dict[str, list[str]]:
    """The prompt's sections by name, in order; text before the first heading is `(top)`."""
    found: dict[str, list[str]] = {}
    current = "(top)"
    for line in prompt.splitlines():
        if line.startswith(_HEADING):
            current = line[len(_HEADING) :].strip() or "(unnamed)"
            found.setdefault(current, [])
            continue
        found.setdefault(current, []).append(line)
    return {name: lines for name, lines in found.items() if name != "(top)" or any(lines)}


def prompt_changes(before: str, after: str) -> list[str]:
    """One line per section added, removed or changed; empty when nothing changed."""
    old, new = sections(before), sections(after)
    changes = []
    for name in [*new, *(name for name in old if name not in new)]:
        if name not in old:
            changes.append(f"+ {name}: new section ({_lines(len(new[name]))})")
        elif name not in new:
            changes.append(f"- {name}: section removed ({_lines(len(old[name]))})")
        elif old[name] != new[name]:
            added = removed = 0
            for line in difflib.ndiff(old[name], new[name]):
                added += line.startswith("+ ")
                removed += line.startswith("- ")
            changes.append(f"~ {name}: +{_lines(added)}, -{_lines(removed)}")
    return changes


def _lines(count: int) -> str:
    return "1 line" if count == 1 else f"{count} lines"
