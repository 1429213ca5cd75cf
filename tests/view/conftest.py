"""The `browser` fixture of the view's browser tests (see `view_browser`)."""

from __future__ import annotations

from view_browser import browser

__all__ = ["browser"]
