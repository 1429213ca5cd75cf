"""What `bench/mutation.py` changes, and what it leaves alone (docs/testing.md).

A mutant in a docstring, an annotation or the words of an error message would be
noise that no honest test kills; a mutant that did not apply where it says would make
every score meaningless.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from _mutants import mutants, mutated_tree  # noqa: E402
from mutation import MODULES, equivalents  # noqa: E402

SOURCE = textwrap.dedent(
    '''
    """Module docstring."""
    from __future__ import annotations
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        from pathlib import Path

    LIMIT = 64
    """What the limit is for."""


    class Box:
        size: int = 3

        def __repr__(self) -> str:
            return "Box()"


    def pick(items: list[int] | None, wanted: str = "a") -> int | None:
        """Docstring."""
        if not items:
            raise ValueError(f"no items for {wanted!r}")
        for item in items:
            if item > LIMIT and item != 0:
                return item
        samples = {"x": 1}  # pragma: no mutate (sample data)
        items.append(len(samples))
        return None
    '''
)


def described() -> list[str]:
    return [f"{m.line}: {m.before} -> {m.after}" for m in mutants("m.py", SOURCE)]


def test_the_slips_a_test_should_notice_are_made() -> None:
    assert described() == [
        "9: LIMIT = 64 -> LIMIT = 65",
        "20: 'a' -> ''",
        "22: not items -> items",
        "23: raise ValueError(f'no items for {wanted!r}') -> pass",
        "25: item > LIMIT and item != 0 -> not (item > LIMIT and item != 0)",
        "25: item > LIMIT and item != 0 -> item > LIMIT or item != 0",
        "25: item > LIMIT and item != 0 -> item >= LIMIT and item != 0",
        "25: item > LIMIT and item != 0 -> item > LIMIT and item == 0",
        "25: item > LIMIT and item != 0 -> item > LIMIT and item != 1",
        "26: return item -> return None",
        "28: items.append(len(samples)) -> pass",
    ]


def test_declarations_and_messages_are_left_alone() -> None:
    found = "\n".join(described())
    for untouched in ("docstring", "What the limit", "TYPE_CHECKING", "int | None", "size = 3"):
        assert untouched not in found
    assert found.count("no items for") == 1  # only the raise removed, never its words
    assert "Box()" not in found  # __repr__
    assert "samples = " not in found  # the pragma


def test_each_mutant_applies_exactly_its_change() -> None:
    original = ast.dump(ast.parse(SOURCE))
    for mutant in mutants("m.py", SOURCE):
        changed = ast.unparse(mutated_tree(SOURCE, mutant))
        assert ast.dump(ast.parse(changed)) != original, mutant.ident
        assert mutant.after.replace(" ", "") in changed.replace(" ", "").replace("\n", ""), (
            mutant.ident
        )


def test_every_configured_module_and_test_path_exists() -> None:
    for module, tests in MODULES.items():
        assert (REPO / module).is_file(), module
        for path in tests:
            file, _, name = path.partition("::")  # a path, or a test's node id
            assert (REPO / file).exists(), path
            if name:
                assert f"def {name}(" in (REPO / file).read_text(encoding="utf-8"), path


def test_the_equivalents_list_is_read_with_a_reason_each() -> None:
    listed = equivalents()
    assert listed, "docs/testing.md lists no equivalent mutant"
    for entry in listed.values():
        assert (REPO / entry.path).is_file(), entry
        assert len(entry.why.split()) >= 4, entry
