"""Storage size of weight-pruned (sparse) weights in a compressed format.

Pure integer arithmetic, no dependency on the graph classes (``model.py`` imports it).

A layer of ``P`` parameters at sparsity ``s`` keeps ``nnz = P - floor(s x P)`` non-zero
weights (``s`` read as its shortest decimal, e.g. ``0.3 -> 3/10``, so the floor is
exact). Formats, each with its index overhead:

``bitmask``
    The non-zero values plus one bit per weight saying whether it is kept:
    ``nnz x e + ceil(P / 8)`` bytes (``e`` = bytes per element). Break-even with dense
    at ``s = 1 / (8 e)``: 3.1 % for fp32, 12.5 % for int8.
``csr``
    Compressed sparse rows over the layer's output channels (rows): the values,
    a 16-bit column index per non-zero and a 32-bit row pointer per row plus one:
    ``nnz x (e + 2) + 4 x (rows + 1)`` bytes. Deep Compression (Han et al., ICLR 2016,
    arXiv:1510.00149) stores relative indices in 4-8 bits; 16 bits is the plain CSR
    of sparse BLAS libraries, so this is the conservative choice. Break-even with
    dense at ``s = 2 / (e + 2)`` (ignoring row pointers): 33 % for fp32, 67 % for int8.

A layer whose compressed size would exceed its dense size is stored dense
(:attr:`simulator.graph.model.Op.weight_bytes` takes the smaller).
"""

from __future__ import annotations

import math
from fractions import Fraction

#: Compressed weight formats: name -> one-line description.
WEIGHT_FORMATS: dict[str, str] = {
    "bitmask": "values + 1 bit per weight",
    "csr": "values + 16-bit column index per non-zero + 32-bit row pointers",
}

#: Bytes of one CSR column index and one row pointer.
CSR_INDEX_BYTES, CSR_ROW_POINTER_BYTES = 2, 4


def exact_fraction(value: float) -> Fraction:
    """``value`` as the fraction of its shortest decimal (``0.3 -> 3/10``, not 0.2999...)."""
    return Fraction(repr(float(value)))


def nonzero_weights(params: int, sparsity: float) -> int:
    """Weights kept at ``sparsity``: ``params - floor(sparsity x params)`` (exact)."""
    return params - math.floor(exact_fraction(sparsity) * params)


def stored_weight_bytes(
    params: int, element_bytes: int, sparsity: float, weight_format: str, rows: int = 1
) -> int:
    """Bytes of ``params`` weights at ``sparsity`` stored in ``weight_format``.

    Parameters
    ----------
    params : int
        Dense parameter count.
    element_bytes : int
        Bytes per stored value (the op's dtype).
    sparsity : float
        Fraction of zero weights, in [0, 1).
    weight_format : str
        One of :data:`WEIGHT_FORMATS`.
    rows : int
        Output channels (CSR rows); ignored by ``bitmask``.

    Returns
    -------
    int
        Bytes (see the module docstring for each format's formula).

    Raises
    ------
    ValueError
        On an unknown format.
    """
    nnz = nonzero_weights(params, sparsity)
    if weight_format == "bitmask":
        return nnz * element_bytes + math.ceil(params / 8)
    if weight_format == "csr":
        return nnz * (element_bytes + CSR_INDEX_BYTES) + CSR_ROW_POINTER_BYTES * (rows + 1)
    raise ValueError(f"unknown weight format '{weight_format}'; valid: {', '.join(WEIGHT_FORMATS)}")
