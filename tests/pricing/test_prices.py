"""The price table and the cost of a response: family prefixes, cache prices, models
without a price."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from assembler.messages import Usage
from assembler.pricing import Price, format_cost, known_price, price_source


@pytest.mark.parametrize(
    ("provider", "model", "family_input"),
    [
        ("anthropic", "claude-sonnet-4-5-20250929", 3),
        ("anthropic", "claude-sonnet-4", 3),
        ("openai", "gpt-4o-mini", 0.15),
        ("openai", "gpt-4o", 2.5),
        ("openai", "openai/gpt-4o-mini", 0.15),  # a router's vendor/ path
        ("openai", "GPT-4o-mini", 0.15),
    ],
)
def test_a_model_gets_its_familys_price(provider: str, model: str, family_input: float) -> None:
    price = known_price(provider, model)
    assert price is not None and price.input == family_input


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "my-finetune-7"),
        ("openai", "gpt-4omega"),  # a prefix only counts at a boundary
        ("ollama", "gpt-4o"),  # one's own server is not billed per token
        ("scripted", "replay.yaml"),
    ],
)
def test_unknown_models_and_local_servers_have_no_price(provider: str, model: str) -> None:
    assert known_price(provider, model) is None


def test_cost_charges_cache_reads_and_writes_at_their_prices() -> None:
    price = Price(input=3, output=15, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=10_000, output_tokens=1_000, cache_read_tokens=6_000, cache_write_tokens=3_000
    )
    expected = (1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75 + 1_000 * 15) / 1e6
    assert price.cost(usage) == pytest.approx(expected)
    plain = Price(input=1, output=2)  # cache prices default to the input price
    assert plain.cost(usage) == pytest.approx((10_000 * 1 + 1_000 * 2) / 1e6)
    assert format_cost(0.01234) == "$0.0123" and format_cost(12.5) == "$12.50"


def test_every_row_of_the_table_is_a_sane_price() -> None:
    text = resources.files("assembler.pricing").joinpath("prices.json").read_text("utf-8")
    families = json.loads(text)["families"]
    assert len(families) > 20
    for name, row in families.items():
        price = Price.from_mapping(row)
        assert 0 < price.input <= price.output, name
        assert price.read <= price.input <= price.write, name
    assert "checked" in price_source()
