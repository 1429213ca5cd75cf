"""A mutation fuzz of real manifests through `validate` and `render --dry-run`: zero
crashes (issue 11, item 23).

A fuzz of 15,300 mutated manifests found four crash sites (`builtin: [[read]]`, a
name over 255 bytes, a symlink loop, a self-calling macro); each now has its own test
in `test_validate_crash_sites.py`. This fuzz keeps looking, in the suite, with a fixed
seed so a failure is reproducible: the seeds are every manifest in `agents/`,
`examples/` and `tests/manifest/corpus/`, mutated where they are (so relative paths to
skills, templates, extensions and scripts still resolve) by changes that follow the
document's structure (a value replaced with another type, a list nested, a key renamed
or dropped, a hostile path or template put in), which reach deeper than byte noise.

Every mutant is validated; every one that loads is also rendered as `render --dry-run`
renders it. Only `AssemblerError` may come out: anything else is a crash, reported with
the case number and the mutated text. `ASSEMBLER_FUZZ_CASES` and `ASSEMBLER_FUZZ_SEED`
run it longer or elsewhere.
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from assembler.agent.preview import preview_dry_run
from assembler.errors import AssemblerError
from assembler.validation.validator import find_manifests, validate_file

REPO = Path(__file__).resolve().parents[2]
CASES = int(os.environ.get("ASSEMBLER_FUZZ_CASES", "300"))
SEED = int(os.environ.get("ASSEMBLER_FUZZ_SEED", "20261130"))

HOSTILE_VALUES: list[Any] = [
    None, True, 0, -1, 10**20, 1.5, "", " ", "x" * 300, "技" * 90, "/", "~", "..", "../" * 12,
    "/dev/zero", "/proc/self/environ", "AGENTS.md", "${UNSET_FUZZ_VARIABLE}", "$$", "a:b",
    "scripted:missing.yaml", "openai/gpt-4o", "{{ nope }}", "{{ ''.__class__ }}",
    "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
    "{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}",
    "\t", "a\nb", "\u202e", [], {}, [[]], [None], [["read"]], ["read", None], {"": ""},
    {"builtin": [["read"]]}, {"python": "x:y"}, {"mcp": {"command": "x" * 300}},
    {"file": "/dev/zero"}, {"template": ""},
]  # fmt: skip
KEYS = [
    "version", "name", "identity", "context", "model", "workspace", "tools", "sets",
    "servers", "guidelines", "builtin", "allow", "python", "mcp", "skills", "context_files",
    "memory", "store", "selection", "strategy", "extensions", "path", "module", "prompt",
    "identity", "tools", "workspace", "skills", "memory", "template", "file", "limits",
    "instructions", "wrkspace", "tool", "<<",
]  # fmt: skip


def _seeds() -> list[Path]:
    manifests, _ = find_manifests([REPO / "agents", REPO / "examples"])
    corpus = REPO / "tests" / "manifest" / "corpus"
    manifests += sorted([*corpus.glob("*/*.yaml"), *corpus.glob("*/*/agent.yaml")])
    return [m for m in manifests if m.is_file()]


def _paths(value: Any) -> list[tuple[Any, ...]]:
    """Every place in `value`; a list or mapping reached twice (a YAML alias, as in the
    alias-bomb seed) is entered once, so the walk stays linear in the text."""
    found: list[tuple[Any, ...]] = []
    entered: set[int] = set()
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        at, item = stack.pop()
        found.append(at)
        if isinstance(item, dict | list) and id(item) not in entered:
            entered.add(id(item))
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack += [((*at, key), child) for key, child in pairs]
    return found


def _get(value: Any, at: tuple[Any, ...]) -> Any:
    for part in at:
        value = value[part]
    return value


def _hostile(rng: random.Random) -> Any:
    """A value from the pool, copied: the pool's lists and dicts must never be shared."""
    return copy.deepcopy(rng.choice(HOSTILE_VALUES))


def _key_pool(seeds: list[Path]) -> dict[str, list[Any]]:
    """Values each key has somewhere in the seeds: swapping one in keeps a mutant close
    to valid, so it gets past the schema into the checks and the renderer."""
    pool: dict[str, list[Any]] = {}
    for seed in seeds:
        try:
            data = yaml.safe_load(seed.read_text("utf-8"))
        except (yaml.YAMLError, ValueError, UnicodeDecodeError):
            continue
        for at in _paths(data):
            if at and isinstance(at[-1], str):
                pool.setdefault(at[-1], []).append(_get(data, at))
    return pool


