"""Local keyword ranking: a tokenizer, and BM25 over the postings of the store's index.

`keyword` selection must cost no model call and answer within milliseconds, every turn,
in a process that has just started, on a store of a hundred thousand records. So each
record's term counts are computed once, when it is written (`record_terms`), and kept
as postings in the store's index (`assembler.memory.index`); a question reads the
postings of its own words only.

Ranking is BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over name,
description and body, with name and description words counted twice: a record's name
and one-line summary say what it is about better than any word of its body. Scores are
summed over query terms in sorted order and ties are broken by name, so the same store
and question always give the same ranking, bit for bit.

A question made of common words would otherwise read most of the index: with a limit
(the selection needs the best few), terms are read rarest first and reading stops once
no record outside those already seen can reach the top (MaxScore: each term adds less
than its idf weight to any score). The few records that still could are then scored
exactly, so the result is the same as scoring every record.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple, Protocol, TypeVar

_WORD_RE: Final = re.compile(r"[^\W_]+")
NAME_WEIGHT: Final = 2
DESCRIPTION_WEIGHT: Final = 2
K1: Final = 1.2
B: Final = 0.75
# Scores are compared after being summed in different orders (rarest term first while
# pruning, sorted order when exact); this relative margin keeps every record whose exact
# score could reach the cut-off, whatever the rounding.
_MARGIN: Final = 1e-9
# Above this many candidates, scoring them reads whole postings rather than one
# lookup per candidate.
_LOOKUP_LIMIT: Final = 2000

_STOPWORD_TEXT: Final = """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just let
    ll me more most my myself no nor not now of off on once only or other ought our ours
    ourselves out over own re s same she should shouldn so some such t than that the their
    theirs them themselves then there these they this those through to too under until up
    ve very was wasn we were weren what when where which while who whom why will with won
    would wouldn you your yours yourself yourselves please
"""
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def tokenize(text: str) -> list[str]:
    """Lowercase words (letters and digits, any script), stopwords removed."""
    return [word for word in _WORD_RE.findall(text.lower()) if word not in STOPWORDS]


def record_terms(name: str, description: str, body: str) -> dict[str, int]:
    """A record's weighted term counts, in sorted term order."""
    counts: Counter[str] = Counter(tokenize(body))
    for word in tokenize(name.replace("-", " ")):
        counts[word] += NAME_WEIGHT
    for word in tokenize(description):
        counts[word] += DESCRIPTION_WEIGHT
    return dict(sorted(counts.items()))


def idf_weight(records: int, frequency: int) -> float:
    """A term's weight: its idf times (k1 + 1), the most it can add to any score."""
    return math.log(1 + (records - frequency + 0.5) / (frequency + 0.5)) * (K1 + 1)


def length_norm(length: int, average: float) -> float:
    return K1 * (1 - B + B * length / average)


class Named(Protocol):
    @property
    def name(self) -> str: ...


E = TypeVar("E", bound=Named)


class Postings(Protocol[E]):
    """What ranking reads from an index (`StoreIndex` provides it)."""

    def corpus(self) -> tuple[int, int]: ...

    def term_stats(self, terms: Sequence[str]) -> dict[str, tuple[int, int]]: ...

    def postings(self, term_id: int) -> list[tuple[int, int, int]]: ...

    def postings_for(self, term_id: int, records: Sequence[int]) -> list[tuple[int, int, int]]: ...

    def entries_by_id(self, ids: Iterable[int]) -> dict[int, E]: ...


class _Query(NamedTuple):
    """A question's terms present in the index, in sorted order, with what BM25 needs."""

    terms: list[str]
    ids: dict[str, int]
    weights: dict[str, float]
    average: float


