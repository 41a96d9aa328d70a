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


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are :func:`csv_cell`-safe (other columns as is)."""
    text_columns = [
        name
        for name in frame.columns
        if pd.api.types.is_object_dtype(frame[name]) or pd.api.types.is_string_dtype(frame[name])
    ]
    if not text_columns:
        return frame
    safe = frame.copy()
    for name in text_columns:
        safe[name] = safe[name].map(csv_cell)
    return safe


def visible_bidi(text: str) -> str:
    """``text`` with every bidi control character shown as ``[U+XXXX]`` (HTML-safe)."""
    return _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
