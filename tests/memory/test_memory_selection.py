"""Selection strategies and the budget."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from assembler.errors import ProviderError
from assembler.manifest.model import MemoryPolicy
from assembler.memory import MemoryRecord, MemoryStore, Selection, Selector, fit_budget
from assembler.memory.keyword import rank, record_terms, tokenize
from assembler.messages import ModelRequest, UserMessage
from assembler.prompt.renderer import MemoryEntry
from assembler.testing import FunctionModel, ScriptedModel

PolicyFactory = Callable[..., MemoryPolicy]
RecordFactory = Callable[..., MemoryRecord]


def select(selector: Selector, message: str) -> Selection:
    return asyncio.run(selector.select(message))


def names(selection: Selection) -> list[str]:
    return [entry.name for entry in selection.entries]


@pytest.fixture
def filled(make_policy: PolicyFactory, rec: RecordFactory) -> Callable[..., Selector]:
    """A selector over a small store, for a policy with the given changes."""

    def build(provider: object = None, **changes: object) -> Selector:
        policy = make_policy(**changes)
        store = MemoryStore.open(policy.store, policy)
        store.upsert_many(
            [
                rec(
                    "deploy-staging",
                    "Run make deploy ENV=staging; the VPN must be up.",
                    description="How to deploy to the staging server",
                ),
                rec(
                    "database-migrations",
                    "Migrations live in db/migrate; run them with alembic.",
                    description="Where database migrations are and how to run them",
                ),
                rec(
                    "user-prefers-pnpm",
                    "Always use pnpm, never npm or yarn.",
                    description="The user prefers pnpm",
                    type="user",
                ),
                rec(
                    "code-review-style",
                    "Keep review comments short; suggest, do not order.",
                    description="How the user wants code reviewed",
                    type="feedback",
                ),
            ]
        )
        return Selector(store, policy, provider)  # type: ignore[arg-type]

    return build


# -- the budget ---------------------------------------------------------------------------


def test_fit_budget_counts_records_and_characters(store: MemoryStore, rec: RecordFactory) -> None:
    store.upsert_many(
        [rec("a", "x" * 10), rec("b", "x" * 50), rec("c", "x" * 10), rec("d", "x" * 5)]
    )
    entries = store.catalog()

    def pick(records: int, chars: int) -> list[str]:
        return [e.name for e in fit_budget(entries, records, chars)]

    assert pick(10, 1000) == ["a", "b", "c", "d"]
    assert pick(2, 1000) == ["a", "b"]
    assert pick(10, 60) == ["a", "b"]  # full: exactly 60 characters
    assert pick(10, 30) == ["a", "c", "d"]  # b does not fit; shorter ones further on do
    assert pick(0, 1000) == []
    assert pick(10, 0) == []
    assert pick(10, 9) == ["d"]


def test_all_takes_records_in_name_order_within_the_budget(filled: Callable[..., Selector]) -> None:
    selection = select(filled(strategy="all", max_records=10, max_chars=10_000), "anything")
    assert names(selection) == [
        "code-review-style",
        "database-migrations",
        "deploy-staging",
        "user-prefers-pnpm",
    ]
    first = selection.entries[0]
    assert first == MemoryEntry(
        "code-review-style",
        "feedback",
        "How the user wants code reviewed",
        "Keep review comments short; suggest, do not order.",
    )
    assert names(select(filled(strategy="all", max_records=2), "x")) == [
        "code-review-style",
        "database-migrations",
    ]
    by_chars = select(filled(strategy="all", max_records=10, max_chars=60), "x")
    assert sum(len(e.body) for e in by_chars.entries) <= 60
    assert names(by_chars) == ["code-review-style"]


def test_none_selects_nothing(filled: Callable[..., Selector]) -> None:
    assert select(filled(strategy="none"), "deploy to staging") == Selection()


def test_an_empty_store_selects_nothing_without_asking(make_policy: PolicyFactory) -> None:
    policy = make_policy(strategy="model")
    model = ScriptedModel([])
    selector = Selector(MemoryStore.open(policy.store, policy), policy, model)
    assert select(selector, "hello") == Selection()
    assert model.requests == []


# -- keyword --------------------------------------------------------------------------------


def test_tokenize_lowercases_and_drops_stopwords() -> None:
    assert tokenize("How do I Deploy the API_v2 to staging? Café!") == [
        "deploy",
        "api",
        "v2",
        "staging",
        "café",
    ]


def test_keyword_ranks_the_relevant_record_first(filled: Callable[..., Selector]) -> None:
    selector = filled(strategy="keyword", max_records=1)
    assert names(select(selector, "How do I deploy to staging?")) == ["deploy-staging"]
    assert names(select(selector, "which package manager, npm or pnpm?")) == ["user-prefers-pnpm"]
    assert names(select(selector, "run the database migrations")) == ["database-migrations"]


def test_keyword_with_no_matching_word_selects_nothing(filled: Callable[..., Selector]) -> None:
    selector = filled(strategy="keyword")
    assert select(selector, "quantum chromodynamics") == Selection()
    assert select(selector, "what is it about?") == Selection()  # stopwords only


def test_keyword_respects_the_budget(filled: Callable[..., Selector]) -> None:
    selector = filled(strategy="keyword", max_records=2)
    assert len(select(selector, "user run deploy database pnpm review").entries) == 2
    tight = filled(strategy="keyword", max_records=5, max_chars=40)
    assert sum(len(e.body) for e in select(tight, "user run deploy database pnpm").entries) <= 40


def test_keyword_ranking_is_deterministic_and_ties_go_by_name(
    tmp_path: Path, rec: RecordFactory
) -> None:
    records = [rec(f"note-{i:02d}", "shared words here", description="same") for i in range(30)]
    records += [rec("special", "shared words here and deploy", description="same")]
    rankings = []
    for number, order in enumerate((records, list(reversed(records)))):
        policy = MemoryPolicy(store=tmp_path / f"store-{number}")
        store = MemoryStore.open(policy.store, policy)
        for record in order:  # a different insertion order in each store
            store.upsert(record)
        selector = Selector(store, policy)
        rankings.append([e.name for e in selector.rank("deploy shared words")])
        rankings.append([e.name for e in selector.rank("deploy shared words")])
    assert rankings[0] == rankings[1] == rankings[2] == rankings[3]
    assert rankings[0][0] == "special"
    assert rankings[0][1:] == sorted(rankings[0][1:])  # equal scores: by name


def test_keyword_index_follows_changes_to_the_store(
    filled: Callable[..., Selector], rec: RecordFactory
) -> None:
    selector = filled(strategy="keyword", max_records=1)
    assert select(selector, "kubernetes cluster") == Selection()
    selector.store.upsert(rec("cluster-access", "kubectl needs the kubernetes cluster config."))
    assert names(select(selector, "kubernetes cluster")) == ["cluster-access"]
    selector.store.remove("cluster-access")
    assert select(selector, "kubernetes cluster") == Selection()
    assert len(selector.store) == 4
    assert selector.store.index.term_stats(["kubectl", "kubernetes", "deploy"]).keys() == {"deploy"}


def test_keyword_terms_count_name_and_description_words_twice(store: MemoryStore) -> None:
    assert record_terms("deploy-staging", "Deploy notes", "deploy now") == {
        "deploy": 5,
        "notes": 2,
        "staging": 2,
    }
    with store.index.reading() as index:
        assert rank(index, "anything") == []  # an empty store


def test_a_record_damaged_since_open_is_skipped_with_a_diagnostic(
    filled: Callable[..., Selector],
) -> None:
    selector = filled(strategy="all", max_records=10, max_chars=10_000)
    (selector.store.path / "deploy-staging.md").write_text("not a record")
    selection = select(selector, "x")
    assert "deploy-staging" not in names(selection)
    assert len(selection.entries) == 3
    assert len(selection.diagnostics) == 1
    assert "deploy-staging.md: does not start with" in selection.diagnostics[0]


# -- model ----------------------------------------------------------------------------------


def test_model_selection_with_a_valid_answer(filled: Callable[..., Selector]) -> None:
    model = ScriptedModel(['["user-prefers-pnpm", "deploy-staging"]'])
    with model:
        selection = select(filled(model, strategy="model", max_records=5), "set up the project")
    assert names(selection) == ["user-prefers-pnpm", "deploy-staging"]  # the model's order
    assert selection.diagnostics == ()
    request = model.last_request
    assert request.tools == ()
    assert "at most 5" in request.system
    prompt = request.messages[0]
    assert isinstance(prompt, UserMessage)
    assert "- deploy-staging (project): How to deploy to the staging server" in prompt.content
    assert "set up the project" in prompt.content
    assert "Run make deploy" not in prompt.content  # names and descriptions only


def test_model_answer_in_a_fence_and_budget_applied(filled: Callable[..., Selector]) -> None:
    answer = 'Here you go:\n```json\n["deploy-staging", "user-prefers-pnpm", "deploy-staging"]\n```'
    with ScriptedModel([answer]) as model:
        selection = select(filled(model, strategy="model", max_records=1), "deploy")
    assert names(selection) == ["deploy-staging"]
    assert selection.diagnostics == ()


def test_model_answering_an_empty_list_selects_nothing_quietly(
    filled: Callable[..., Selector],
) -> None:
    with ScriptedModel(["[]"]) as model:
        assert select(filled(model, strategy="model"), "hi") == Selection()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("deploy-staging please", "the answer is not JSON"),
        ('{"names": ["deploy-staging"]}', "expected a JSON list of names"),
        ('["deploy-staging", 3]', "expected a JSON list of names"),
        ('["deploy-staging", "no-such-memory"]', "unknown memory name(s) 'no-such-memory'"),
        ("", "the answer was empty"),
    ],
)
def test_model_invalid_answers_select_nothing_and_explain(
    filled: Callable[..., Selector], answer: str, problem: str
) -> None:
    with ScriptedModel([answer]) as model:
        selection = select(filled(model, strategy="model"), "deploy")
    assert selection.entries == ()
    assert len(selection.diagnostics) == 1
    assert "memory selection: invalid answer from the model" in selection.diagnostics[0]
    assert problem in selection.diagnostics[0]
    assert "no memory selected this turn" in selection.diagnostics[0]


def test_model_provider_error_is_a_diagnostic(filled: Callable[..., Selector]) -> None:
    def fail(request: ModelRequest) -> str:
        raise ProviderError("endpoint unreachable")

    selection = select(filled(FunctionModel(fail), strategy="model"), "deploy")
    assert selection.entries == ()
    assert selection.diagnostics == (
        "memory selection: the model request failed (ProviderError: endpoint unreachable); "
        "no memory selected this turn",
    )


def test_model_strategy_without_a_model_is_a_diagnostic(filled: Callable[..., Selector]) -> None:
    selection = select(filled(None, strategy="model"), "deploy")
    assert selection.entries == ()
    assert "needs a model" in selection.diagnostics[0]