def _mutate(data: Any, rng: random.Random, pool: dict[str, list[Any]]) -> Any:
    """One or two changes at random places of a parsed document: mostly a value of the
    right kind (from the seeds, or a hostile string where a string was), sometimes a
    change of shape."""
    for _ in range(rng.randint(1, 2)):
        if not isinstance(data, dict) or not data:
            return _hostile(rng)
        at = rng.choice(_paths(data)[1:] or [("identity",)])
        parent, last = _get(data, at[:-1]), at[-1]
        current = parent[last]
        op = rng.choices(
            ["swap", "string", "replace", "nest", "wrap", "drop", "rename", "add", "copy"],
            weights=[4, 4, 1, 1, 1, 1, 1, 1, 1],
        )[0]
        if op == "swap" and isinstance(last, str) and pool.get(last):
            parent[last] = copy.deepcopy(rng.choice(pool[last]))
        elif op == "string" and isinstance(current, str):
            parent[last] = rng.choice([v for v in HOSTILE_VALUES if isinstance(v, str)])
        elif op in ("replace", "swap", "string"):
            parent[last] = _hostile(rng)
        elif op == "nest":
            parent[last] = [current]
        elif op == "wrap":
            parent[last] = {rng.choice(KEYS): current}
        elif op == "drop" and isinstance(parent, dict):
            del parent[last]
        elif op == "rename" and isinstance(parent, dict):
            parent[rng.choice(KEYS)] = parent.pop(last)
        elif op == "add" and isinstance(parent, dict):
            parent[rng.choice(KEYS)] = _hostile(rng)
        elif op == "copy":  # a value from elsewhere in the document (a copy: no cycles)
            parent[last] = copy.deepcopy(_get(data, rng.choice(_paths(data))))
    return data


def _mutant(text: str, rng: random.Random, pool: dict[str, list[Any]]) -> str:
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError):  # the corpus's broken YAML: mutate the text
        data = None
    if isinstance(data, dict):
        try:
            return yaml.safe_dump(_mutate(data, rng, pool), allow_unicode=True, sort_keys=False)
        except yaml.YAMLError:
            pass
    lines = text.splitlines(keepends=True) or [""]
    index = rng.randrange(len(lines))
    lines[index] = f"{rng.choice(KEYS)}: {yaml.safe_dump(_hostile(rng)).strip()}\n"
    return "".join(lines)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the seeds' folders: mutants are written beside their originals."""
    root = tmp_path_factory.mktemp("fuzz")
    for name in ("agents", "examples", "schemas", "tests/manifest/corpus"):
        shutil.copytree(
            REPO / name, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


def _check(manifest: Path) -> tuple[str | None, bool]:
    """(None when only `AssemblerError`s came out, else the traceback of the crash;
    whether the mutant loaded and so was rendered too)."""
    loaded = False
    try:
        report = validate_file(manifest, env={"MCP_TOKEN": "t"})
        if report.manifest is not None and not report.has_errors:
            loaded = True
            preview_dry_run(report.manifest)
    except AssemblerError:
        return None, loaded
    except Exception:
        return traceback.format_exc(limit=6), loaded
    return None, loaded


def _loads(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.chdir(manifest.parent)
    return not validate_file(manifest, env={"MCP_TOKEN": "t"}).has_errors


def test_mutated_manifests_never_crash(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seeds = _seeds()
    assert len(seeds) >= 40, "the fuzz needs the examples and the corpus as seeds"
    rng = random.Random(SEED)
    pool = _key_pool(seeds)
    # mostly seeds that load, so that mutants reach the checks and the renderer
    loading = [s for s in seeds if _loads(project / s.relative_to(REPO), monkeypatch)]
    assert len(loading) >= 10
    crashes: list[str] = []
    rendered = 0
    for case in range(CASES):
        seed = rng.choice(loading if rng.random() < 0.75 else seeds)
        original = project / seed.relative_to(REPO)
        mutant = original.with_name(f"fuzz-mutant-{case}.yaml")
        text = _mutant(seed.read_text("utf-8", "replace"), rng, pool)
        mutant.write_text(text, "utf-8", errors="surrogatepass")
        monkeypatch.chdir(original.parent)
        crash, loaded = _check(mutant)
        rendered += loaded
        mutant.unlink()
        if crash is not None:
            crashes.append(f"case {case} (seed {seed.relative_to(REPO)}):\n{text}\n{crash}")
    assert not crashes, f"{len(crashes)} crash(es) in {CASES} cases:\n\n" + "\n\n".join(crashes[:5])
    # the mutations must keep enough manifests valid to exercise the renderer too
    assert rendered >= CASES // 10, f"only {rendered} of {CASES} mutants loaded"
