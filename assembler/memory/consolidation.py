"""Consolidation: the model merges duplicate or conflicting records.

The model is shown the catalog, with bodies for as many records as fit in a budget, and
answers with a patch rather than a full new set:

    {"merge": [<record>, ...], "delete": ["<name>", ...]}

`merge` holds records to write (a new name, or an existing one to replace it), `delete`
the records whose content now lives elsewhere. A patch was chosen over "send back the
whole store" because a model that forgets a record in a full set would silently delete
it; with a patch, what the model does not mention stays as it is. The model may only
replace or delete records whose bodies it was shown: it cannot judge the rest.

Every record is validated, every name checked; any problem rejects the whole answer and
the store is not touched. A valid patch is committed by `MemoryStore.apply`, all or
nothing (its journal is the commit point), and only if none of the records it is based
on changed while the model was thinking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory._index_types import Stamp
from assembler.memory._model import ask_model, describe_error, parse_json_answer, preview
from assembler.memory.records import MemoryRecord, validate_record
from assembler.memory.store import InterruptedChangeError, MemoryStore
from assembler.providers.base import ModelProvider

CONSOLIDATION_SYSTEM: Final = (
    "You maintain an AI agent's store of saved memories. Merge records that say the same "
    "thing, and resolve records that contradict each other (keep the more recent or more "
    "specific fact). Keep every fact that is still useful.\n"
    'Answer with only a JSON object {"merge": [...], "delete": [...]}. "merge" lists records '
    'to write, each {"name", "description", "type", "body"} with type one of user, feedback, '
    "project, reference: reuse a name to replace that record, or choose a new slug name. "
    '"delete" lists the names of records to remove because their content now lives in a '
    "merged record. You may only replace or delete records shown with their body. Records "
    'you do not mention stay as they are. Answer {"merge": [], "delete": []} when nothing '
    "should change."
)


@dataclass(frozen=True)
class ConsolidationResult:
    """`applied` is True when the model's answer was valid and committed (possibly as
    an empty change)."""

    applied: bool
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    diagnostics: tuple[str, ...] = ()


def needs_consolidation(store: MemoryStore, policy: MemoryPolicy) -> bool:
    """True when the policy consolidates automatically and the store is over its size."""
    return policy.consolidation_enabled and len(store) > policy.consolidation_max_records


async def consolidate(
    provider: ModelProvider,
    store: MemoryStore,
    policy: MemoryPolicy,
    *,
    model: str = "",
    max_chars: int = 60_000,
) -> ConsolidationResult:
    """One consolidation round (on demand, or when `needs_consolidation`)."""
    store.rescan()
    shown: dict[str, tuple[MemoryRecord, Stamp]] = {}
    blocks: list[str] = []
    listed: list[str] = []
    used = 0
    for entry in store.catalog():
        block = ""
        if used < max_chars:
            try:
                record = store.get(entry.name)
            except MemoryStoreError:
                record = None
            if record is not None:
                block = f"### {record.name} ({record.type})\n{record.description}\n{record.body}\n"
                if used + len(block) <= max_chars:
                    shown[record.name] = (record, entry.stamp)
                    blocks.append(block)
                    used += len(block)
                    continue
                used = max_chars  # keep to name order: the rest are listed only
        listed.append(f"- {entry.name} ({entry.type}): {entry.description}")
    if len(shown) < 2:
        return ConsolidationResult(applied=False)
    prompt = "Memories (with their bodies):\n\n" + "\n".join(blocks)
    if listed:
        prompt += "\nOther memories (bodies not shown; leave them alone):\n" + "\n".join(listed)
    try:
        answer = await ask_model(provider, system=CONSOLIDATION_SYSTEM, prompt=prompt, model=model)
    except Exception as e:  # a failed side request leaves the store as it was
        return _rejected(f"the model request failed ({describe_error(e)})")
    try:
        writes, deletes = _parse_patch(answer, shown, store, policy.record_max_bytes)
    except ValueError as e:
        return _rejected(f"invalid answer: {e}")
    writes = [r for r in writes if r.name not in shown or shown[r.name][0] != r]
    if not writes and not deletes:
        return ConsolidationResult(applied=True)
    expect: dict[str, Stamp | None] = {name: stamp for name, (_r, stamp) in shown.items()}
    for record in writes:
        expect.setdefault(record.name, None)
    try:
        store.apply(writes, deletes, expect=expect)
    except InterruptedChangeError as e:
        return ConsolidationResult(False, diagnostics=(f"memory consolidation: {e}",))
    except MemoryStoreError as e:
        return _rejected(str(e))
    return ConsolidationResult(True, tuple(r.name for r in writes), tuple(deletes))


def _rejected(reason: str) -> ConsolidationResult:
    return ConsolidationResult(
        applied=False, diagnostics=(f"memory consolidation: {reason}; the store is unchanged",)
    )


def _parse_patch(
    answer: str,
    shown: dict[str, tuple[MemoryRecord, Stamp]],
    store: MemoryStore,
    max_body_bytes: int,
) -> tuple[list[MemoryRecord], list[str]]:
    value: Any = parse_json_answer(answer)
    if not isinstance(value, dict) or not set(value) <= {"merge", "delete"}:
        raise ValueError(f'expected {{"merge": [...], "delete": [...]}}, got {preview(answer)}')
    raw_merge = value.get("merge", [])
    raw_delete = value.get("delete", [])
    if not isinstance(raw_merge, list):
        raise ValueError('"merge" must be a list of records')
    if not isinstance(raw_delete, list) or not all(isinstance(n, str) for n in raw_delete):
        raise ValueError('"delete" must be a list of names')
    problems: list[str] = []
    writes: dict[str, MemoryRecord] = {}
    for number, item in enumerate(raw_merge, start=1):
        try:
            record = validate_record(item, max_body_bytes=max_body_bytes)
        except MemoryStoreError as e:
            problems.append(f"merge record {number}: {e}")
            continue
        if record.name in writes:
            problems.append(f"{record.name!r} is written twice")
        elif record.name in store and record.name not in shown:
            problems.append(f"{record.name!r} would replace a record whose body was not shown")
        writes[record.name] = record
    deletes = list(dict.fromkeys(raw_delete))
    for name in deletes:
        if name not in store:
            problems.append(f"cannot delete {name!r}: no such record")
        elif name not in shown:
            problems.append(f"cannot delete {name!r}: its body was not shown")
        if name in writes:
            problems.append(f"{name!r} is both written and deleted")
    if problems:
        raise ValueError("; ".join(problems))
    return list(writes.values()), deletes
