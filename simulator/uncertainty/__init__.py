"""Parameter uncertainty: figures given as distributions, propagated by Monte Carlo.

A preset or scenario may give some numeric fields (``docs/uncertainty.md`` lists them)
as ``{mean, sd}`` (normal, truncated to the field's valid range) or ``{low, high}``
(uniform). :mod:`simulator.uncertainty.distributions` holds the distributions and their
draws (pure), :mod:`simulator.spec.uncertain` the schema and the document sampler
(``document + sample key -> concrete document``), :mod:`simulator.uncertainty.montecarlo`
the runs of ``socsim run --samples N``, :mod:`simulator.uncertainty.intervals` the
intervals of run samples and of sweep points. The engine never sees a
distribution: every scenario it runs holds plain numbers.
"""
