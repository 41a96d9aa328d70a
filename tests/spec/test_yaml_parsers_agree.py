"""libyaml's parser and PyYAML's pure one give the same documents, marks and errors.

:func:`simulator.spec.yamlio.load_yaml_text` reads with libyaml and falls back to the
pure parser on a syntax error; what a user sees must not depend on which one read the
text: the same values with the same lines, or the same problems.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ScenarioError
from simulator.spec import yamlio
from simulator.spec.yamlio import YamlMap, YamlSeq, load_yaml_text

pytestmark = pytest.mark.skipif(yamlio._FAST_LOADER is None, reason="PyYAML without libyaml")

#: Fragments that make YAML's grammar branch: indentation, flow and block collections,
#: anchors, merges, tags, quotes, block scalars, directives, BOM and awkward characters.
FRAGMENTS = [
    *"ab1:-,[]{}?|>#'\"\n ",
    "  ",
    "\t",
    ": ",
    "- ",
    "&x ",
    "*x",
    "<<: ",
    "!!str ",
    "!!int ",
    "!!python/name:os.system ",
    "!local ",
    "0x1f",
    "1e3",
    ".inf",
    "~",
    "null",
    "yes",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "\ufeff",
    "é",
    "\x85",
    "\x07",
    "\u2028",
    "a: b: c",
    "key: value\n",
    "%TAG !e! tag:example.com,2000:\n",
    "!e!x ",
    "!<tag:yaml.org,2002:str> ",
    "? ",
    "\r\n",
    "\r",
    " #c\n",
    "'it''s'",
    '"\\x41\\u00e9\\q"',
    "|-\n  t\n",
    ">+2\n   t\n",
]
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join)


def _seen(text: str) -> object:
    """What a user gets from ``text``: values with every mark, or the problems."""
    try:
        return ("ok", _with_marks(load_yaml_text(text, "f.yaml")))
    except ScenarioError as exc:
        return ("error", [(p.path, p.message, p.file, p.line) for p in exc.problems])


def _with_marks(value: object) -> object:
    if isinstance(value, YamlMap):
        return (value.mark, [(k, value.key_marks.get(k), _with_marks(v)) for k, v in value.items()])
    if isinstance(value, YamlSeq):
        return (value.mark, value.item_marks, [_with_marks(v) for v in value])
    return (type(value).__name__, repr(value))


def _agree(text: str, monkeypatch) -> None:
    fast = _seen(text)
    with monkeypatch.context() as patch:
        patch.setattr(yamlio, "_FAST_LOADER", None)
        pure = _seen(text)
    assert fast == pure, text


@settings(max_examples=int(os.environ.get("SOCSIM_FUZZ_EXAMPLES", "400")), deadline=None)
@given(text=TEXTS)
def test_random_texts_read_the_same_by_both_parsers(text):
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(text, monkeypatch)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2,\n",  # unclosed flow sequence
        "a: 1\n  b: 2\n",  # bad indentation
        "a: 'x\n",  # unclosed quote
        "a: 1\na: 2\n",  # duplicate key
        "a: &x [1]\nb: *y\n",  # undefined alias
        "a: !!python/object:os.system x\n",
        "\ufeffa: é\n",
        "a: b\x00\n",
        "a: 1\n---\nb: 2\n",
        "[" * 150 + "]" * 150,  # deeper than MAX_DEPTH
        "",
        "a: !!int\n",  # PyYAML's constructors raised IndexError, KeyError, ... for these
        "!!map [1]\n",
        "- !!bool\n",
    ],
)
def test_error_cases_read_the_same_by_both_parsers(text, monkeypatch):
    _agree(text, monkeypatch)


def test_every_shipped_yaml_file_reads_the_same_by_both_parsers(monkeypatch):
    files = sorted(Path("scenarios").rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        _agree(path.read_text(encoding="utf-8"), monkeypatch)


@pytest.mark.parametrize(
    ("text", "tag", "line"),
    [("a: !!int\n", "!!int", 1), ("a: 1\nb: !!seq x\n", "!!seq", 2), ("!!map [1]\n", "!!map", 1)],
)
def test_a_tagged_value_pyyaml_cannot_read_is_a_yaml_error_with_its_line(text, tag, line):
    with pytest.raises(ScenarioError) as caught:
        load_yaml_text(text, "f.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith(f"not valid YAML: this value cannot be read as {tag} (")
    assert (problem.file, problem.line) == ("f.yaml", line)
