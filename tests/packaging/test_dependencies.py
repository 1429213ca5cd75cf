"""Every package the code imports is declared in pyproject.toml, core or extra, and
the core commands import no optional package.

The imports are read from the source with `ast` (inside functions and under
`TYPE_CHECKING` too), and each top-level module is traced to the distribution that
installs it, so a package that only arrives through another one (`httpx2` through the
SDKs, `mcp-types` through `mcp`) is caught.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from assembler.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "assembler"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
TEST_TOOLS = {"pytest", "pytest-xdist", "hypothesis", "mypy", "ruff", "types-pyyaml", "playwright"}
TEST_SERVERS = {"mcp-server-time", "mcp-server-git"}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return normalize(match.group(0))


def brought_by(requirement: str) -> set[str]:
    """The distribution a requirement names, plus those its extras add (`dask[distributed]`
    brings `distributed`), as the installed metadata says."""
    name = requirement_name(requirement)
    extras = re.findall(r"[A-Za-z0-9_-]+", requirement.partition("[")[2].partition("]")[0])
    found = {name}
    if extras and name != "agent-assembler":
        for line in importlib.metadata.requires(name) or []:
            if any(re.search(rf"extra\s*==\s*[\"']{e}[\"']", line) for e in extras):
                found.add(requirement_name(line))
    return found


def declared() -> dict[str, set[str]]:
    """Distribution names per group: "core" and each extra (self-references kept)."""
    project = PYPROJECT["project"]
    groups = {"core": {requirement_name(r) for r in project["dependencies"]}}
    for extra, requirements in project["optional-dependencies"].items():
        groups[extra] = {requirement_name(r) for r in requirements}
    return groups


def imported_top_level_modules() -> dict[str, set[str]]:
    """Third-party top-level module -> the assembler files importing it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.partition(".")[0]
                if top in sys.stdlib_module_names or top in {"assembler", "__future__"}:
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_the_code_imports_what_we_think_it_does() -> None:
    """The list moves when code does; a new import must be declared (next test)."""
    assert set(imported_top_level_modules()) == {
        "yaml", "jsonschema", "jinja2", "click", "tree_sitter", "tree_sitter_bash",
        "openai", "anthropic", "httpx2", "mcp", "mcp_types", "anyio", "opentelemetry", "acp",
        "dask", "distributed",
    }  # fmt: skip


def test_every_imported_package_is_declared() -> None:
    requirements = [
        *PYPROJECT["project"]["dependencies"],
        *(r for group in PYPROJECT["project"]["optional-dependencies"].values() for r in group),
    ]
    everything = set().union(*(brought_by(r) for r in requirements))
    providers = importlib.metadata.packages_distributions()
    undeclared = {}
    for module, files in imported_top_level_modules().items():
        distributions = {normalize(d) for d in providers.get(module, [])}
        assert distributions, f"{module} (imported by {sorted(files)}) is not installed"
        if not distributions & everything:
            undeclared[module] = (sorted(distributions), sorted(files))
    assert undeclared == {}


def test_the_core_is_small_and_the_extras_are_complete() -> None:
    groups = declared()
    assert groups["core"] == {
        "pyyaml", "jsonschema", "jinja2", "click", "tree-sitter", "tree-sitter-bash",
    }  # fmt: skip
    optional = {"openai", "anthropic", "mcp", "acp", "otel", "dask"}
    assert set(groups) == {"core", *optional, "all", "test"}
    assert groups["all"] == {"agent-assembler"}
    (all_requirement,) = PYPROJECT["project"]["optional-dependencies"]["all"]
    assert (
        all_requirement == f"agent-assembler[{','.join(sorted(optional, key=list(groups).index))}]"
    )
    assert groups["test"] == {"agent-assembler", *TEST_TOOLS, *TEST_SERVERS}
    assert "agent-assembler[all]" in PYPROJECT["project"]["optional-dependencies"]["test"]
    assert set(EXTRAS) == optional


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_declares_the_modules_its_message_names(extra: str) -> None:
    """`assembler.extras` names the modules a feature imports; the extra of the same
    name must install every one of them."""
    providers = importlib.metadata.packages_distributions()
    requirements = PYPROJECT["project"]["optional-dependencies"][extra]
    names = set().union(*(brought_by(r) for r in requirements))
    for module in EXTRAS[extra].modules:
        distributions = {normalize(d) for d in providers.get(module, [])}
        assert distributions & names, (extra, module, distributions)


OPTIONAL = (
    "openai",
    "anthropic",
    "httpx2",
    "mcp",
    "mcp_types",
    "anyio",
    "dask",
    "distributed",
    "acp",
)
PROBE = """
import sys
from assembler.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\nLOADED:" + ",".join(sorted({m.partition(".")[0] for m in sys.modules})))
"""


def loaded_after(argv: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    line = done.stdout.rsplit("\nLOADED:", 1)
    assert len(line) == 2, (done.stdout, done.stderr)
    return set(line[1].strip().split(","))


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["validate", "agents/"],
        ["render", "--dry-run", "agents/shipping-fixer.yaml"],
        ["render", "--dry-run", "agents/everything.yaml"],
        ["schema"],
        ["init", "starter", "--template", "coding"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_core_commands_import_no_optional_package(argv: list[str], shipping: Path) -> None:
    loaded = loaded_after(argv, shipping)
    assert "click" in loaded  # the probe saw the command run
    assert sorted(loaded & {*OPTIONAL, "opentelemetry"}) == []


@pytest.mark.slow
def test_a_scripted_run_imports_no_sdk(shipping: Path) -> None:
    """Tracing may load the OpenTelemetry API when it is installed; nothing else."""
    loaded = loaded_after(
        ["run", "--trust", "--no-session", "agents/shipping-fixer.yaml", "-p", "fix it"], shipping
    )
    assert "assembler" in loaded
    assert sorted(loaded & set(OPTIONAL)) == []
