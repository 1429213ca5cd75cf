"""The HTML of every page: Jinja2 templates shipped in the package, rendered with
autoescape on, so every value from a file is escaped (`&<>"'`); charts come in as
`Markup` built by `charts`, which escapes its labels itself.

The templates are the view's own (package data, never a project's), so they render in
a plain `Environment`; `StrictUndefined` makes a misspelt field an error in tests
rather than an empty cell.
"""

from __future__ import annotations

import base64
import hashlib
import html as std_html
import time
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined


class Safe(str):
    """Text the templates insert as it is: markup this package made itself (an SVG
    chart whose labels it escaped, its own style sheet). Jinja2 takes any object with
    `__html__` as markup, so the view needs no import of `markupsafe` of its own."""

    __slots__ = ()

    def __html__(self) -> str:
        return str(self)


def escape(text: object) -> str:
    """`&`, `<`, `>`, `"` and `'` as entities: text made safe in markup and attributes."""
    return std_html.escape(str(text), quote=True)


NONE = "\u2013"
"""An en dash: what a cell shows for a value the file does not have."""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The server's policy: only the view's own script and style, no external origin."""


def static_text(name: str) -> str:
    return resources.files("assembler.view").joinpath("static", name).read_text("utf-8")


def report_csp(css: str) -> str:
    """A report file's policy: no script at all, its one inline style by hash, nothing
    loaded from anywhere (a report opened from disk or a CI artifact page)."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode()
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def _when(value: object) -> str:
    """An ISO time as `2026-12-01 21:57:45 UTC`."""
    text = str(value or "")
    if len(text) >= 19 and text[10] == "T":
        return text[:10] + " " + text[11:19] + " UTC"
    return text or NONE


def _ago(value: object) -> str:
    if not isinstance(value, int | float):
        return NONE
    seconds = max(0.0, time.time() - value)
    if seconds < 60:
        return f"{seconds:.0f} s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h ago"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _seconds(value: object) -> str:
    if not isinstance(value, int | float):
        return NONE
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


@cache
def environment() -> Environment:
    folder = resources.files("assembler.view").joinpath("templates")
    env = Environment(
        loader=FileSystemLoader(str(folder)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["ago"] = _ago
    env.filters["seconds"] = _seconds
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def render_items(items: list[Any], key: str, links: Any) -> str:
    """The `<li>` of each item, for a live page's tail."""
    macro = environment().get_template("macros.html").module.item_card  # type: ignore[attr-defined]
    return "".join(str(macro(item, key, links)) for item in items)
