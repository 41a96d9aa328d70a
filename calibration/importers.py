"""Per-op times measured elsewhere, into the measurement table.

Two sources:

``csv``
    A generic CSV with columns ``model, node, kind, flops, bytes, time_ms`` (optional
    ``dtype``, default fp32; optional ``runs``, ``threads``, ``parallel_fraction``,
    default 1). ``kind`` is a
    socsim op kind, or ``model`` for a whole model's end-to-end time.
``tflite``
    The text TFLite's ``benchmark_model --enable_op_profiling=true`` prints: the "Run
    Order" table after ``Operator-wise Profiling Info for Regular Benchmark Runs:``,
    whose bracketed header names the columns (``[node type] [start] [first] [avg ms]
    [%] [cdf%] [mem KB] [times called] [Name]``; older builds print ``[start]``, newer
    ones do not). ``avg ms`` is per call, so a row's time per inference is
    ``avg ms x times called``. The profile has no FLOPs or bytes: a work CSV
    (``node, flops, bytes``, optional ``dtype``) supplies them, joined on the name
    without its brackets and ``:index`` suffix.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from calibration.table import (
    MeasurementError,
    check_fraction,
    check_kind,
    check_number,
    make_table,
)
from simulator.graph.model import DTYPE_BYTES

GENERIC_COLUMNS = ("model", "node", "kind", "flops", "bytes", "time_ms")
SECTION = "Operator-wise Profiling Info for Regular Benchmark Runs:"
_HEADER = re.compile(r"\[([^\]]+)\]")
_SPLIT = re.compile(r"\s*\t\s*|\s{2,}")  # a tab, or 2+ spaces, with what surrounds it
_INFERENCE_AVG = re.compile(r"Inference \(avg\):\s*([0-9.eE+]+)")

#: TFLite (builtin op names and XNNPACK delegate kernel names) -> socsim op kind.
#: First match wins, so more specific patterns come first.
TFLITE_KINDS: tuple[tuple[str, str], ...] = (
    (r"^DEPTHWISE_CONV_2D$|DWConv", "dwconv"),
    (r"^(CONV_2D|TRANSPOSE_CONV)$|^Convolution|^Deconvolution", "conv"),
    (r"^FULLY_CONNECTED$|^Fully Connected", "fc"),
    (r"^BATCH_MATMUL$|^Batch Matrix Multiply", "matmul"),
    (r"POOL|Pooling|^MEAN$|^Mean", "pool"),
    (r"^SOFTMAX$|^Softmax", "softmax"),
    (r"^CONCATENATION$|^Concatenate", "concat"),
    (
        r"^(RELU|RELU6|RELU_N1_TO_1|LOGISTIC|TANH|HARD_SWISH|PRELU|LEAKY_RELU|GELU|ELU)$"
        r"|^(Clamp|Sigmoid|Tanh|HardSwish|Leaky ReLU|ELU|GELU)",
        "activation",
    ),
    (
        r"^(ADD|SUB|MUL|DIV|SQUARED_DIFFERENCE|MAXIMUM|MINIMUM|QUANTIZE|DEQUANTIZE|SQRT|RSQRT"
        r"|EXP|POW|ABS|NEG)$|^(Add|Subtract|Multiply|Divide|Convert|Square)",
        "elementwise",
    ),
    (r"^(L2_NORMALIZATION)$", "norm"),
    (r"^LOCAL_RESPONSE_NORMALIZATION$", "lrn"),
    (r"^(GATHER|EMBEDDING_LOOKUP)$", "embedding"),
    (
        r"^(RESHAPE|SQUEEZE|EXPAND_DIMS|TRANSPOSE|STRIDED_SLICE|SLICE|PAD|PADV2|SPLIT|SPLIT_V"
        r"|PACK|UNPACK|TILE|DEPTH_TO_SPACE|SPACE_TO_DEPTH|RESIZE_BILINEAR"
        r"|RESIZE_NEAREST_NEIGHBOR)$|^(Copy|Transpose|Constant Pad|Slice|Resize|Depth To Space)",
        "reshape",
    ),
)


def tflite_kind(node_type: str, extra: Mapping[str, str] | None = None) -> str | None:
    """The socsim kind of a TFLite node type (``extra`` overrides), or None."""
    if extra and node_type in extra:
        return extra[node_type]
    for pattern, kind in TFLITE_KINDS:
        if re.search(pattern, node_type):
            return kind
    return None


def _read_text(path: Path) -> str:
    if not Path(path).exists():
        raise MeasurementError(str(path), "file not found")
    text = Path(path).read_text()
    if not text.strip():
        raise MeasurementError(str(path), "empty file")
    return text


def _csv_rows(text: str, file: str, required: tuple[str, ...]):
    """(line number, row dict) of a CSV with the required columns; errors name file/line."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing = [c for c in required if c not in header]
    if missing:
        raise MeasurementError(
            file, f"missing column(s) {missing}; the header has {header}", 1, missing[0]
        )
    rows = []
    for row in reader:
        if None in row:
            raise MeasurementError(file, "more fields than header columns", reader.line_num)
        rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items()}))
    if not rows:
        raise MeasurementError(file, "no rows after the header")
    return rows


