"""The ``predictor:`` key of a compute unit: a learned kernel-predictor artifact.

The file is named relative to the YAML file that names it and must lie inside the
allowed directories (:mod:`simulator.spec.paths`); it is read and checked once at load
(:func:`simulator.hardware.predictor.load_predictor`), executing nothing.
"""

from __future__ import annotations

from typing import Any

from simulator.errors import SocsimError
from simulator.hardware.predictor_format import MAX_ARTIFACT_BYTES
from simulator.schema import Context, Field, Loc, Record, Schema
from simulator.spec.paths import naming_dir, read_user_file, user_dirs


class PredictorFile(Schema):
    """The path of a predictor artifact (``.json`` or ``.json.gz``), loaded at check time."""

    def describe(self) -> str:
        return "the path of a kernel-predictor artifact (JSON, docs/predictors.md)"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        from simulator.hardware.predictor import load_predictor

        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}")
        try:
            # opened once, without following a final symlink, re-checked after opening
            path, raw = read_user_file(
                value, naming_dir(loc, ctx), user_dirs(ctx), MAX_ARTIFACT_BYTES + 1
            )
            return load_predictor(path, raw)
        except SocsimError as exc:
            return ctx.problem(loc, f"{exc}; expected {self.describe()}")
        except OSError as exc:
            return ctx.problem(loc, f"cannot read '{value}': {exc}; expected {self.describe()}")


PREDICTOR = Record(
    {"file": Field(PredictorFile(), doc="relative to the YAML file that names it")},
    name="predictor",
)
