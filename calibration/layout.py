"""Where a calibration run keeps its files: one folder, per thread count a suffix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simulator.errors import SocsimError

#: Where ``socsim calibrate`` writes its runs unless told (``-o``).
DEFAULT_OUT = Path("runs/calibration")


@dataclass(frozen=True)
class Layout:
    """Where a calibration run keeps its files (under ``out``), per thread count."""

    out: Path
    threads: int = 1

    @property
    def suffix(self) -> str:
        return "" if self.threads == 1 else f"_{self.threads}t"

    @property
    def models(self) -> Path:
        return self.out / "models"

    @property
    def work(self) -> Path:
        return self.out / "work"

    @property
    def fit_csv(self) -> Path:
        return self.out / f"fit{self.suffix}.csv"

    @property
    def holdout_csv(self) -> Path:
        return self.out / f"holdout{self.suffix}.csv"

    @property
    def validation_csv(self) -> Path:
        return self.out / f"validation{self.suffix}.csv"

    @property
    def kernels_csv(self) -> Path:
        return self.out / f"kernels{self.suffix}.csv"

    @property
    def reference_csv(self) -> Path:
        return self.out / f"reference{self.suffix}.csv"

    def require_tables(self) -> None:
        """Refuse a refit whose folder lacks a measured table (or its ONNX graphs).

        Raises
        ------
        SocsimError
            Naming the missing path and the command that makes it.
        """
        for path in (self.fit_csv, self.holdout_csv, self.work):
            if not path.exists():
                raise SocsimError(
                    f"calibrate all --refit: {path} does not exist; --refit re-fits the "
                    f"tables of an earlier `socsim calibrate all -o {self.out}` (run it "
                    "without --refit first)"
                )