def rank(index: Postings[E], query: str, limit: int | None = None) -> list[tuple[E, float]]:
    """Records matching at least one word of `query`, best first, ties by name; the
    first `limit` of them when given. Call it inside one read transaction."""
    terms = sorted(set(tokenize(query)))
    total, total_length = index.corpus()
    if not terms or not total:
        return []
    stats = index.term_stats(terms)
    present = [term for term in terms if term in stats]
    if not present:
        return []
    question = _Query(
        present,
        {term: stats[term][0] for term in present},
        {term: idf_weight(total, stats[term][1]) for term in present},
        (total_length / total) or 1.0,
    )
    contributions = _contributions(index, question, limit)
    # Exact scores: each record's contributions summed in sorted term order, from 0.0,
    # so a score is the same float however the record was found.
    scores: dict[int, float] = {}
    for term in question.terms:
        for record, value in contributions.get(term, {}).items():
            scores[record] = scores.get(record, 0.0) + value
    if limit is not None and len(scores) > limit:
        # Names are needed only to order the best (and whatever ties with the last).
        threshold = heapq.nlargest(limit, scores.values())[-1]
        scores = {record: score for record, score in scores.items() if score >= threshold}
    entries = index.entries_by_id(scores)
    ranked = top({entries[record].name: score for record, score in scores.items()}, limit)
    by_name = {entry.name: entry for entry in entries.values()}
    return [(by_name[name], score) for name, score in ranked]


def _contributions(
    index: Postings[E], question: _Query, limit: int | None
) -> dict[str, dict[int, float]]:
    """Per term, what it adds to the score of each record that may be among the best
    `limit` (every matching record when no limit).

    Terms are taken rarest (heaviest) first. While records outside those seen could
    still reach the top `limit`, a term's whole posting list is read; after that, only
    the candidates are looked up, and a candidate is dropped as soon as even every
    remaining term at its full weight could not lift it to the current cut-off.
    """
    weights = question.weights
    order = sorted(question.terms, key=lambda term: (-weights[term], term))
    contributions: dict[str, dict[int, float]] = {}
    partial: dict[int, float] = {}
    candidates: list[int] | None = None  # None: every record is still possible
    for done, term in enumerate(order, start=1):
        weight = weights[term]
        if candidates is None or len(candidates) > _LOOKUP_LIMIT:
            rows = index.postings(question.ids[term])
        else:
            rows = index.postings_for(question.ids[term], candidates)
        wanted = None if candidates is None else set(candidates)
        added: dict[int, float] = {}
        for record, count, length in rows:
            if wanted is None or record in wanted:
                added[record] = weight * count / (count + length_norm(length, question.average))
        contributions[term] = added
        for record, value in added.items():
            partial[record] = partial.get(record, 0.0) + value
        if limit is None or len(partial) < limit:
            continue
        rest = math.fsum(weights[later] for later in order[done:])
        pool = partial if candidates is None else {r: partial[r] for r in candidates}
        threshold = heapq.nlargest(limit, pool.values())[-1]
        if candidates is None and rest * (1 + _MARGIN) >= threshold * (1 - _MARGIN):
            continue  # a record not seen yet could still reach the top
        cut = threshold * (1 - _MARGIN) - rest * (1 + _MARGIN)
        candidates = [record for record, score in pool.items() if score >= cut]
    if candidates is not None:
        kept = set(candidates)
        contributions = {
            term: {r: v for r, v in added.items() if r in kept}
            for term, added in contributions.items()
        }
    return contributions


def top(scores: Mapping[str, float], limit: int | None = None) -> list[tuple[str, float]]:
    """`scores` ranked best first, ties by name, cut to `limit`.

    With a limit, only records scoring at least the limit-th best score are sorted: a
    question made of common words can match most of the store, and sorting thousands
    of records to keep five would be most of a turn's cost.
    """
    if limit is not None and len(scores) > limit:
        threshold = heapq.nlargest(limit, scores.values())[-1]
        ranked = [item for item in scores.items() if item[1] >= threshold]
    else:
        ranked = list(scores.items())
    ranked.sort(key=_rank_key)
    return ranked if limit is None else ranked[:limit]


def _rank_key(item: tuple[str, float]) -> tuple[float, str]:
    return (-item[1], item[0])
