"""How many bytes a camera app sends: a JPEG size model (pure; docs/requests.md).

A JPEG's size depends on the picture (detail, noise) as much as on the quality setting,
so this is an assumption with a source, not a law: bits per pixel as a function of the
libjpeg quality ``Q`` (1-100), interpolated between published measurements.

Source: the English Wikipedia article "JPEG", section "Effects of JPEG compression ->
Sample photographs": one 24-bit RGB photograph of 73,242 pixels (219,726 bytes
uncompressed) saved at five qualities, file sizes with headers and metadata:

=========  ============  ===============
quality    size (bytes)  bits per pixel
=========  ============  ===============
100        83,261        9.094
50         15,138        1.653
25         9,553         1.043
10         4,787         0.523
1          1,523         0.166
=========  ============  ===============

Assumptions (marked in the docs): ``log(bits per pixel)`` is linear in ``Q`` between
those points; the bits per pixel do not depend on the image size (larger pictures
usually compress somewhat better); the source's encoder settings. Between Q = 50 and
100 the interpolation is coarse (one interval) while sizes rise slowly to Q ~ 90 and
steeply after: against a finer published series (klecker.de "JPEG Compression", GIMP,
one photograph: Q 80 and Q 90 are 1.73x and 2.50x its Q 50 size) the model's 2.78x and
3.91x overestimate by ~1.6x. Give ``bytes`` or ``bits_per_pixel`` when you know your
camera's.
"""

from __future__ import annotations

import itertools
import math

from simulator.errors import SocsimError

#: Pixels of the source's photograph.
SOURCE_PIXELS = 73_242
#: (quality, file bytes) measured in the source.
SOURCE_SIZES: tuple[tuple[int, int], ...] = (
    (1, 1_523),
    (10, 4_787),
    (25, 9_553),
    (50, 15_138),
    (100, 83_261),
)
BITS_PER_BYTE = 8


def jpeg_bits_per_pixel(quality: float) -> float:
    """Bits per pixel of a JPEG at libjpeg ``quality`` (1-100), interpolated log-linearly
    between the published points (:data:`SOURCE_SIZES`).

    Raises
    ------
    SocsimError
        When ``quality`` is outside [1, 100].
    """
    if not 1 <= quality <= 100:
        raise SocsimError(f"JPEG quality must be in [1, 100], got {quality}")
    points = [(q, size * BITS_PER_BYTE / SOURCE_PIXELS) for q, size in SOURCE_SIZES]
    if quality == points[0][0]:
        return points[0][1]
    for (q0, b0), (q1, b1) in itertools.pairwise(points):
        if quality == q1:  # a measured point, exactly
            return b1
        if quality < q1:
            share = (quality - q0) / (q1 - q0)
            return math.exp(math.log(b0) + share * (math.log(b1) - math.log(b0)))
    return points[-1][1]  # unreachable: quality <= 100


def jpeg_bytes(width: int, height: int, quality: float | None, bits_per_pixel: float | None) -> int:
    """Bytes of a ``width`` x ``height`` JPEG: ``bits_per_pixel`` when given, else the
    model's at ``quality``; rounded up to a whole byte."""
    if bits_per_pixel is not None:
        bpp = bits_per_pixel
    elif quality is not None:
        bpp = jpeg_bits_per_pixel(quality)
    else:
        raise SocsimError("a JPEG input needs quality or bits_per_pixel")
    return math.ceil(width * height * bpp / BITS_PER_BYTE)
