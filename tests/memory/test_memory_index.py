"""The SQLite index on its own: any sequence of writes leaves it consistent."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.memory._index_writer import pack_ids, unpack_ids
from assembler.memory._scan import IndexedRecord, index_record
from assembler.memory.index import StoreIndex
from assembler.memory.records import make_record

NAMES = [f"note-{i}" for i in range(6)]
WORDS = ["deploy", "staging", "vpn", "make", "pnpm", "review"]


@given(st.lists(st.integers(min_value=0, max_value=2**40), unique=True, max_size=300))
def test_term_ids_pack_and_unpack(ids: list[int]) -> None:
    assert unpack_ids(pack_ids(ids)) == sorted(ids)


def indexed(name: str, body: str, stamp: int) -> IndexedRecord:
    return index_record(make_record(name, "about it", "project", body), (stamp, stamp, stamp))


steps = st.lists(
    st.tuples(
        st.sampled_from(["put", "delete", "put-two"]),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    ),
    max_size=25,
)


@settings(max_examples=80, deadline=None)
@given(steps)
def test_any_sequence_of_writes_keeps_rows_postings_and_totals_in_step(
    script: list[tuple[str, str, str]],
) -> None:
    index = StoreIndex.in_memory()
    expected: dict[str, IndexedRecord] = {}
    for number, (action, name, body) in enumerate(script):
        with index.writing() as writer:
            if action == "delete":
                assert writer.delete(name) == (name in expected)
                expected.pop(name, None)
            else:
                batch = [indexed(name, body, number)]
                if action == "put-two":
                    other = NAMES[(NAMES.index(name) + 1) % len(NAMES)]
                    batch.append(indexed(other, body + " extra", number))
                writer.put(batch)
                expected.update((item.entry.name, item) for item in batch)
    state = index.state()
    assert state.records == len(expected) == len(index.stamps())
    assert state.total_length == sum(sum(item.terms.values()) for item in expected.values())
    assert state.changes == len(script)
    for name, item in expected.items():
        assert index.entry(name) == item.entry
    frequencies = Counter(term for item in expected.values() for term in item.terms)
    stats = index.term_stats(sorted({*WORDS, *frequencies}))
    assert {term: df for term, (_id, df) in stats.items()} == dict(frequencies)
    for term, (term_id, _df) in stats.items():
        holders = {record for record, _count, _length in index.postings(term_id)}
        by_id = index.entries_by_id(holders)
        assert sorted(entry.name for entry in by_id.values()) == sorted(
            name for name, item in expected.items() if term in item.terms
        )
        for record, count, length in index.postings(term_id):
            item = expected[by_id[record].name]
            assert (count, length) == (item.terms[term], sum(item.terms.values()))
