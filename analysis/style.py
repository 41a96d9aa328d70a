"""Shared figure plumbing: labels with units, colours, and saving without pyplot.

Figures are built on :class:`matplotlib.figure.Figure` with an Agg canvas attached,
never through pyplot: no plot registers with pyplot's figure manager or changes the
caller's backend, and nothing needs closing.
"""

from __future__ import annotations

import io
import textwrap
import warnings
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from simulator.errors import SocsimError
from simulator.output import write_bytes

if TYPE_CHECKING:  # annotations only: numpy and Axes load with matplotlib anyway
    import numpy as np
    from matplotlib.axes import Axes

# (name suffix, unit shown on the axis, factor from the column's unit to the shown one,
# text the label drops); longest suffix first so `_per_inference_j` wins over `_j`.
# Seconds and joules are shown as ms and mJ: inference latencies and energies read best
# at that scale.
_UNITS: tuple[tuple[str, str, float, str], ...] = (
    ("inferences_per_j", "1/J", 1.0, "_per_j"),
    ("_gb_s", "GB/s", 1.0, "_gb_s"),
    ("_mbps", "Mbit/s", 1.0, "_mbps"),
    ("_gflops", "GFLOP/s", 1.0, "_gflops"),
    ("_rps", "req/s", 1.0, "_rps"),
    ("_rate", "%", 100.0, ""),
    ("_ms", "ms", 1.0, "_ms"),
    ("_us", "µs", 1.0, "_us"),
    ("_hz", "Hz", 1.0, "_hz"),
    ("_mb", "MB", 1.0, "_mb"),
    ("_bytes", "MB", 1e-6, "_bytes"),
    ("_w", "W", 1.0, "_w"),
    ("_j", "mJ", 1e3, "_j"),
    ("_s", "ms", 1e3, "_s"),
)
SAVE_FORMATS = ("png", "svg", "pdf")
# colour-blind-safe categorical palette (Okabe & Ito), then tab20 for long category lists
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
)
ROLE_COLOURS = {"device": "#0072B2", "edge": "#E69F00", "cloud": "#009E73"}


def _match(column: str) -> tuple[str, str, float, str]:
    name = column.rsplit(".", 1)[-1]
    for suffix, unit, scale, strip in _UNITS:
        if name.endswith(suffix):
            return name, unit, scale, strip
    return name, "", 1.0, ""


def unit_of(column: str) -> tuple[str, float]:
    """The display unit of a column named with its unit suffix, and the scale to it.

    ``latency_mean_s`` -> ``("ms", 1e3)``; ``links.uplink.bandwidth_mbps`` ->
    ``("Mbit/s", 1.0)``; a name without a known suffix -> ``("", 1.0)``.
    """
    _, unit, scale, _ = _match(column)
    return unit, scale


def label_of(column: str) -> str:
    """Axis label for a column: its words without the unit suffix, then the display unit.

    ``links.uplink.bandwidth_mbps`` -> ``links.uplink.bandwidth (Mbit/s)``;
    ``device_energy_per_inference_j`` -> ``device energy per inference (mJ)``.
    """
    name, unit, _, strip = _match(column)
    head = column.rpartition(".")[0]
    words = (name[: -len(strip)] if strip else name).replace("_", " ")
    text = f"{head}.{words}" if head else words
    return f"{text} ({unit})" if unit else text


#: A category coloured by :func:`colours` (a label, a role, a decision...).
_Category = TypeVar("_Category", bound=Hashable)


def colours(categories: Iterable[_Category]) -> dict[_Category, str]:
    """A stable colour per category, in the order given."""
    import matplotlib as mpl

    names = list(dict.fromkeys(categories))
    extra = mpl.colormaps["tab20"]
    return {
        name: PALETTE[i] if i < len(PALETTE) else mpl.colors.to_hex(extra(i - len(PALETTE)))
        for i, name in enumerate(names)
    }


