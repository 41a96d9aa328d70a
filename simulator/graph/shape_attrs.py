"""Reading a conv's shape attrs (``Op.attrs``), as GraphBuilder, the ONNX importer and
inline ops write them: ``in_channels``, ``out_channels``, ``groups``, ``bias`` and the
kernel, either ``kernel`` (a square k x k) or ``kernel_h`` and ``kernel_w`` (an imported
non-square kernel, Inception v3's 1 x 7). The techniques and the predictor's features
read the kernel through :func:`kernel_area` only, so neither assumes a square.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def kernel_area(attrs: Mapping[str, Any]) -> int | None:
    """Taps of a conv's kernel: ``kernel`` squared, or ``kernel_h`` x ``kernel_w``.

    Returns
    -------
    int or None
        The number of kernel taps; None when the attrs give no kernel (an op without
        shape attrs).
    """
    if "kernel" in attrs:
        return int(attrs["kernel"]) ** 2
    if "kernel_h" in attrs and "kernel_w" in attrs:
        return int(attrs["kernel_h"]) * int(attrs["kernel_w"])
    return None
