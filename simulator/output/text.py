"""User strings (names, swept values) made safe for where they are shown.

One function per destination, used by every writer of that destination:

* CSV cells a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``+``, ``-``,
  ``@``, a tab or a carriage return first) get a leading ``'`` (OWASP's advice); numbers
  are never touched, and Parquet keeps the original text.
* Matplotlib reads ``$...$`` as math text and fails on ``$\\bad$``: every figure is
  drawn with math text off (``analysis.style.literal_text``, at the one place figures
  are encoded).
* Bidirectional-control characters (U+202E...) reorder what a reader sees in HTML: the
  report shows them as visible ``[U+202E]`` marks (:func:`visible_bidi`).
"""

from __future__ import annotations

import re

import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def csv_cell(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _text_columns(frame: pd.DataFrame) -> list:
    return [
        name
        for name in frame.columns
        if pd.api.types.is_object_dtype(frame[name]) or pd.api.types.is_string_dtype(frame[name])
    ]


def _text_mask(column: pd.Series, inside: str | None = None) -> pd.Series:
    """Text cells starting with a formula prefix (or containing ``inside``); vectorised,
    since an ``ops`` table has millions of rows. Non-text cells are never selected."""
    try:
        text = column.str
    except AttributeError:  # no text cell at all (e.g. all None)
        return pd.Series(False, index=column.index)
    if inside is not None:
        mask = text.contains(inside, regex=False, na=False)
    else:
        mask = text.startswith(FORMULA_PREFIXES, na=False)
    return mask.astype(bool)


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are :func:`csv_cell`-safe (other columns as is)."""
    masks = {name: _text_mask(frame[name]) for name in _text_columns(frame)}
    masks = {name: mask for name, mask in masks.items() if mask.any()}
    if not masks:
        return frame
    safe = frame.copy()
    for name, mask in masks.items():
        safe[name] = safe[name].astype(object)
        safe.loc[mask, name] = "'" + safe.loc[mask, name].astype(str)
    return safe


def has_carriage_return(frame: pd.DataFrame) -> bool:
    """Whether a text cell of ``frame`` holds a carriage return (CSV must quote it)."""
    return any(_text_mask(frame[name], "\r").any() for name in _text_columns(frame))


def visible_bidi(text: str) -> str:
    """``text`` with every bidi control character shown as ``[U+XXXX]`` (HTML-safe)."""
    return _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
