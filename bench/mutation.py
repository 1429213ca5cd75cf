"""Mutation testing: does the suite notice when the code that matters is changed?

    python bench/mutation.py                      # every module below (minutes)
    python bench/mutation.py renderer codec       # modules by file name or path
    python bench/mutation.py --sample 12 codec    # a fixed sample (what CI runs)
    python bench/mutation.py --list renderer      # the mutants, without running them
    python bench/mutation.py --rerun LOG bash     # only the survivors an earlier run printed

For each module it prints the mutants, how many the tests killed, the score over the
non-equivalent ones, and every survivor as `file:line: before -> after`. The list of
equivalent mutants (changes that cannot alter behaviour, each with the reason) is
read from docs/testing.md. Exit status 1 when a module scores under `--fail-under`
(default 90) or, with `--sample`, when any sampled mutant survives.

Adding a module is one line in MODULES: its path and the tests that exercise it (the
runner narrows these to the tests that reach each mutated line). The mutants and the
runner are in `_mutants.py` and `_mutation_run.py`; docs/testing.md says why this is
our own runner rather than mutmut or cosmic-ray.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _mutants import Mutant, mutants
from _mutation_run import REPO, BaselineFailed, Outcome, run_module

_PROMPT = ("tests/prompt", "tests/validation", "tests/manifest/corpus")
_TRUST = (
    "tests/trust",
    "tests/security/test_trust_bypasses.py",
    "tests/security/test_trust_tree.py",
)
_PERMS = "tests/permissions/test_"

MODULES: dict[str, tuple[str, ...]] = {
    "assembler/prompt/renderer.py": ("tests/prompt", "tests/validation", "tests/manifest/corpus"),
    "assembler/prompt/templates.py": (*_PROMPT, "tests/security/test_template_files.py"),
    "assembler/prompt/sandbox.py": (*_PROMPT, "tests/security/test_template_budget.py"),
    "assembler/prompt/canonical.py": ("tests/prompt", "tests/manifest/corpus"),
    "assembler/prompt/provider.py": ("tests/prompt", "tests/runner/test_runner.py"),
    "assembler/prompt/binding.py": ("tests/prompt", "tests/resources/test_resource_loader.py"),
    "assembler/sessions/codec.py": ("tests/sessions",),
    "assembler/sessions/records.py": ("tests/sessions",),
    "assembler/sessions/store.py": ("tests/sessions",),
    "assembler/python_refs.py": (
        # not test_parse_threads.py: a thread stress test, 25 s, and it fails after
        # test_parse_cache.py in one process (an AST recursion-depth SystemError)
        "tests/python_refs/test_parse_cache.py",
        "tests/python_refs/test_locations.py",
        "tests/python_refs/test_python_refs_pins.py",
        "tests/python_refs/test_import_pins.py",
        "tests/validation",
        "tests/manifest/corpus",
        "tests/tools/test_python_tools.py",
        "tests/tools/test_docstrings.py",
        "tests/extensions/test_extensions.py",
        "tests/trust",
        "tests/security/test_trust_bypasses.py",
    ),
    "assembler/permissions/command_patterns.py": ("tests/permissions",),
    "assembler/permissions/matching.py": ("tests/permissions",),
    "assembler/permissions/wrappers.py": ("tests/permissions",),
    "assembler/permissions/policy.py": ("tests/permissions",),
    "assembler/permissions/path_patterns.py": (
        "tests/permissions",
        "tests/security/test_session_allow_anchor.py",
    ),
    "assembler/permissions/bash.py": ("tests/permissions", "tests/security/test_bash_escape.py"),
    "assembler/permissions/bash_words.py": ("tests/permissions",),
    "assembler/permissions/bash_reader.py": ("tests/permissions",),
    "assembler/permissions/bash_grammar.py": ("tests/permissions",),
    "assembler/permissions/bash_builtins.py": ("tests/permissions",),
    "assembler/permissions/gate.py": (
        "tests/permissions/test_gate.py",
        "tests/permissions/test_gate_pins.py",
        "tests/cli/test_approval.py",
        "tests/security/test_approval_display.py",
        "tests/security/test_session_allow_anchor.py",
        "tests/rpc/test_sessions_and_permissions.py",
    ),
    "assembler/permissions/rules.py": (
        "tests/permissions",
        "tests/security/test_read_deny_listings.py",
    ),
    "assembler/permissions/subjects.py": (
        "tests/permissions",
        "tests/security/test_session_allow_anchor.py",
    ),
    "assembler/permissions/hidden.py": (
        "tests/permissions",
        "tests/security/test_read_deny_listings.py",
    ),
    "assembler/permissions/call_text.py": (
        "tests/permissions/test_call_text_pins.py",
        "tests/security/test_approval_display.py",
        "tests/cli/test_approval.py",
        "tests/permissions/test_gate.py",
        "tests/rpc/test_sessions_and_permissions.py",
    ),
    "assembler/trust.py": _TRUST,
    "assembler/trust_files.py": _TRUST,
    "assembler/agent/trusting.py": (
        # not test_trust_bypasses.py: it imports a project module `helpers` that the
        # reload tests below would then find shadowing theirs (one process runs them all)
        "tests/trust",
        "tests/security/test_trust_tree.py",
        "tests/agent/test_subagents.py",
        # `reload` asks again (node ids: the file's other tests import `helpers` too)
        *(
            f"tests/security/test_guard_writes.py::test_{name}"
            for name in (
                "reload_does_not_run_an_extension_changed_during_the_run",
                "reload_asks_again_with_the_question_the_agent_was_built_with",
                "a_yes_to_the_reload_question_loads_the_change_and_becomes_the_decision",
                "a_refused_reload_says_what_was_not_covered_and_what_to_do",
                "a_reload_with_trust_false_refuses_without_asking",
            )
        ),
    ),
    "assembler/sandbox/spec.py": ("tests/sandbox/test_spec.py", "tests/sandbox/test_spec_pins.py"),
    "assembler/sandbox/policy.py": (
        "tests/sandbox/test_spec.py",
        "tests/sandbox/test_runtime.py",
        "tests/sandbox/test_policy_pins.py",
    ),
}
"""Module -> the tests that exercise it. One line per module."""

CI_SAMPLE: dict[str, tuple[int, tuple[str, ...]]] = {
    "assembler/prompt/renderer.py": (12, ("tests/prompt", "tests/manifest/corpus")),
    "assembler/sessions/codec.py": (12, ("tests/sessions",)),
    "assembler/permissions/command_patterns.py": (8, (f"{_PERMS}command_patterns.py",)),
    "assembler/permissions/matching.py": (8, (f"{_PERMS}bash_rules.py", f"{_PERMS}policy.py")),
    "assembler/permissions/wrappers.py": (
        8,
        (f"{_PERMS}bash_rules.py", f"{_PERMS}wrappers_pins.py"),
    ),
    "assembler/permissions/policy.py": (
        8,
        (f"{_PERMS}policy.py", f"{_PERMS}permission_policy_pins.py"),
    ),
    "assembler/trust.py": (8, ("tests/trust",)),
    "assembler/permissions/bash.py": (6, (f"{_PERMS}bash_pins.py", f"{_PERMS}bash_rules.py")),
    "assembler/permissions/path_patterns.py": (
        6,
        (f"{_PERMS}path_pins.py", f"{_PERMS}path_rules.py"),
    ),
    "assembler/trust_files.py": (6, ("tests/trust/test_trust_files_pins.py",)),
}
"""What `tests/mutation` runs in CI: a fixed sample of mutants per module, against
the tests that kill them quickest (the full run uses MODULES)."""

EQUIVALENTS_FILE = REPO / "docs" / "testing.md"
_SURVIVOR = re.compile(r"^  SURVIVED \([^)]*\) (?P<ident>.*?)  \[[^\]]*\]$")
_ENTRY = re.compile(
    r"^- ``(?P<path>[^`]+)`` ``(?P<scope>[^`]+)``: "
    r"``\s?(?P<before>.*?)\s?`` -> ``\s?(?P<after>.*?)\s?``: (?P<why>\S.*)$"
)


@dataclass(frozen=True)
class Equivalent:
    path: str
    scope: str
    before: str
    after: str
    why: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.path, self.scope, self.before, self.after)


def equivalents(text: str | None = None) -> dict[tuple[str, str, str, str], Equivalent]:
    """The equivalent mutants listed in docs/testing.md, one bullet each:
    - ``path`` ``scope``: ``before`` -> ``after``: why it cannot change behaviour."""
    if text is None:
        text = EQUIVALENTS_FILE.read_text(encoding="utf-8")
    found = {}
    for line in text.splitlines():
        match = _ENTRY.match(line)
        if match:
            entry = Equivalent(**match.groupdict())
            found[entry.key] = entry
    return found


def survivors_in(log: str) -> set[str]:
    """The mutants an earlier run printed as survivors (its output, saved to a file):
    after writing pins, run only those again instead of the whole module."""
    return {m["ident"] for m in map(_SURVIVOR.match, log.splitlines()) if m}


def resolve(names: Sequence[str]) -> list[str]:
    """Module paths for names given on the command line (a path, or a file name)."""
    if not names:
        return list(MODULES)
    chosen = []
    for name in names:
        hits = [p for p in MODULES if p == name or Path(p).stem == name.removesuffix(".py")]
        if not hits:
            sys.exit(f"unknown module {name!r}; known: {', '.join(Path(p).stem for p in MODULES)}")
        chosen.extend(hits)
    return chosen


def sample(found: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """A fixed sample: the same mutants on every run while the file is unchanged."""
    if size >= len(found):
        return found
    picked = set(random.Random(seed).sample(range(len(found)), size))
    return [m for i, m in enumerate(found) if i in picked]


def run(
    path: str, args: argparse.Namespace, known: dict[tuple[str, str, str, str], Equivalent]
) -> tuple[list[Outcome], int, set[tuple[str, str, str, str]]]:
    every = mutants(path, (REPO / path).read_text(encoding="utf-8"))
    equivalent = {m.key for m in every if m.key in known}
    candidates = [m for m in every if m.key not in equivalent]
    size, tests = args.sample, MODULES[path]
    if args.ci and path in CI_SAMPLE:
        size, tests = CI_SAMPLE[path]
    if size:
        candidates = sample(candidates, size, args.seed)
    if args.rerun is not None:
        candidates = [m for m in candidates if m.ident in args.rerun]
    if args.list:
        for mutant in candidates:
            print(f"  {mutant.ident}  [{mutant.kind}, {mutant.scope}]")
        return [], len(equivalent), equivalent
    out = os.dup(1)  # pytest captures descriptor 1 while the session runs

    def show(outcome: Outcome) -> None:
        if args.verbose:
            os.write(out, f"  {outcome.status:9} {outcome.mutant.ident}\n".encode())

    try:
        outcomes, baseline = run_module(path, tests, candidates, jobs=args.jobs, on_done=show)
    finally:
        os.close(out)
    print(
        f"  baseline: {len(baseline.seconds_by_test)} tests, "
        f"{sum(baseline.seconds_by_test.values()):.1f} s traced"
    )
    return outcomes, len(equivalent), equivalent


_STOPPED: list[int] = []


def _stop(signum: int, frame: object) -> None:
    _STOPPED.append(signum)  # pytest reports the exit below as an error: say why and stop
    raise SystemExit(f"stopped by signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help="module paths or file names (default: all)")
    parser.add_argument(
        "--sample", type=int, default=0, help="run a fixed sample of N mutants per module"
    )
    parser.add_argument(
        "--ci", action="store_true", help="the CI subset: CI_SAMPLE's modules and sizes"
    )
    parser.add_argument("--seed", type=int, default=28, help="the sample's seed")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument(
        "--fail-under", type=float, default=90.0, help="score (%%) a module must reach"
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument(
        "--rerun",
        type=lambda name: survivors_in(Path(name).read_text(encoding="utf-8")),
        help="run only the mutants an earlier run's output (this file) lists as survivors",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print each mutant's outcome")
    args = parser.parse_args(argv)
    os.chdir(REPO)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    known = equivalents()
    paths = list(CI_SAMPLE) if args.ci and not args.modules else resolve(args.modules)
    failed = False
    used: set[tuple[str, str, str, str]] = set()
    skipped: list[str] = []
    for path in paths:
        started = time.monotonic()
        print(f"{path}", flush=True)
        try:
            outcomes, equivalent, matched = run(path, args, known)
        except BaselineFailed as error:
            if _STOPPED:
                print(f"  stopped by signal {_STOPPED[0]}")
                return 128 + _STOPPED[0]
            print(f"  {error}")
            failed = True
            skipped.append(path)
            continue
        used |= matched
        if args.list:
            continue
        killed = sum(o.killed for o in outcomes)
        survivors = [o for o in outcomes if not o.killed]
        score = 100.0 * killed / len(outcomes) if outcomes else 100.0
        print(
            f"  {len(outcomes)} mutants run ({equivalent} equivalent not run), {killed} killed: "
            f"{score:.1f}% in {time.monotonic() - started:.0f} s"
        )
        for outcome in survivors:
            print(f"  SURVIVED ({outcome.status}) {outcome.mutant.ident}  [{outcome.mutant.scope}]")
        if ((args.sample or args.ci) and survivors) or score < args.fail_under:
            failed = True
    ran = {k for k in known if k[0] in paths and k[0] not in skipped}
    for key in sorted(ran - used):
        print(f"stale equivalent in {EQUIVALENTS_FILE.name} (no such mutant): {' '.join(key)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
