"""`assemble report`'s file: everything inline, no script, no external reference, the
whole conversation, children followed, results with their evidence."""

from __future__ import annotations

import html
import re
from pathlib import Path

from view_corpus import PAYLOADS, hostile_results, hostile_session, results_file, shipping_session

from assembler.view.report import build_report


def external_references(text: str) -> list[str]:
    return re.findall(r"""(?:src|href|action)\s*=\s*["']?(?!#)[^"'\s>]+""", text)


def test_a_session_report(tmp_path: Path) -> None:
    path = shipping_session(tmp_path, tmp_path / "data")
    text = build_report(path)
    assert "<script" not in text and external_references(text) == []
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert csp is not None  # attribute text: the browser reads it unescaped
    assert html.unescape(csp.group(1)).startswith("default-src 'none'; style-src 'sha256-")
    assert "blocked by protect_tests" in text and "math.ceil(weight_kg)" in text
    assert "## identity" in text and "context file: AGENTS.md" in text  # the prompt, inline


def test_every_payload_is_text(tmp_path: Path) -> None:
    session = hostile_session(tmp_path)
    text = build_report(session.path)
    for payload in PAYLOADS:
        if any(c in payload for c in "<>\"'"):
            assert payload not in text  # escaped wherever it appears
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text and "<img" not in text and "<iframe" not in text
    assert "{{ 7*7 }}{% if 1 %}jinja{% endif %}" in text  # shown as written: no template ran
    results = build_report(hostile_results(tmp_path / "r.jsonl"))
    assert "<script" not in results and "<img" not in results


def test_a_results_report_with_compare(tmp_path: Path) -> None:
    old = results_file(tmp_path / "old.jsonl", {"fix": ["passed"], "explain": ["passed"]})
    new = results_file(tmp_path / "new.jsonl", {"fix": ["failed"], "explain": ["passed"]})
    text = build_report(new, old)
    assert "1 worse" in text and "exit 1: FAILED" in text
    assert text.index("What changed") < text.index("Eval results")
