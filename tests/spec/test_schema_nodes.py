"""The declarative schema nodes (simulator.schema) on plain values."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from simulator.schema import (
    INVALID,
    Boolean,
    Context,
    Field,
    ListOf,
    Loc,
    MapOf,
    Number,
    Record,
    Tagged,
    Text,
    nearest,
    to_si,
)


def check(schema, value):
    ctx = Context(default_file="t.yaml")
    out = schema.check(value, Loc("x"), ctx)
    return out, ctx.problems


def messages(schema, value):
    out, problems = check(schema, value)
    assert out is INVALID
    return [p.message for p in problems]


def test_nearest():
    assert nearest("worklaod", ["workload", "nodes"]) == "workload"
    assert nearest("zzz", ["workload", "nodes"]) is None
    assert nearest(3, ["3x"]) is None or nearest(3, ["3x"]) == "3x"


def test_number_scales_to_si_exactly():
    assert check(Number("ms", 1e-3), 20) == (0.02, [])
    assert check(Number("Mbit/s", 1e6), 5.85) == (5.85e6, [])
    assert check(Number("GB/s", 1e9), 25) == (25e9, [])
    assert check(Number("µs", 1e-6), 15) == (15e-6, [])
    assert check(Number(), 3) == (3.0, [])
    assert isinstance(check(Number(), 3)[0], float)


@given(st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False))
def test_to_si_is_the_decimal_product(value):
    written = float(value)
    assert to_si(written, 1e-3) == float(f"{value}e-3")
    assert to_si(written, 1e6) == float(f"{value}e6")


def test_number_text_forms():
    assert check(Number(), "1e6") == (1e6, [])
    assert check(Number(), " -2.5E-3 ") == (-2.5e-3, [])
    assert check(Number(integer=True), "1e3") == (1000, [])
    assert messages(Number(), "1e") == ["expected a number, got text '1e'"]
    assert messages(Number(), "nan") == ["expected a number, got text 'nan'"]


def test_number_bounds_and_kinds():
    assert messages(Number(gt=0), 0) == ["expected a number > 0, got 0"]
    assert messages(Number(ge=0, le=1), 1.5) == ["expected a number >= 0 and <= 1, got 1.5"]
    assert messages(Number(integer=True, ge=1), 0.5) == ["expected a whole number >= 1, got 0.5"]
    assert messages(Number(), True) == ["expected a number, got boolean True"]
    assert messages(Number(), None) == ["expected a number, got nothing (null)"]
    assert messages(Number("W"), math.inf) == ["expected a number (W), got inf (must be finite)"]
    assert messages(Number(), -math.inf) == ["expected a number, got -inf (must be finite)"]
    assert messages(Number(), math.nan) == ["expected a number, got nan (must be finite)"]
    assert messages(Number(integer=True), 10**400) == [
        "expected a whole number, got a number too large (must be finite)"
    ]
    assert check(Number(integer=True), 7.0) == (7, [])


def test_text():
    assert messages(Text(), "") == ["expected text, got text ''"]
    assert messages(Text(), 3) == ["expected text, got int 3"]
    out, problems = check(Text(choices=("cpu", "gpu"), what="unit kind"), "gpuu")
    assert out is INVALID
    assert problems[0].message == "unknown unit kind 'gpuu'; expected one of 'cpu', 'gpu'"
    assert problems[0].suggestion == "gpu"
    assert messages(Text(pattern="[a-z]+"), "A1") == ["'A1' does not match the pattern [a-z]+"]


def test_boolean():
    assert check(Boolean(), False) == (False, [])
    assert messages(Boolean(), "yes please") == ["expected true or false, got text 'yes please'"]


def test_list_lengths():
    two = ListOf(Number(), min_len=2, max_len=2)
    assert messages(two, [1]) == ["expected exactly 2 item(s), got 1"]
    assert messages(two, [1, 2, 3]) == ["expected exactly 2 item(s), got 3"]
    assert messages(ListOf(Number(), min_len=1), []) == ["expected at least 1 item(s), got 0"]
    assert messages(ListOf(Number(), max_len=1), [1, 2]) == ["expected at most 1 item(s), got 2"]
    some = ListOf(Number(), min_len=1, max_len=3)
    assert messages(some, [1, 2, 3, 4]) == ["expected at most 3 item(s), got 4"]


def test_list_items_and_order():
    out, problems = check(ListOf(Number()), [1, "a", None])
    assert out is INVALID
    assert [p.path for p in problems] == ["x[1]", "x[2]"]
    ascending = ListOf(Number(), ascending=True)
    assert check(ascending, [1, 1, 2]) == ([1.0, 1.0, 2.0], [])
    out, problems = check(ascending, [1, 3, 2])
    assert (out, problems[0].path, problems[0].message) == (
        INVALID,
        "x[2]",
        "values must not decrease",
    )


def test_map_of():
    schema = MapOf(Number(), keys=("a", "b"), min_len=1)
    assert check(schema, {"a": 1}) == ({"a": 1.0}, [])
    assert messages(schema, {}) == ["expected at least 1 entr(y/ies), got none"]
    assert messages(MapOf(Number(), min_len=2), {"a": 1}) == [
        "expected at least 2 entr(y/ies), got 1"
    ]
    _, problems = check(schema, {"c": 1, 5: 2})
    assert [p.path for p in problems] == ["x.c", "x.5"]
    assert problems[0].message == "unknown key 'c'; valid keys: a, b"
    assert problems[1].message == "names must be text, got int 5"


def test_record_defaults_required_and_renames():
    schema = Record(
        {
            "latency_ms": Field(Number("ms", 1e-3), to="latency_s"),
            "tag": Field(Text(), default="none"),
        },
        name="thing",
    )
    assert check(schema, {"latency_ms": 5}) == ({"latency_s": 0.005, "tag": "none"}, [])
    _, problems = check(schema, {"latncy_ms": 5})
    assert [(p.path, p.suggestion) for p in problems] == [
        ("x.latncy_ms", "latency_ms"),
        ("x", None),
    ]
    assert problems[1].message == "missing required key 'latency_ms' (a number (ms))"
    assert messages(schema, [1]) == ["expected a thing with keys latency_ms, tag, got a list"]


def test_record_exclusive_group():
    schema = Record(
        {"a": Field(Number()), "b": Field(Number()), "c": Field(Number(), default=0.0)},
        exclusive=(("a", "b"),),
    )
    assert check(schema, {"a": 1}) == ({"a": 1.0, "c": 0.0}, [])
    assert check(schema, {"b": 2}) == ({"b": 2.0, "c": 0.0}, [])
    assert messages(schema, {"a": 1, "b": 2}) == ["give exactly one of a, b (both given)"]
    assert messages(schema, {}) == ["give exactly one of a, b (none given)"]


def test_tagged():
    variants = {"one": Record({"n": Field(Number())}, name="one"), "two": Record({}, name="two")}
    schema = Tagged("kind", lambda: variants, what="shape")
    assert check(schema, {"kind": "one", "n": 3}) == ({"kind": "one", "n": 3.0}, [])
    assert check(schema, {"kind": "two"}) == ({"kind": "two"}, [])
    _, problems = check(schema, {"kind": "tow"})
    assert problems[0].path == "x.kind"
    assert problems[0].message == "unknown shape 'tow'; valid: one, two"
    assert problems[0].suggestion == "two"
    assert messages(schema, {"n": 1}) == ["missing required key 'kind' (one of one, two)"]
    assert messages(schema, {"kind": "two", "n": 1})[0].startswith("unknown key 'n' in two")


def test_loc_paths():
    root = Loc("")
    assert root.child({}, "nodes").path == "nodes"
    assert root.child({}, "nodes").child({}, "phone").path == "nodes.phone"
    assert Loc("workload").child([], 3).path == "workload[3]"
    assert Loc("models").child({7: 1}, 7).path == "models.7"  # a key, not an index


def test_problems_without_marks_use_the_default_file():
    ctx = Context(default_file="point.yaml")
    Number().check("x", Loc("a"), ctx)
    assert (ctx.problems[0].file, ctx.problems[0].line) == ("point.yaml", None)
