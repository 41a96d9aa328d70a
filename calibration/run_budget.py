"""How many timed runs ``socsim calibrate`` gives a model: the defaults of
:class:`calibration.ortrun.RunSettings` and of the CLI's ``--budget-s`` / ``--min-runs``
(a module of its own so that ``socsim --help`` imports no numpy)."""

#: Timed seconds per model and session (``--budget-s``).
BUDGET_S = 0.6
#: Fewest timed runs of a model (``--min-runs``). Two consecutive idle runs of
#: ``calibrate all`` timed DenseNet-121 (60 ms a run, so 6-7 runs at the budget) with
#: only 67 % of its 309 kernels within ±10 % of each other, the per-model drift taken
#: out; three models measured twice on their own at 21 runs agreed on 93 %
#: (docs/calibration.md, "Measuring").
MIN_RUNS = 15
