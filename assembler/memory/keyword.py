"""Local keyword ranking: a tokenizer and an in-memory BM25 inverted index.

`keyword` selection must cost no model call and answer within milliseconds on a store
of ten thousand records, every turn. So each record's term counts are computed once,
when it is written, and kept in the store's JSON index as a compact string
(`record_terms`); a session builds the inverted index from those strings the first
time it selects, then keeps it up to date record by record (`KeywordIndex.sync`).

Ranking is BM25 (k1=1.2, b=0.75) over name, description and body, with name and
description words counted twice: a record's name and one-line summary say what it is
about better than any word of its body. Scores are summed over query terms in sorted
order and ties are broken by name, so the same store and question always give the same
ranking.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Final, Protocol

_WORD_RE: Final = re.compile(r"[^\W_]+")
NAME_WEIGHT: Final = 2
DESCRIPTION_WEIGHT: Final = 2
K1: Final = 1.2
B: Final = 0.75

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


def record_terms(name: str, description: str, body: str) -> str:
    """A record's weighted term counts as `term:count` pairs, sorted, space-separated.

    A string rather than a JSON object because loading ten thousand short strings is
    several times faster than loading ten thousand small dicts, and opening a store
    must not pay for an index a session may never use.
    """
    counts: Counter[str] = Counter(tokenize(body))
    for word in tokenize(name.replace("-", " ")):
        counts[word] += NAME_WEIGHT
    for word in tokenize(description):
        counts[word] += DESCRIPTION_WEIGHT
    return " ".join(f"{term}:{count}" for term, count in sorted(counts.items()))


def decode_terms(encoded: str) -> dict[str, int]:
    """The inverse of `record_terms`."""
    result: dict[str, int] = {}
    if encoded:
        for pair in encoded.split(" "):
            term, _, count = pair.partition(":")
            result[term] = int(count)
    return result


class Indexed(Protocol):
    """What the keyword index needs of a store entry."""

    @property
    def terms(self) -> str: ...

    @property
    def stamp(self) -> tuple[int, int, int]: ...


class KeywordIndex:
    """BM25 over the records of one store, kept in memory for a session."""

    def __init__(self) -> None:
        self._docs: dict[str, tuple[tuple[int, int, int], dict[str, int], int]] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._total_length = 0
        self._norms: dict[str, float] | None = None
        self._generation: int | None = None

    def __len__(self) -> int:
        return len(self._docs)

    def sync(self, entries: Mapping[str, Indexed], generation: int) -> None:
        """Bring the index in line with `entries`, touching only records that changed.

        `generation` is the store's change counter: when it has not moved since the
        last call, nothing is compared at all, which keeps a turn's cost independent of
        the store's size.
        """
        if generation == self._generation:
            return
        for name in [name for name in self._docs if name not in entries]:
            self._remove(name)
        for name, entry in entries.items():
            doc = self._docs.get(name)
            if doc is None or doc[0] != entry.stamp:
                if doc is not None:
                    self._remove(name)
                self._add(name, entry.stamp, entry.terms)
        self._generation = generation

    def _add(self, name: str, stamp: tuple[int, int, int], encoded: str) -> None:
        counts = decode_terms(encoded)
        postings = self._postings
        length = 0
        for term, count in counts.items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = {name: count}
            else:
                posting[name] = count
            length += count
        self._docs[name] = (stamp, counts, length)
        self._total_length += length
        self._norms = None

    def _remove(self, name: str) -> None:
        _stamp, counts, length = self._docs.pop(name)
        for term in counts:
            posting = self._postings[term]
            del posting[name]
            if not posting:
                del self._postings[term]
        self._total_length -= length
        self._norms = None

    def _document_norms(self) -> dict[str, float]:
        # The length normalisation of BM25 depends on the average length, which moves
        # whenever a record is added or removed; recomputed lazily, once per change.
        if self._norms is None:
            average = self._total_length / len(self._docs) if self._docs else 1.0
            average = average or 1.0
            self._norms = {
                name: K1 * (1 - B + B * length / average)
                for name, (_stamp, _counts, length) in self._docs.items()
            }
        return self._norms

    def search(self, query: str, limit: int | None = None) -> list[tuple[str, float]]:
        """Records matching at least one query word, best first, ties by name; the
        first `limit` of them when given."""
        return top(self.scores(query), limit)

    def scores(self, query: str) -> dict[str, float]:
        """The BM25 score of every record that matches at least one query word."""
        terms = sorted(set(tokenize(query)))
        if not terms or not self._docs:
            return {}
        norms = self._document_norms()
        total = len(self._docs)
        scores: dict[str, float] = {}
        get = scores.get
        for term in terms:
            posting = self._postings.get(term)
            if not posting:
                continue
            frequency = len(posting)
            weight = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5)) * (K1 + 1)
            for name, count in posting.items():
                scores[name] = get(name, 0.0) + weight * count / (count + norms[name])
        return scores


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
