"""Writing a trained kernel predictor: the artifact's bytes, its file next to a preset,
and the calibration step that trains and writes it (:func:`train_predictor_file`).

Separate from :mod:`calibration.predictor_fit` (the training itself) so that the file
format's rules (sorted compact JSON, gzip without a timestamp, checked by the
simulator's own reader before it is written) live in one small place.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from calibration.fit import FitResult
from calibration.predictor_fit import NothingToTrainError, train_predictor
from calibration.table import Provenance
from simulator.hardware.predictor import KernelPredictor


def artifact_bytes(artifact: Mapping[str, Any], compress: bool = False) -> bytes:
    """The artifact's file content: compact sorted JSON, gzip'd (no timestamp) when
    ``compress``; the same artifact gives the same bytes."""
    text = json.dumps(artifact, sort_keys=True, separators=(",", ":"), allow_nan=False)
    raw = (text + "\n").encode()
    return gzip.compress(raw, compresslevel=9, mtime=0) if compress else raw


def write_predictor(artifact: Mapping[str, Any], path: str | Path) -> Path:
    """Check ``artifact`` (as the simulator will read it) and write it to ``path``,
    gzip'd when the name ends in ``.gz``.

    Raises
    ------
    PredictorFormatError
        When the artifact would not load.
    """
    path = Path(path)
    KernelPredictor(artifact, str(path))  # refuse to write what cannot be read back
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(artifact_bytes(artifact, compress=path.suffix == ".gz"))
    return path


def predictor_path(device: Path) -> Path:
    """Where the learned predictor of a preset goes: ``<stem>.predictor.json`` beside it."""
    return device.with_name(f"{device.stem}.predictor.json")


def train_predictor_file(
    table: pd.DataFrame, result: FitResult, prov: Provenance, path: Path, min_rows: int = 20
) -> tuple[Path, str] | None:
    """Train the learned kernel predictor on the op rows and write it.

    Returns (the artifact's path, the kinds it predicts), or None when the table has no
    feature columns (measured elsewhere, e.g. imported) or no kind has ``min_rows`` kernels
    (the quick corpus).
    """
    if not any(str(c).startswith("feat_") for c in table.columns):
        return None
    try:
        artifact = train_predictor(
            table,
            overhead_s=result.overhead_s,
            provenance=prov.to_dict(),
            random_state=0,
            min_rows=min_rows,
        )
    except NothingToTrainError:
        return None
    kinds = sorted({kind for kind, _, _ in KernelPredictor(artifact).kinds()})
    return write_predictor(artifact, path), ", ".join(kinds)
