"""``--set`` values go through the size-limited YAML loader (issue 16, item 12): before, a
667-byte alias bomb passed to ``yaml.safe_load`` expanded to 11.7 GB."""

from __future__ import annotations

from simulator.spec.yamlio import MAX_EXPANDED_NODES
from simulator.sweep.cli import parse_set


def _bomb(levels: int) -> str:
    """A block-style list (no commas, no colons) of 9**levels values through aliases."""
    lines = ["- &a0"] + ["  - x"] * 9
    for i in range(1, levels):
        lines += [f"- &a{i}"] + [f"  - *a{i - 1}"] * 9
    return "\n".join(lines)


def test_an_alias_bomb_in_set_is_not_expanded():
    text = _bomb(7)  # 9**7 = 4.8 million values: over the limit, small enough for main
    assert MAX_EXPANDED_NODES < 9**7
    path, values = parse_set("seed=" + text)
    assert path == "seed"
    assert values == [text]  # kept as text, which the schema then refuses


def test_set_values_still_parse_as_yaml():
    assert parse_set("x=1,2") == ("x", [1, 2])
    assert parse_set("x=@a") == ("x", ["@a"])  # not YAML: the text as written
    assert parse_set("units=- a\n- b") == ("units", [["a", "b"]])
    assert parse_set("x=- 1\n- 2") == ("x", [[1, 2]])
    assert type(parse_set("x=- 1\n- 2")[1][0]) is list  # marks stripped
