"""The data of each page from a real run of the shipping example: each tool call with
its audit record, the guard's block named, the recorded prompt with its sources."""

from __future__ import annotations

from pathlib import Path

from view_corpus import shipping_session

from assembler.view import pages
from assembler.view.catalog import Catalog


def test_a_real_session_page(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = shipping_session(tmp_path, data)
    catalog = Catalog([data])
    key = catalog.key_of(path)
    assert key is not None
    page = pages.session_page(catalog, key)
    assert page.status == "completed" and page.pages == 1
    calls = [call for item in page.items for call in item.calls]
    assert [c.name for c in calls] == ["bash", "read", "edit", "edit", "bash"]
    assert [c.audit.verdict for c in calls if c.audit] == ["ran", "ran", "blocked", "ran", "ran"]
    blocked = calls[2].audit
    assert blocked is not None and blocked.summary.startswith("blocked by protect_tests: ")
    assert blocked.source == "builtin" and '"tests/test_fees.py"' in calls[2].arguments.shown
    kinds = [item.kind for item in page.items]
    assert kinds[:3] == ["run_start", "user", "prompt"] and kinds[-1] == "run_end"

    (entry, turn, _), = page.prompts  # fmt: skip
    prompt = pages.prompt_page(catalog, key, entry)
    assert turn == 1 and prompt.previous == ""
    assert [s.name for s in prompt.sections] == ["identity", "tools", "workspace", "skills"]
    identity = prompt.sections[0]
    assert identity.sources[0].endswith("agents/shipping-fixer.yaml:5: identity")
    assert "context file: AGENTS.md" in prompt.sections[2].sources
    assert [t.name for t in prompt.tools] == ["read", "bash", "edit"]
    assert prompt.text.startswith("## identity\nYou are a careful maintainer")


def test_the_list_pages_and_filters(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shipping_session(tmp_path, data)
    catalog = Catalog([data])
    listing = pages.session_list(catalog)
    (row,) = listing.rows
    assert (row.agent, row.turns, row.status) == ("shipping-fixer", 6, "completed")
    assert row.prompt == "Fix the failing shipping test."
    assert pages.session_list(catalog, query="FAILING SHIPPING").rows
    assert not pages.session_list(catalog, query="no such words").rows
    assert not pages.session_list(catalog, status="live").rows
    assert pages.session_list(catalog, agent="shipping-fixer").rows


def test_a_long_text_is_cut_on_the_page_and_whole_on_its_own(tmp_path: Path) -> None:
    from assembler.messages import ToolResultMessage
    from assembler.sessions.store import SessionStore

    data = tmp_path / "data"
    session = SessionStore(data / "sessions" / "a").create("a", None, "m")
    long = "".join(f"line {n}\n" for n in range(3000))
    entry = session.append_message(ToolResultMessage("c1", "read", long))
    catalog = Catalog([data])
    key = catalog.key_of(session.path)
    assert key is not None
    (item,) = pages.session_page(catalog, key).items
    assert item.text is not None and item.text.left_out == len(long) - 4_000
    _, whole = pages.entry_page(catalog, key, entry.id)
    assert whole.text is not None and whole.text.shown == long and whole.text.left_out == 0
