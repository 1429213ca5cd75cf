"""What tokens cost: the price table of known models, a manifest's own price, and the
cost of a response's usage.

The table (`prices.json`, package data) is our own, kept small: the model families
agent-assembler knows, in US dollars per million tokens, read once on first use so
that importing this module (and `assemble validate`) costs nothing. docs/decisions.md
says why it is not the `genai-prices` package. A manifest's `model.price` wins over
the table; a model without either has no known price, and a `cost_usd` budget for it
is refused (at `validate` and when a run starts), since a budget that cannot count
is no budget.

Usage counts every input token in `input_tokens`, cached or not (see `Usage`): the
cost charges cache reads at `cache_read`, cache writes at `cache_write`, the rest at
`input`. A price without `cache_read` (or `cache_write`) charges those at `input`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assembler.messages import Usage

__all__ = [
    "PRICE_FIELDS",
    "Price",
    "format_cost",
    "known_price",
    "price_source",
    "round_cost",
]

PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
"""The fields of `model.price`, each in US dollars per million tokens."""

_PER_TOKEN = 1e-6

_UNPRICED_PROVIDERS = frozenset({"scripted", "ollama", "llamacpp", "vllm", "lmstudio"})
"""A replay costs nothing, and a model on one's own server is not billed per token:
neither has a table price (a manifest may still give one)."""

_BOUNDARY = frozenset("-:._@ ")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens: input, output, and reading from and writing to
    the prompt cache (None: the input price)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    read: float = field(init=False, repr=False, compare=False)
    """What a cache read costs (`cache_read`, else `input`)."""
    write: float = field(init=False, repr=False, compare=False)
    """What a cache write costs (`cache_write`, else `input`)."""
    held: float = field(init=False, repr=False, compare=False)
    """What a budget holds per input token not likely read from the cache: it may be
    written to it, so the larger of `input` and `write`."""
    read_token: float = field(init=False, repr=False, compare=False)
    """`read` per token (not per million): a budget's check before every request
    multiplies by it, and one multiplication fewer there is worth a field."""
    held_token: float = field(init=False, repr=False, compare=False)
    """`held` per token."""
    output_token: float = field(init=False, repr=False, compare=False)
    """`output` per token."""

    def __post_init__(self) -> None:
        # worked out once: a budget reads them before every request
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        object.__setattr__(self, "read", read)
        object.__setattr__(self, "write", write)
        object.__setattr__(self, "held", max(self.input, write))
        object.__setattr__(self, "read_token", read * _PER_TOKEN)
        object.__setattr__(self, "held_token", self.held * _PER_TOKEN)
        object.__setattr__(self, "output_token", self.output * _PER_TOKEN)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Price:
        """From a validated mapping (`model.price`, a table row)."""

        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        return cls(
            input=float(data["input"]),
            output=float(data["output"]),
            cache_read=number("cache_read"),
            cache_write=number("cache_write"),
        )

    def to_dict(self) -> dict[str, float]:
        data = {"input": self.input, "output": self.output}
        if self.cache_read is not None:
            data["cache_read"] = self.cache_read
        if self.cache_write is not None:
            data["cache_write"] = self.cache_write
        return data

    def cost(self, usage: Usage) -> float:
        """What `usage` costs, in US dollars."""
        return _PER_TOKEN * (
            usage.uncached_input_tokens * self.input
            + usage.cache_read_tokens * self.read
            + usage.cache_write_tokens * self.write
            + usage.output_tokens * self.output
        )


@cache
def _table() -> Mapping[str, Price]:
    text = _prices_text()
    families = json.loads(text)["families"]
    return MappingProxyType({name: Price.from_mapping(row) for name, row in families.items()})


def _prices_text() -> str:
    # imported here: importlib.resources brings zipfile, tempfile and more, start-up
    # cost for every command that only needs the `Price` type (a manifest loads it)
    from importlib import resources

    return resources.files(__package__).joinpath("prices.json").read_text("utf-8")


@cache
def _longest_first() -> tuple[str, ...]:
    return tuple(sorted(_table(), key=len, reverse=True))


def price_source() -> str:
    """Where the table's figures come from and when they were checked (for docs)."""
    data = json.loads(_prices_text())
    return f"{data['about']} (checked {data['checked']})"


def known_price(provider: str, model: str) -> Price | None:
    """The table's price of `model`, matched by family prefix after any `vendor/` path
    (`claude-sonnet-4-5-20250929` is `claude-sonnet-4`, `openai/gpt-4o-mini` is
    `gpt-4o-mini`); None when unknown, for a replay and for a local server."""
    if provider in _UNPRICED_PROVIDERS:
        return None
    name = model.strip().lower().rsplit("/", 1)[-1]
    table = _table()
    for family in _longest_first():
        if name.startswith(family) and (len(name) == len(family) or name[len(family)] in _BOUNDARY):
            return table[family]
    return None


def round_cost(value: float) -> float:
    """A cost as files and events store it: to a millionth of a dollar."""
    return round(value, 6)


def format_cost(value: float) -> str:
    """`$0.0123`, `$1.24`: cents for a dollar and up, four places below."""
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.4f}"