def _dtype(value: str, file: str, line: int) -> str:
    dtype = value or "fp32"
    if dtype not in DTYPE_BYTES:
        raise MeasurementError(
            file, f"dtype must be one of {tuple(DTYPE_BYTES)}, got {value!r}", line, "dtype"
        )
    return dtype


def import_generic_csv(path: Path) -> pd.DataFrame:
    """The measurement table of a generic per-op CSV (see the module docstring).

    Raises
    ------
    MeasurementError
        Naming the file, line and column of a missing column, an unknown kind, a
        negative or non-numeric number, or an empty file.
    """
    file = str(path)
    out = []
    for line, row in _csv_rows(_read_text(path), file, GENERIC_COLUMNS):
        whole = row["kind"] == "model"
        kind = "" if whole else check_kind(row["kind"], file, line)
        if not row["model"]:
            raise MeasurementError(file, "empty model name", line, "model")
        if not whole and not row["node"]:
            raise MeasurementError(file, "empty node name", line, "node")
        out.append(
            {
                "level": "model" if whole else "op",
                "model": row["model"],
                "node": "" if whole else row["node"],
                "kind": kind,
                "op_type": "",
                "dtype": _dtype(row.get("dtype", ""), file, line),
                "shapes": "",
                "flops": check_number(row["flops"], file, line, "flops"),
                "bytes": check_number(row["bytes"], file, line, "bytes"),
                "median_s": check_number(row["time_ms"], file, line, "time_ms", True) * 1e-3,
                "iqr_s": math.nan,
                "runs": int(check_number(row.get("runs") or 1, file, line, "runs", True)),
                "threads": int(check_number(row.get("threads") or 1, file, line, "threads", True)),
                "parallel_fraction": check_fraction(
                    row.get("parallel_fraction") or 1, file, line, "parallel_fraction"
                ),
            }
        )
    return make_table(out)


def _node_name(raw: str) -> str:
    """``[MobilenetV1/Conv2d_0/Relu6]:0`` -> ``MobilenetV1/Conv2d_0/Relu6``."""
    name = re.sub(r":\d+$", "", raw.strip())
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name


