"""The fast split_point, HEFT, CPOP, greedy EFT and min_cut decide bit for bit as before.

``data/decisions_frozen.json`` was written by the code before it was made fast (see
``tests/frozen_decisions.py``): per case and policy variant, the op -> unit map, the order, every
note (split_point's whole curve, min_cut's cut value and tensors, HEFT's makespan...),
the estimate of the result, or the error raised. Floats are compared as exact hex.
PEFT, added later, is frozen as its code decided when it was added (``--add peft``): a
change to it, or to the shared list-scheduling code, that moves a decision shows here.
Rewritten once on purpose (2026-12-07, only the 30 entries of dvfs_race_to_idle's three
link-less nodes): a node no link reaches stopped being a candidate, so HEFT and the
others decide there instead of failing, and the splits fail with a clear PlacementError.
"""

from __future__ import annotations

import json

import pytest
from frozen_decisions import FIXTURE, POLICY_VARIANTS, cases, decide


@pytest.fixture(scope="module")
def frozen() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def all_cases() -> list:
    return list(cases())


def first_difference(old, new, path="") -> str:
    """Where two encoded decisions first differ (for a readable failure)."""
    if type(old) is not type(new):
        return f"{path}: {old!r} != {new!r}"
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{path}/{key}: only in {'new' if key in new else 'old'}"
            if old[key] != new[key]:
                return first_difference(old[key], new[key], f"{path}/{key}")
    if isinstance(old, list):
        if len(old) != len(new):
            return f"{path}: {len(old)} items != {len(new)}"
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
    return f"{path}: {old!r} != {new!r}"


def test_the_fixture_covers_every_case(frozen, all_cases):
    assert sorted(frozen) == sorted(case for case, *_ in all_cases)
    assert len(all_cases) >= 40


#: the default run checks every variant of small cases and the first variant of the
#: others (split_point: up to LARGE_SPLIT ops, as larger ones over stateful radios take
#: the plan-per-cut path, seconds each); the slow run (``-m slow``) checks the rest
SMALL_OPS = 60
LARGE_SPLIT = 100


def in_default_run(policy: str, variant: int, n_ops: int) -> bool:
    if n_ops <= SMALL_OPS:
        return True
    return variant == 0 and (policy != "split_point" or n_ops <= LARGE_SPLIT)


def check(policy: str, frozen: dict, all_cases: list, slow: bool) -> None:
    checked, differences = 0, []
    for case, graph, oracle, source in all_cases:
        for k, options in enumerate(POLICY_VARIANTS[policy]):
            if in_default_run(policy, k, len(graph)) == slow:
                continue
            key = f"{policy}#{k}"
            new = json.loads(json.dumps(decide(graph, oracle, source, policy, options)))
            old = frozen[case][key]
            checked += 1
            if new != old:
                differences.append(f"{case} {key}{first_difference(old, new)}")
    assert checked >= (0 if slow else 40)
    assert not differences, f"{len(differences)} changed, e.g. " + "; ".join(differences[:3])


@pytest.mark.parametrize("policy", sorted(POLICY_VARIANTS))
def test_decisions_are_bit_identical_to_the_frozen_ones(policy, frozen, all_cases):
    check(policy, frozen, all_cases, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(POLICY_VARIANTS))
def test_other_variants_of_large_cases_are_bit_identical_too(policy, frozen, all_cases):
    check(policy, frozen, all_cases, slow=True)
