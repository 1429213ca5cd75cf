"""Consolidation: a valid patch is committed whole; anything else changes nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from index_dump import index_dump

from assembler.errors import MemoryStoreError, ProviderError
from assembler.manifest.model import MemoryPolicy
from assembler.memory import (
    ConsolidationResult,
    MemoryRecord,
    MemoryStore,
    consolidate,
    make_record,
    needs_consolidation,
    validate_record,
)
from assembler.memory.journal import JOURNAL_FILE
from assembler.messages import ModelRequest, UserMessage
from assembler.testing import FunctionModel, ScriptedModel

RecordFactory = Callable[..., MemoryRecord]
Snapshot = Callable[[Path], dict[str, bytes]]

MERGED = {
    "name": "package-manager",
    "description": "The user wants pnpm, never npm or yarn",
    "type": "user",
    "body": "Use pnpm for everything. Never npm, never yarn.",
}
VALID = json.dumps({"merge": [MERGED], "delete": ["likes-pnpm", "no-npm"]})


@pytest.fixture
def duplicated(store: MemoryStore) -> MemoryStore:
    store.upsert_many(
        [
            make_record("likes-pnpm", "The user likes pnpm", "user", "Use pnpm."),
            make_record("no-npm", "Do not use npm", "user", "Never npm; pnpm instead."),
            make_record("deploy-staging", "How to deploy", "project", "make deploy"),
        ]
    )
    return store


def run(
    model: Any, store: MemoryStore, policy: MemoryPolicy, **options: Any
) -> ConsolidationResult:
    return asyncio.run(consolidate(model, store, policy, **options))


def test_needs_consolidation_follows_the_policy(
    store: MemoryStore, make_policy: Callable[..., MemoryPolicy], rec: RecordFactory
) -> None:
    store.upsert_many([rec("a"), rec("b"), rec("c")])
    assert needs_consolidation(store, make_policy(consolidation_max_records=2))
    assert not needs_consolidation(store, make_policy(consolidation_max_records=3))
    assert not needs_consolidation(
        store, make_policy(consolidation_max_records=2, consolidation_enabled=False)
    )


def test_a_valid_merge_is_committed(duplicated: MemoryStore, policy: MemoryPolicy) -> None:
    with ScriptedModel([f"```json\n{VALID}\n```"]) as model:
        result = run(model, duplicated, policy)
    assert result == ConsolidationResult(True, ("package-manager",), ("likes-pnpm", "no-npm"))
    assert duplicated.names() == ("deploy-staging", "package-manager")
    assert duplicated.get("package-manager") == validate_record(MERGED)

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("deploy-staging", "package-manager")
    assert sorted(p.name for p in policy.store.glob("*.md")) == [
        "deploy-staging.md",
        "package-manager.md",
    ]
    assert not (policy.store / JOURNAL_FILE).exists()
    assert list(index_dump(policy.store)["records"]) == ["deploy-staging", "package-manager"]

    prompt = model.last_request.messages[0]
    assert isinstance(prompt, UserMessage)
    assert "### no-npm (user)\nDo not use npm\nNever npm; pnpm instead.\n" in prompt.content
    assert '{"merge": [...], "delete": [...]}' in model.last_request.system


def test_replacing_a_record_in_place(duplicated: MemoryStore, policy: MemoryPolicy) -> None:
    update = {**MERGED, "name": "likes-pnpm"}
    answer = json.dumps({"merge": [update], "delete": ["no-npm"]})
    with ScriptedModel([answer]) as model:
        result = run(model, duplicated, policy)
    assert result.applied and result.written == ("likes-pnpm",)
    assert duplicated.names() == ("deploy-staging", "likes-pnpm")


def test_an_empty_patch_changes_nothing(
    duplicated: MemoryStore, policy: MemoryPolicy, snapshot: Snapshot
) -> None:
    before = snapshot(policy.store)
    with ScriptedModel(['{"merge": [], "delete": []}']) as model:
        assert run(model, duplicated, policy) == ConsolidationResult(True)
    assert snapshot(policy.store) == before


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("merge them please", "the answer is not JSON"),
        ('["package-manager"]', 'expected {"merge": [...], "delete": [...]}'),
        ('{"records": []}', 'expected {"merge": [...], "delete": [...]}'),
        ('{"merge": {}}', '"merge" must be a list of records'),
        ('{"delete": [1]}', '"delete" must be a list of names'),
        (json.dumps({"merge": [{**MERGED, "type": "pref"}]}), "merge record 1: invalid memory"),
        (json.dumps({"merge": [MERGED, MERGED]}), "'package-manager' is written twice"),
        (json.dumps({"merge": [MERGED], "delete": ["gone"]}), "cannot delete 'gone': no such"),
        (
            json.dumps({"merge": [{**MERGED, "name": "no-npm"}], "delete": ["no-npm"]}),
            "'no-npm' is both written and deleted",
        ),
        (
            json.dumps({"merge": [{**MERGED, "body": "x" * 5000}]}),
            "over the limit of 4096 bytes",
        ),
    ],
)
def test_an_invalid_answer_changes_nothing_byte_for_byte(
    duplicated: MemoryStore,
    policy: MemoryPolicy,
    snapshot: Snapshot,
    answer: str,
    problem: str,
) -> None:
    before = snapshot(policy.store)
    with ScriptedModel([answer]) as model:
        result = run(model, duplicated, policy)
    assert not result.applied
    assert len(result.diagnostics) == 1
    assert result.diagnostics[0].startswith("memory consolidation: invalid answer: ")
    assert problem in result.diagnostics[0]
    assert result.diagnostics[0].endswith("; the store is unchanged")
    assert snapshot(policy.store) == before


def test_records_whose_bodies_were_not_shown_cannot_be_touched(
    duplicated: MemoryStore, policy: MemoryPolicy, snapshot: Snapshot
) -> None:
    # A budget that fits the first two records only (name order): deploy-staging, likes-pnpm.
    before = snapshot(policy.store)
    answer = json.dumps({"merge": [], "delete": ["no-npm"]})
    with ScriptedModel([answer]) as model:
        result = run(model, duplicated, policy, max_chars=120)
    assert not result.applied
    assert "cannot delete 'no-npm': its body was not shown" in result.diagnostics[0]
    prompt = model.last_request.messages[0]
    assert isinstance(prompt, UserMessage)
    assert "- no-npm (user): Do not use npm" in prompt.content
    assert "Never npm; pnpm instead." not in prompt.content
    assert snapshot(policy.store) == before


def test_a_provider_error_changes_nothing(
    duplicated: MemoryStore, policy: MemoryPolicy, snapshot: Snapshot
) -> None:
    def fail(request: ModelRequest) -> str:
        raise ProviderError("overloaded")

    before = snapshot(policy.store)
    result = run(FunctionModel(fail), duplicated, policy)
    assert result == ConsolidationResult(
        False,
        diagnostics=(
            "memory consolidation: the model request failed (ProviderError: overloaded); "
            "the store is unchanged",
        ),
    )
    assert snapshot(policy.store) == before


def test_fewer_than_two_records_is_not_worth_a_request(
    store: MemoryStore, policy: MemoryPolicy, rec: RecordFactory
) -> None:
    store.upsert(rec("only"))
    model = ScriptedModel([])
    assert run(model, store, policy) == ConsolidationResult(False)
    assert model.requests == []


def test_a_record_changed_while_the_model_was_thinking_aborts(
    duplicated: MemoryStore, policy: MemoryPolicy
) -> None:
    def answer_after_someone_edits(request: ModelRequest) -> str:
        other = MemoryStore.open(policy.store, policy)
        other.upsert(make_record("no-npm", "Do not use npm", "user", "Edited meanwhile."))
        return VALID

    result = run(FunctionModel(answer_after_someone_edits), duplicated, policy)
    assert not result.applied
    assert "changed by someone else meanwhile: no-npm" in result.diagnostics[0]
    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("deploy-staging", "likes-pnpm", "no-npm")
    record = reopened.get("no-npm")
    assert record is not None and record.body == "Edited meanwhile."


def failing_write(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, fail_on: int, *, leave_temp: bool
) -> None:
    """Make the store's `fail_on`-th file write die, as a crash would."""
    real_write = store._write
    calls = 0

    def write(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
        nonlocal calls
        calls += 1
        if calls == fail_on:
            if leave_temp:  # died after writing the temp file, before the rename
                # named as `atomic_write` names its temporary files
                (path.parent / f".tmp-{path.name}.c0ffee00").write_bytes(data)
            raise MemoryStoreError(f"simulated crash writing {path.name}")
        real_write(path, data, sync_directory=sync_directory)

    monkeypatch.setattr(store, "_write", write)


def test_a_crash_before_the_commit_point_leaves_the_old_store_intact(
    duplicated: MemoryStore,
    policy: MemoryPolicy,
    snapshot: Snapshot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = snapshot(policy.store)
    failing_write(duplicated, monkeypatch, fail_on=1, leave_temp=True)  # the journal
    with ScriptedModel([VALID]) as model:
        result = run(model, duplicated, policy)
    assert not result.applied
    assert "simulated crash writing .journal.json" in result.diagnostics[0]
    assert result.diagnostics[0].endswith("the store is unchanged")

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("deploy-staging", "likes-pnpm", "no-npm")
    assert snapshot(policy.store) == before  # the temp file is gone too


def test_a_crash_after_the_commit_point_is_completed_on_the_next_open(
    duplicated: MemoryStore,
    policy: MemoryPolicy,
    snapshot: Snapshot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failing_write(duplicated, monkeypatch, fail_on=2, leave_temp=True)  # the merged record
    with ScriptedModel([VALID]) as model:
        result = run(model, duplicated, policy)
    assert not result.applied
    assert "simulated crash writing package-manager.md" in result.diagnostics[0]
    assert (
        "committed and will be completed when the store is next opened" in (result.diagnostics[0])
    )
    assert (policy.store / JOURNAL_FILE).exists()
    # Mid-way, the files on disk are still the old set: nothing was half-applied yet.
    assert (policy.store / "likes-pnpm.md").exists()

    reopened = MemoryStore.open(policy.store, policy)
    assert reopened.names() == ("deploy-staging", "package-manager")
    assert reopened.get("package-manager") == validate_record(MERGED)
    assert not (policy.store / JOURNAL_FILE).exists()
    assert not list(policy.store.glob(".tmp-*"))
    settled = snapshot(policy.store)
    assert MemoryStore.open(policy.store, policy).names() == ("deploy-staging", "package-manager")
    assert snapshot(policy.store) == settled  # complete and stable: nothing left to repair


def test_a_crash_while_deleting_is_completed_too(
    duplicated: MemoryStore, policy: MemoryPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_unlink = duplicated._unlink

    def unlink(path: Path) -> None:
        if path.name == "no-npm.md":
            raise MemoryStoreError("simulated crash deleting no-npm.md")
        real_unlink(path)

    monkeypatch.setattr(duplicated, "_unlink", unlink)
    with ScriptedModel([VALID]) as model:
        assert not run(model, duplicated, policy).applied
    assert (policy.store / "package-manager.md").exists()
    assert (policy.store / "no-npm.md").exists()  # half-way: completed on the next open
    assert MemoryStore.open(policy.store, policy).names() == ("deploy-staging", "package-manager")
