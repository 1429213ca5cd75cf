"""Where a page's links point: the live server (every URL carries the token) or a
report file (in-page anchors). Templates ask `links`, never build URLs themselves."""

from __future__ import annotations

import hashlib
from urllib.parse import quote, urlencode


class ServerLinks:
    """URLs of `assemble view`; each carries the token, so every request has it."""

    report = False

    def __init__(self, token: str) -> None:
        self.token = token

    def _url(self, path: str, **params: object) -> str:
        query = {k: v for k, v in params.items() if v not in (None, "")}
        query["token"] = self.token
        return f"{path}?{urlencode(query)}"

    def home(self, **params: object) -> str:
        return self._url("/", **params)

    def session(self, key: str, page: int | None = None, anchor_id: str = "") -> str:
        url = self._url(f"/session/{quote(key)}", page=page)
        return f"{url}#{anchor_id}" if anchor_id else url

    def prompt(self, key: str, entry: str) -> str:
        return self._url(f"/prompt/{quote(key)}", entry=entry)

    def entry(self, key: str, entry: str) -> str:
        return self._url(f"/entry/{quote(key)}", id=entry)

    def results(self, number: int) -> str:
        return self._url(f"/results/{number}")

    def compare(self, old: int, new: int) -> str:
        return self._url("/compare", old=old, new=new)

    def live(self, key: str, after: int) -> str:
        return self._url(f"/live/{quote(key)}", after=after)

    def live_list(self, **params: object) -> str:
        return self._url("/live-list", **params)

    def static(self, name: str) -> str:
        return self._url(f"/static/{name}")


def anchor(kind: str, value: str) -> str:
    """A stable element id for a report: `kind-` and a hash, whatever `value` holds."""
    return f"{kind}-{hashlib.sha256(value.encode('utf-8', 'replace')).hexdigest()[:12]}"


class ReportLinks:
    """Links inside one report file: sessions and prompts it holds are anchors; a
    session it does not hold has no link."""

    report = True

    def __init__(self, sessions: set[str]) -> None:
        self.sessions = sessions

    def home(self, **params: object) -> str:
        return "#top"

    def session(self, key: str, page: int | None = None, anchor_id: str = "") -> str:
        if key not in self.sessions:
            return ""
        return f"#{anchor_id}" if anchor_id else f"#{anchor('session', key)}"

    def prompt(self, key: str, entry: str) -> str:
        return f"#{anchor('prompt', key + '/' + entry)}"

    def entry(self, key: str, entry: str) -> str:
        return ""  # a report shows every text whole

    def results(self, number: int) -> str:
        return f"#results-{number}"

    def compare(self, old: int, new: int) -> str:
        return "#compare"

    def live(self, key: str, after: int) -> str:
        return ""

    def live_list(self, **params: object) -> str:
        return ""

    def static(self, name: str) -> str:
        return ""
