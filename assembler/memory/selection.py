"""Which records reach the model this turn: a strategy, then the budget.

Strategies (the manifest's `memory.selection.strategy`):

- `all`: every record in name order, until the budget is full.
- `keyword`: BM25 ranking of the user's latest message against the records, local
  and deterministic, read from the store's index (`assembler.memory.keyword`).
- `model`: one side request to the agent's model with the catalog of names and
  descriptions; it answers with a JSON list of names. An answer that is not such a
  list, or names a record that does not exist, selects nothing and leaves a
  diagnostic, as does a provider error: memory must never break a turn.
- `none`: nothing.

The budget is `max_records` records and `max_chars` characters of bodies. Candidates
are taken in order; one whose body does not fit in what is left is passed over (a
shorter one further down may still fit), so the budget is filled greedily without
ever being exceeded. Bodies are read from disk only for the records chosen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory._index_types import IndexEntry
from assembler.memory._model import ask_model, describe_error, parse_json_answer, preview
from assembler.memory.keyword import rank
from assembler.memory.store import MemoryStore
from assembler.prompt.renderer import MemoryEntry
from assembler.providers.base import ModelProvider

_RANK_ALL: Final = 5000  # past this many, rank everything at once
SELECTION_SYSTEM: Final = (
    "You pick which saved memories would help answer the user's next message. "
    "Answer with only a JSON list of memory names from the catalog, most useful first, "
    "at most {limit}. Answer [] when none would help."
)


@dataclass(frozen=True)
class Selection:
    """The memories chosen for one turn, and what went wrong while choosing."""

    entries: tuple[MemoryEntry, ...] = ()
    diagnostics: tuple[str, ...] = ()


def fit_budget(
    candidates: Iterable[IndexEntry], max_records: int, max_chars: int
) -> list[IndexEntry]:
    """Take candidates in order while they fit (see the module doc)."""
    chosen: list[IndexEntry] = []
    if max_records <= 0 or max_chars <= 0:
        return chosen
    used = 0
    for entry in candidates:
        if entry.chars > max_chars - used:
            continue
        chosen.append(entry)
        used += entry.chars
        if len(chosen) >= max_records or used >= max_chars:
            break
    return chosen


class Selector:
    """Runs the policy's strategy against one store."""

    def __init__(
        self,
        store: MemoryStore,
        policy: MemoryPolicy,
        provider: ModelProvider | None = None,
        *,
        model: str = "",
    ) -> None:
        self.store = store
        self.policy = policy
        self.provider = provider
        self.model = model

    async def select(self, user_message: str) -> Selection:
        """This turn's memories for `user_message`; never raises for a model's mistake."""
        strategy = self.policy.strategy
        diagnostics: list[str] = []
        if strategy == "none" or not len(self.store):
            return Selection()
        if strategy == "all":
            candidates: Iterable[IndexEntry] = self.store.iter_catalog()
        elif strategy == "keyword":
            candidates = self.rank(user_message)
        else:
            candidates = await self._ask(user_message, diagnostics)
        chosen = fit_budget(candidates, self.policy.max_records, self.policy.max_chars)
        return Selection(self._load(chosen, diagnostics), tuple(diagnostics))

    def rank(self, user_message: str) -> Iterator[IndexEntry]:
        """Every record matching a word of the message, best first (keyword strategy).

        Lazy: the budget is usually full after the first few, and ranking the best few
        reads far less of the index than ranking everything (`keyword.rank`). So the
        best `2 * max_records` are ranked first, eight times as many if the budget asks
        for more, and so on; each longer ranking starts with the shorter one.
        """
        limit: int | None = 2 * max(self.policy.max_records, 1)
        given: set[str] = set()
        while True:
            with self.store.index.reading() as index:
                ranked = rank(index, user_message, limit)
            for entry, _score in ranked:
                if entry.name not in given:
                    given.add(entry.name)
                    yield entry
            if limit is None or len(ranked) < limit:
                return
            limit = limit * 8 if limit < _RANK_ALL else None

    async def _ask(self, user_message: str, diagnostics: list[str]) -> list[IndexEntry]:
        if self.provider is None:
            diagnostics.append("memory selection: strategy `model` needs a model; none selected")
            return []
        catalog = "\n".join(
            f"- {entry.name} ({entry.type}): {entry.description}" for entry in self.store.catalog()
        )
        prompt = f"Memory catalog:\n{catalog}\n\nThe user's message:\n{user_message}"
        system = SELECTION_SYSTEM.format(limit=self.policy.max_records)
        try:
            answer = await ask_model(self.provider, system=system, prompt=prompt, model=self.model)
        except Exception as e:  # any provider failure is a diagnostic, never a broken turn
            diagnostics.append(
                f"memory selection: the model request failed ({describe_error(e)}); "
                "no memory selected this turn"
            )
            return []
        try:
            names = self._names(answer)
        except ValueError as e:
            diagnostics.append(
                f"memory selection: invalid answer from the model: {e}; "
                "no memory selected this turn"
            )
            return []
        entries = self.store.entries
        return [entries[name] for name in names]

    def _names(self, answer: str) -> list[str]:
        value = parse_json_answer(answer)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"expected a JSON list of names, got {preview(answer)}")
        unknown = [name for name in value if name not in self.store.entries]
        if unknown:
            raise ValueError(f"unknown memory name(s) {', '.join(map(repr, unknown))}")
        return list(dict.fromkeys(value))

    def _load(
        self, chosen: Sequence[IndexEntry], diagnostics: list[str]
    ) -> tuple[MemoryEntry, ...]:
        """Read the chosen bodies; a file damaged since the index was read is skipped."""
        loaded: list[MemoryEntry] = []
        used = 0
        for entry in chosen:
            try:
                record = self.store.get(entry.name)
            except MemoryStoreError as e:
                diagnostics.append(f"memory selection: {e}; skipped")
                continue
            if record is None or used + len(record.body) > self.policy.max_chars:
                continue
            used += len(record.body)
            loaded.append(MemoryEntry(record.name, record.type, record.description, record.body))
        return tuple(loaded)
