"""Swept values as table cells: one canonical text for a mapping or a list.

A sweep parameter may take any YAML value (docs/sweeps.md), mappings and lists
included (``placement: [{policy: offload, node: edge}, {policy: single, unit: gpu}]``).
A table cell holding a ``dict`` cannot be grouped, sorted or compared (pandas hashes
cells), CSV would write Python's ``repr`` and Parquet a struct padded with the other
rows' keys: three forms of one value. Every writer of a sweep table and every figure
of one goes through :func:`cell_value`, so a mapping is the same text everywhere:
YAML flow style with sorted keys on one line, ``{node: edge, policy: offload}``, which
reads back (``yaml.safe_load``) as the value the scenario was given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd


def _plain(value: Any) -> Any:
    """Python scalars, dicts and lists (numpy scalars and arrays from Parquet too)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or _is_array(value):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()  # numpy scalar
    return value


def _is_array(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "tolist") and value.ndim > 0


def is_compound(value: Any) -> bool:
    """Whether ``value`` is a mapping or a sequence other than text (unhashable in a cell)."""
    return isinstance(value, (Mapping, list, tuple)) or _is_array(value)


def cell_value(value: Any) -> Any:
    """A swept value as a table cell: mappings and lists as canonical text, else as is.

    ``{"policy": "offload", "node": "edge"}`` -> ``"{node: edge, policy: offload}"``;
    ``[1, 2]`` -> ``"[1, 2]"``; ``5`` -> ``5``.
    """
    if not is_compound(value):
        return value
    import yaml

    text = yaml.safe_dump(
        _plain(value), default_flow_style=True, sort_keys=True, width=float("inf")
    )
    return text.strip()


def cell_columns(frame: pd.DataFrame, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """``frame`` with :func:`cell_value` applied to the cells of ``columns`` (default:
    every object column); the same frame when no cell is a mapping or list."""
    names = [
        name
        for name in (frame.columns if columns is None else columns)
        if name in frame.columns and pd.api.types.is_object_dtype(frame[name])
    ]
    changed = [name for name in names if frame[name].map(is_compound).any()]
    if not changed:
        return frame
    frame = frame.copy()
    for name in changed:
        frame[name] = frame[name].map(cell_value)
    return frame


def typed_cell(text: str) -> str:
    """The canonical cell of a value typed on a command line (``--where PATH=VALUE``):
    ``{policy: offload, node: edge}`` in any key order or spacing gives the cell's text;
    any other text is returned as typed."""
    if not text.lstrip().startswith(("{", "[")):
        return text
    import yaml

    try:
        given = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return cell_value(given) if is_compound(given) else text
