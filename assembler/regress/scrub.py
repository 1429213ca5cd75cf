"""Secrets out of everything `sessions to-test` writes, counted.

A session holds what tools printed and what the model wrote, so it may hold an API key
a command echoed or a token in a config file the agent read. A test lives in the
project and is shared, so before anything is written three kinds of text are replaced:

* the values of the environment variables the manifest names (`${VAR}` anywhere in it,
  `tools.env.passthrough` names, `model.api_key_env`) and of the providers' own key
  variables, as `[scrubbed:NAME]` (values under 8 characters are left: `1` or `yes`
  is no secret, and replacing it everywhere would wreck the text);
* common credential shapes, whatever variable held them (OpenAI and Anthropic keys,
  GitHub, GitLab, Slack, Stripe, Google and AWS key ids, JSON web tokens, private key
  blocks, `Bearer` tokens, passwords in URLs, `password = "..."` literals), as
  `[scrubbed]`;

The replacement is deterministic, so the replay scrubs what the agent sends now the
same way before comparing: a result that held a secret compares equal when only the
secret is the same (docs/session-tests.md).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, Final

from assembler.manifest.interpolate import referenced_variables

MIN_SECRET_CHARS: Final = 8
PROVIDER_KEYS: Final = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")

_PATTERNS: Final = (
    ("private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
    ("API key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("AWS key id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("JSON web token", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
)  # fmt: skip
# Only the secret part of these is replaced (the group named `secret`).
_KEEPING: Final = (
    ("bearer token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})"),
    ("URL password", r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s:@]+:(?P<secret>[^/?#\s@]+)@"),
    (
        "password",
        r"(?i)\b(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token"
        r"|client_?secret|aws_secret_access_key)\b[\"']?\s*[:=]\s*([\"']?)"
        r"(?P<secret>[A-Za-z0-9_+/=.-]{8,})\1",
    ),
)
# Literal parts that every match of a shape, and of a kept secret, contains: a text
# with none of them is skipped without running the expressions (most tool output).
_SHAPE_MARKS: Final = (
    "PRIVATE KEY", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
    "xox", "_live_", "_test_", "AIza", "AKIA", "ASIA", "eyJ",
)  # fmt: skip
_KEPT_MARKS: Final = (
    ("bearer",),
    ("://",),
    ("password", "passwd", "pwd", "secret", "api", "key", "token"),
)
_SHAPE_MARK: Final = re.compile("|".join(map(re.escape, _SHAPE_MARKS)))
_KEPT_MARK: Final = tuple(
    re.compile("(?i)" + "|".join(map(re.escape, marks))) for marks in _KEPT_MARKS
)
_SHAPES: Final = re.compile(
    "|".join(f"(?P<p{index}>{pattern})" for index, (_, pattern) in enumerate(_PATTERNS))
)
_KEPT: Final = tuple((kind, re.compile(pattern)) for kind, pattern in _KEEPING)


class Scrubber:
    """Replaces secrets in texts and counts what it replaced (`counts`, by kind)."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        known = {
            value: name for name, value in (values or {}).items() if len(value) >= MIN_SECRET_CHARS
        }
        self._values = dict(sorted(known.items(), key=lambda item: -len(item[0])))
        self._value_pattern = (
            re.compile("|".join(re.escape(value) for value in self._values))
            if self._values
            else None
        )
        self.counts: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """`3 secrets scrubbed (2 API key, 1 value of OPENAI_API_KEY)`, or `no secrets found`."""
        if not self.total:
            return "no secrets found"
        parts = ", ".join(f"{count} {kind}" for kind, count in self.counts.most_common())
        noun = "secret" if self.total == 1 else "secrets"
        return f"{self.total} {noun} scrubbed ({parts})"

    def text(self, text: str) -> str:
        """`text` with every secret replaced; counted."""
        if self._value_pattern is not None:
            text = self._value_pattern.sub(self._by_value, text)
        if _SHAPE_MARK.search(text):
            text = _SHAPES.sub(self._shaped, text)
        for (kind, pattern), mark in zip(_KEPT, _KEPT_MARK, strict=True):
            if mark.search(text):
                text = pattern.sub(partial(self._keeping, kind=kind), text)
        return text

    def data(self, value: Any) -> Any:
        """A JSON-like value with every string scrubbed (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value

    def _by_value(self, match: re.Match[str]) -> str:
        name = self._values[match.group(0)]
        self.counts[f"value of {name}"] += 1
        return f"[scrubbed:{name}]"

    def _keeping(self, match: re.Match[str], kind: str) -> str:
        whole, start = match.group(0), match.start()
        secret_at, secret_end = match.start("secret") - start, match.end("secret") - start
        if whole[secret_at:secret_end].startswith("[scrubbed"):
            return whole
        self.counts[kind] += 1
        return whole[:secret_at] + "[scrubbed]" + whole[secret_end:]

    def _shaped(self, match: re.Match[str]) -> str:
        group = next(k for k, v in match.groupdict().items() if v is not None)
        self.counts[_PATTERNS[int(group[1:])][0]] += 1
        return "[scrubbed]"


def manifest_variables(manifest_text: str, names: Iterable[str] = ()) -> list[str]:
    """The environment variables a manifest names: every `${VAR}` in its text, and
    `names` (its passthrough names without `*`, its `api_key_env`)."""
    found = list(referenced_variables(manifest_text))
    found.extend(name for name in names if name and "*" not in name)
    found.extend(PROVIDER_KEYS)
    return list(dict.fromkeys(found))


def scrubber_for(variables: Iterable[str], env: Mapping[str, str] | None = None) -> Scrubber:
    """A scrubber for the values these variables hold in `env` (default `os.environ`)."""
    environment = os.environ if env is None else env
    return Scrubber({name: environment[name] for name in variables if environment.get(name)})
