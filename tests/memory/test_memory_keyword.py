"""Keyword ranking over the index: the pruned top-k is exactly the full BM25 ranking."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.memory._scan import index_record
from assembler.memory.index import StoreIndex
from assembler.memory.keyword import K1, B, rank, record_terms, tokenize
from assembler.memory.records import MemoryRecord, make_record

WORDS = ["deploy", "staging", "vpn", "make", "pnpm", "review", "tests", "release", "friday"]


def reference(records: list[MemoryRecord], query: str) -> list[tuple[str, float]]:
    """BM25 written out plainly: every record scored, terms in sorted order."""
    docs = {r.name: record_terms(r.name, r.description, r.body) for r in records}
    lengths = {name: sum(terms.values()) for name, terms in docs.items()}
    average = (sum(lengths.values()) / len(docs)) or 1.0
    scores: dict[str, float] = {}
    for term in sorted(set(tokenize(query))):
        holders = [name for name, terms in docs.items() if term in terms]
        if not holders:
            continue
        n = len(holders)
        weight = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) * (K1 + 1)
        for name in holders:
            count = docs[name][term]
            norm = K1 * (1 - B + B * lengths[name] / average)
            scores[name] = scores.get(name, 0.0) + weight * count / (count + norm)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def index_of(records: list[MemoryRecord]) -> StoreIndex:
    index = StoreIndex.in_memory()
    with index.writing() as writer:
        writer.put([index_record(r, (i, i, i)) for i, r in enumerate(records)])
    return index


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@st.composite
def stores(draw: st.DrawFn) -> list[MemoryRecord]:
    count = draw(st.integers(min_value=1, max_value=40))
    return [make_record(f"note-{i:02d}", draw(texts), "project", draw(texts)) for i in range(count)]


@settings(max_examples=150, deadline=None)
@given(
    records=stores(),
    query=st.lists(st.sampled_from([*WORDS, "absent", "the"]), min_size=1, max_size=6).map(
        " ".join
    ),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=8)),
)
def test_ranking_with_a_limit_is_the_head_of_the_full_ranking(
    records: list[MemoryRecord], query: str, limit: int | None
) -> None:
    expected = reference(records, query)
    index = index_of(records)
    with index.reading() as reading:
        got = [(entry.name, score) for entry, score in rank(reading, query, limit)]
    assert got == (expected if limit is None else expected[:limit])  # the same floats


def test_common_words_are_read_for_the_candidates_only() -> None:
    """A rare word decides the head; the posting list of a word in every record is not
    read whole (what keeps a first selection fast in a large store)."""
    records = [
        make_record(f"note-{i:03d}", "deploy notes", "project", f"deploy make tests {i}")
        for i in range(300)
    ]
    records.append(make_record("vpn-setup", "deploy over the vpn", "project", "vpn vpn deploy"))
    index = index_of(records)
    full_reads: list[int] = []
    original = index.postings

    def counting(term_id: int) -> list[tuple[int, int, int]]:
        rows = original(term_id)
        full_reads.append(len(rows))
        return rows

    index.postings = counting  # type: ignore[method-assign]
    with index.reading() as reading:
        best = rank(reading, "deploy with the vpn", 1)
    assert [entry.name for entry, _score in best] == ["vpn-setup"]
    assert full_reads == [1]  # the vpn posting list; "deploy" (301 records) only looked up
    assert best == rank(index, "deploy with the vpn")[:1]
