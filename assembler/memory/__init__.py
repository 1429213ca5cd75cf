"""Memory that persists across sessions (DESIGN.md section 6).

A store of Markdown records with a derived index and a change journal (`store`,
`records`, `index`, `journal`), chosen each turn by a strategy within a budget
(`selection`, `keyword`), made by the `remember` tool or at the end of a session
(`extraction`), merged by the model when the store grows (`consolidation`), and tied
to a running agent by `MemorySession`.
"""

from __future__ import annotations

from assembler.memory._index_types import IndexEntry
from assembler.memory.consolidation import ConsolidationResult, consolidate, needs_consolidation
from assembler.memory.extraction import (
    ExtractionResult,
    extract_memories,
    make_remember_tool,
)
from assembler.memory.keyword import rank, tokenize
from assembler.memory.records import (
    RECORD_TYPES,
    MemoryRecord,
    from_markdown,
    is_valid_name,
    make_record,
    to_markdown,
    validate_record,
)
from assembler.memory.selection import Selection, Selector, fit_budget
from assembler.memory.session import MemorySession, format_memories
from assembler.memory.store import MemoryStore

__all__ = [
    "RECORD_TYPES",
    "ConsolidationResult",
    "ExtractionResult",
    "IndexEntry",
    "MemoryRecord",
    "MemorySession",
    "MemoryStore",
    "Selection",
    "Selector",
    "consolidate",
    "extract_memories",
    "fit_budget",
    "format_memories",
    "from_markdown",
    "is_valid_name",
    "make_record",
    "make_remember_tool",
    "needs_consolidation",
    "rank",
    "to_markdown",
    "tokenize",
    "validate_record",
]