def parse_tflite_profile(text: str, file: str = "<tflite>") -> list[dict]:
    """The Run Order rows: ``line, node_type, name, avg_ms, times_called`` (and ``first_ms``).

    Raises
    ------
    MeasurementError
        When the section or its header is missing, or a row does not fit the header.
    """
    lines = text.splitlines()
    start = next((i for i, s in enumerate(lines) if SECTION in s), None)
    if start is None:
        raise MeasurementError(file, f"no '{SECTION}' section (was --enable_op_profiling=true?)")
    header_at = next(
        (i for i in range(start + 1, len(lines)) if "[node type]" in lines[i].lower()), None
    )
    if header_at is None:
        raise MeasurementError(
            file, "no '[node type] ... [Name]' header after the section", start + 1
        )
    columns = [c.strip().lower() for c in _HEADER.findall(lines[header_at])]
    for needed in ("node type", "avg ms", "times called", "name"):
        if needed not in columns:
            raise MeasurementError(
                file, f"header lacks '[{needed}]'; has {columns}", header_at + 1, needed
            )
    rows = []
    for i in range(header_at + 1, len(lines)):
        raw = lines[i].strip()
        if not raw or raw.startswith("="):
            break
        fields = _SPLIT.split(raw)
        if len(fields) != len(columns):
            raise MeasurementError(
                file, f"expected {len(columns)} fields ({columns}), got {len(fields)}", i + 1
            )
        values = dict(zip(columns, fields, strict=True))
        avg = check_number(values["avg ms"], file, i + 1, "avg ms")
        calls = check_number(values["times called"], file, i + 1, "times called", True)
        rows.append(
            {
                "line": i + 1,
                "node_type": values["node type"],
                "name": _node_name(values["name"]),
                "avg_ms": avg,
                "times_called": int(calls),
            }
        )
    if not rows:
        raise MeasurementError(file, "the Run Order table has no rows", header_at + 2)
    return rows


def import_tflite(
    path: Path,
    work_path: Path,
    model: str,
    extra_kinds: Mapping[str, str] | None = None,
    threads: int = 1,
) -> pd.DataFrame:
    """The measurement table of a TFLite op profile joined with a work CSV.

    Raises
    ------
    MeasurementError
        On a node type with no known kind (name it with ``extra_kinds``), a profiled
        node the work file lacks, or any malformed input.
    """
    file = str(path)
    text = _read_text(path)
    profile = parse_tflite_profile(text, file)
    work = {}
    for line, row in _csv_rows(_read_text(work_path), str(work_path), ("node", "flops", "bytes")):
        work[row["node"]] = {
            "flops": check_number(row["flops"], str(work_path), line, "flops"),
            "bytes": check_number(row["bytes"], str(work_path), line, "bytes"),
            "dtype": _dtype(row.get("dtype", ""), str(work_path), line),
        }
    out = []
    for entry in profile:
        kind = tflite_kind(entry["node_type"], extra_kinds)
        if kind is not None:
            check_kind(kind, file, entry["line"], "node type")
        else:
            raise MeasurementError(
                file,
                f"no op kind known for node type '{entry['node_type']}'; map it with "
                f"--kind '{entry['node_type']}=KIND'",
                entry["line"],
                "node type",
            )
        if entry["name"] not in work:
            raise MeasurementError(
                str(work_path),
                f"no row for profiled node '{entry['name']}' (line {entry['line']} of {file})",
            )
        if entry["avg_ms"] <= 0:
            continue  # below the profiler's resolution: nothing to fit
        out.append(
            {
                "level": "op",
                "model": model,
                "node": entry["name"],
                "kind": kind,
                "op_type": entry["node_type"],
                "dtype": work[entry["name"]]["dtype"],
                "shapes": "",
                "flops": work[entry["name"]]["flops"],
                "bytes": work[entry["name"]]["bytes"],
                "median_s": entry["avg_ms"] * entry["times_called"] * 1e-3,
                "iqr_s": math.nan,
                "runs": 1,
                "threads": threads,
            }
        )
    match = _INFERENCE_AVG.search(text)
    if match and out:
        total = sum(r["flops"] for r in out), sum(r["bytes"] for r in out)
        out.append(
            {
                **out[0],
                "level": "model",
                "node": "",
                "kind": "",
                "op_type": "",
                "flops": total[0],
                "bytes": total[1],
                "median_s": float(match.group(1)) * 1e-6,
            }
        )
    return make_table(out)


#: ``--format`` -> importer; each takes the CLI's arguments by keyword.
IMPORTERS: Mapping[str, Callable[..., pd.DataFrame]] = {
    "csv": lambda path, **_: import_generic_csv(path),
    "tflite": lambda path, work, model, kinds=None, threads=1, **_: import_tflite(
        path, work, model, kinds, threads
    ),
}
