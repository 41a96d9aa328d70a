"""The host's own speed, round by round: a fixed reference model timed in every round.

Two calibration runs on the same machine can measure the same kernels 10-20 % apart
(measured here: the second of two idle runs timed ResNet-34 at 106 ms against 130 ms;
a shared virtual machine gives onnxruntime more or less of its memory system from one
minute to the next). A prediction cannot be steadier than the host it was fitted on,
so every round of ``measure`` also times one small fixed model (a 3x3 convolution, a
residual add and a ReLU: compute- and memory-bound work together) with the same
clock, and the run writes its per-round medians (``reference.csv``). Within a run
they show how steady the host was; between two runs (:mod:`calibration.compare`)
they show how far the host itself moved, which is the floor for how well the two
runs' predictions can agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.ortrun import CLOCKS, RunSettings, feeds
from calibration.ortsession import session_options

#: Timed runs of the reference model per round (about 0.2 ms each on this host).
REFERENCE_RUNS = 15
#: Below this speedup of the reference model at n threads over 1 thread (per thread
#: added), the extra threads had almost no core to run on. Measured on this 2-vCPU guest
#: (2026-12-06/07, eight idle runs A-H): 1.65 at 2 threads in run B, 1.20-1.21 in A and
#: F, 0.99-1.00 in the other five, among which the 2-thread hold-out measurements moved
#: 26-41 % from one run to the next (SqueezeNet 1.1 ran slower at 2 threads than at 1
#: in G).
CONTENDED_GAIN_PER_THREAD = 0.1
#: Columns of ``reference.csv``.
REFERENCE_COLUMNS = ("round", "median_s", "min_s", "runs", "threads", "clock")


def reference_model():
    """The reference ``onnx.ModelProto``: conv 3x3 32->32 on 28x28 (+ReLU), an add of
    its input, a ReLU (fixed weights, seed 0)."""
    from calibration.onnxbuild import Builder

    b = Builder(0)
    x = b.input([1, 32, 28, 28], "x")
    y = b.relu(b.conv(x, 32, 32, 3, 1, 1))
    return b.model("reference", outputs=[b.relu(b.node("Add", [x, y]))])


@dataclass
class Reference:
    """Times the reference model once per round; call it at the start of each round.

    Parameters
    ----------
    path : Path
        Where the reference model is written.
    settings : RunSettings
        Threads and clock (those of the models it accompanies).
    runs : int
        Timed runs per round.
    """

    path: Path
    settings: RunSettings
    runs: int = REFERENCE_RUNS
    rounds: list[tuple[float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        import onnxruntime as ort

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(reference_model().SerializeToString(deterministic=True))
        self._session = ort.InferenceSession(
            str(self.path),
            session_options(self.settings.threads),
            providers=["CPUExecutionProvider"],
        )
        self._inputs = feeds(self._session)
        for _ in range(max(self.settings.warmup, 3)):
            self._session.run(None, self._inputs)

    def __call__(self, round_index: int) -> None:
        clock = CLOCKS[self.settings.clock]
        self._session.run(None, self._inputs)  # re-warm after the other models
        times = []
        for _ in range(self.runs):
            begin = clock()
            self._session.run(None, self._inputs)
            times.append(clock() - begin)
        self.rounds.append((float(np.median(times)), float(np.min(times))))

    def table(self) -> pd.DataFrame:
        """One row per round (:data:`REFERENCE_COLUMNS`)."""
        return pd.DataFrame(
            [
                (i, median, low, self.runs, self.settings.threads, self.settings.clock)
                for i, (median, low) in enumerate(self.rounds)
            ],
            columns=list(REFERENCE_COLUMNS),
        )


def spread(table: pd.DataFrame) -> dict[str, float]:
    """``median_s`` (median of the round medians) and ``spread_pct`` (max / min of the
    round medians - 1, %) of a reference table; NaN when it has no rows."""
    medians = table["median_s"].to_numpy(float)
    if not len(medians):
        return {"median_s": float("nan"), "spread_pct": float("nan")}
    return {
        "median_s": float(np.median(medians)),
        "spread_pct": float((medians.max() / medians.min() - 1.0) * 100),
    }


def speedup(one_thread: pd.DataFrame, table: pd.DataFrame) -> float:
    """The reference model's speedup in ``table`` over ``one_thread``: the median of the
    1-thread round medians over the median of ``table``'s (NaN when either is empty).

    On a host whose cores are free, the reference model (a conv, an add, a ReLU:
    14.5 MFLOP) runs 1.6-1.7 times as fast at 2 threads; about 1.0 says the extra
    thread found no core (:func:`contended`)."""
    one, many = spread(one_thread)["median_s"], spread(table)["median_s"]
    return float(one / many) if one > 0 and many > 0 else float("nan")


def contended(gain: float, threads: int) -> bool:
    """True when a reference ``gain`` (:func:`speedup`) at ``threads`` threads is below
    ``1 + CONTENDED_GAIN_PER_THREAD x (threads - 1)``: the measurements at that thread
    count describe a busy host more than the runtime."""
    return threads > 1 and gain < 1.0 + CONTENDED_GAIN_PER_THREAD * (threads - 1)