def new_figure(width_in: float = 7.0, height_in: float = 4.5) -> Figure:
    """A Figure with an Agg canvas attached (no pyplot)."""
    figure = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def log_axis(axes: Axes, which: str) -> None:
    """Put ``axes``' ``which`` axis (``"x"`` or ``"y"``) on a log scale, its tick labels
    plain text (``10``, ``20``, ``100``).

    Matplotlib's default log labels are math text (``$\\mathdefault{10^{1}}$``), which
    :func:`literal_text` shows as written: every figure is drawn with math text off.
    """
    from matplotlib.ticker import LogFormatter

    axis = axes.xaxis if which == "x" else axes.yaxis
    getattr(axes, f"set_{which}scale")("log")
    axis.set_major_formatter(LogFormatter())
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def fit_titles(figure: Figure) -> Figure:
    """Wrap the figure's title and its axes' titles onto more lines where they would be
    cut at the figure's edge (a long default title over a narrow figure). Returns
    ``figure``.

    An axes title is centred over its axes, so it fits in twice the distance from the
    axes' centre to the nearer figure edge; the figure's title in the figure's width.
    Words are re-wrapped to the share of characters that fits (measured, not guessed).
    """
    texts: list[tuple[Text, Axes | None]] = [
        (axes.title, axes) for axes in figure.axes if axes.get_title()
    ]
    # matplotlib has no public getter of the title's Text (get_suptitle gives its string)
    suptitle: Text | None = getattr(figure, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        texts.append((suptitle, None))
    if not texts:
        return figure
    for _ in range(3):  # wrapping changes the layout a little: measure again
        with warnings.catch_warnings(), literal_text(figure):  # drawn as when it is saved
            warnings.simplefilter("ignore", UserWarning)  # a layout warning: said when saved
            figure.canvas.draw()
        width_px = figure.bbox.width
        wrapped = False
        for text, axes in texts:
            box = text.get_window_extent()  # the renderer of the draw above
            if axes is None:
                room_px = width_px
            else:
                centre = axes.get_window_extent().x0 + axes.bbox.width / 2
                room_px = 2 * min(centre, width_px - centre)
            if box.width <= room_px * 0.98:
                continue
            lines = text.get_text().split("\n")
            longest = max(len(line) for line in lines)
            chars = max(12, int(longest * room_px * 0.95 / box.width))
            text.set_text("\n".join(textwrap.fill(line, chars) for line in lines))
            wrapped = True
        if not wrapped:
            break
    return figure


def save_figure(figure: Figure, path: str | Path, dpi: int = 120) -> Path:
    """Write ``figure`` to ``path``; the format is the extension (png, svg or pdf).

    Raises
    ------
    SocsimError
        For any other extension, naming the valid ones.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in SAVE_FORMATS:
        raise SocsimError(
            f"cannot write a figure as '{path.name}': expected one of "
            f"{', '.join('.' + f for f in SAVE_FORMATS)}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_bytes(path, figure_bytes(figure, fmt, dpi))  # staged, renamed when complete


def figure_bytes(figure: Figure, fmt: str = "png", dpi: int = 100) -> bytes:
    """The figure encoded as ``fmt`` (every figure socsim writes passes here), its text
    drawn literally (:func:`literal_text`)."""
    buffer = io.BytesIO()
    with literal_text(figure):
        figure.savefig(buffer, format=fmt, dpi=dpi)
    return buffer.getvalue()


@contextmanager
def literal_text(figure: Figure) -> Iterator[None]:
    """Draw every text of ``figure`` as written: no ``$...$`` math text.

    Op names, swept values and titles come from users; matplotlib would parse
    ``$\\bad$`` as math and fail the whole figure. Texts that exist are switched off
    here, and texts made while drawing (tick labels) follow ``text.parse_math``.
    socsim's own labels use no math text.
    """
    for text in figure.findobj(Text):
        text.set_parse_math(False)
    with matplotlib.rc_context({"text.parse_math": False}):
        yield


def format_value(value: object) -> str:
    """A swept value as a short tick label (``130``, ``0.5``, ``14.68``, ``split_point``).

    Floats keep 4 significant digits (log-spaced ranges give 14.678..., 4641.59...),
    whole thousands and above print in full (``10000``, not ``1e+04``).
    """
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    return str(value)


def short(value: float) -> str:
    """A figure for an annotation: 3 significant digits, no exponent below 10^6."""
    if value != value:
        return "n/a"
    return f"{value:.0f}" if 100 <= abs(value) < 1e6 else f"{value:.3g}"


def scaled(values: np.ndarray, column: str) -> np.ndarray:
    """``values`` converted to the display unit of ``column``."""
    return values * unit_of(column)[1]
