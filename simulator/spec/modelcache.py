"""A bounded cache of built models, keyed by the exact inputs of their build.

A sweep makes one scenario per point, and most points build the same models: AlexNet
from the zoo with the same options, or the same ONNX file. Building is pure (the same
inputs give an equal graph) and a :class:`~simulator.graph.model.ModelGraph` is never
modified once built, so one graph can serve every scenario whose inputs are *the same*.
The key is those inputs, exactly: the zoo recipe (name, dtype, every option with its type),
an inline model's checked spec with the unit names it may use, or the ONNX model's digest
(the file as read now, with the external tensors read into it) and the import options.
A point whose inputs differ in anything gets its own build.

Memory is bounded by count (least recently used first out): :data:`MAX_MODELS` graphs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")

#: Built models kept per process (a zoo CNN graph is tens of kB; a large transformer a
#: few MB); a sweep rarely uses more than a handful.
MAX_MODELS = 16


class BoundedCache(Generic[T]):
    """Values by key, at most ``size`` of them, the least recently used dropped first.

    Parameters
    ----------
    size : int
        Most values kept (>= 1).
    """

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a cache holds at least one value, not {size}")
        self.size = size
        self.enabled = True
        self.hits = self.misses = 0
        self._values: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def get(
        self, key: Hashable, build: Callable[[], T], keep: Callable[[T], bool] | None = None
    ) -> T:
        """The value of ``key``, built (and kept, unless ``keep(value)`` says no) on a
        miss; exceptions of ``build`` propagate and nothing is kept. With the cache
        disabled, always ``build()``."""
        if not self.enabled:
            return build()
        with self._lock:  # threads of one process (a Dask LocalCluster of threads)
            if key in self._values:
                self.hits += 1
                self._values.move_to_end(key)
                return self._values[key]
            self.misses += 1
        value = build()  # outside the lock: two threads may build the same value once each
        if keep is not None and not keep(value):
            return value
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        """Drop every value and reset the counts."""
        with self._lock:
            self._values.clear()
        self.hits = self.misses = 0

    @contextmanager
    def disabled(self) -> Iterator[None]:
        """Build everything afresh inside the block (tests compare with and without)."""
        before = self.enabled
        self.enabled = False
        try:
            yield
        finally:
            self.enabled = before


def exact_key(value: object) -> str:
    """A key that tells apart every input a build could tell apart: ``repr`` of the
    value with mappings sorted (``1``, ``1.0``, ``True`` and ``-0.0`` differ)."""
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda item: repr(item[0]))
        return "{" + ", ".join(f"{k!r}: {exact_key(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return type(value).__name__ + "[" + ", ".join(exact_key(v) for v in value) + "]"
    return repr(value)


#: The models of this process (the sweep's workers each hold their own).
MODEL_CACHE: BoundedCache = BoundedCache(MAX_MODELS)
