"""Reading an ONNX file and its external data within stated bounds (docs/security.md).

``onnx.load`` opens the path itself (following links, after any check the caller made)
and reads every external-data tensor whole, where a tensor without a ``length`` reads the
rest of its file: a few hundred bytes naming a sparse 8 GB file cost 16.9 GB. Here the
model file is read once through :func:`simulator.spec.paths.read_regular_file` (bounded,
re-checked against the allowed directories after opening) and parsed from those bytes.
An external tensor's size comes from its dims and element type; a ``length`` that
disagrees is an error, and its file must hold it. Only small tensors are read (the
importer needs values only for shape-like constants such as a Reshape's target shape,
through ONNX's shape inference); larger weights are left where they are, so a model's
weights cost no memory whatever their size.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import onnx
from onnx import external_data_helper, helper

from simulator.errors import ModelError, SocsimError
from simulator.graph.view_build import tensor_elements

#: Largest ``.onnx`` file read, bytes. Protobuf cannot parse a message over 2 GiB; models
#: with more weights keep them in external data (ONNX's own rule), which is not read.
MAX_ONNX_FILE_BYTES = 2**30  # VGG-19 with its weights inside is 548 MB
#: Largest external-data tensor read, bytes (shape-like constants are a few bytes; a
#: weight of 1 MiB or more is only checked to be present).
MAX_EXTERNAL_TENSOR_READ = 2**20
#: Largest external-data file whose size is trusted, bytes (an offset or a size beyond it
#: is refused, so arithmetic on them cannot overflow int64).
MAX_EXTERNAL_FILE_BYTES = 2**48


def read_onnx_file(
    path: str | Path, allowed: Iterable[Path] | None, digest: Any = None
) -> onnx.ModelProto:
    """Parse the ONNX file ``path`` with its external data, within the bounds above.

    Parameters
    ----------
    path : str or Path
        The model file (resolved by the caller when ``allowed`` is given).
    allowed : iterable of Path or None
        Directories the model and its external data must really lie in once opened; None
        (a path given in Python) allows the model's own folder for its external data.

    Raises
    ------
    ModelError
        For an unreadable, oversized or refused file, an external tensor whose length,
        offset or file disagrees with its dims, or bytes that are not an ONNX model.
    """
    from simulator.spec.paths import read_regular_file  # spec imports graph

    path = Path(path)
    label = str(path)
    try:
        data = read_regular_file(path, MAX_ONNX_FILE_BYTES, allowed)
    except (OSError, SocsimError) as exc:
        message = str(exc) if isinstance(exc, SocsimError) else exc.strerror or str(exc)
        raise ModelError(f"cannot read the file: {message}", label) from None
    if digest is not None:
        digest.update(data)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f"not an ONNX model (protobuf: {exc})", label) from None
    del data
    folders = tuple(allowed) if allowed is not None else (path.resolve().parent,)
    for tensor in external_data_helper._get_all_tensors(model):
        if external_data_helper.uses_external_data(tensor):
            _load_external(tensor, path.parent, folders, label)
            if digest is not None and tensor.HasField("raw_data"):
                digest.update(f"\0{len(tensor.name)}:{tensor.name}{len(tensor.raw_data)}:".encode())
                digest.update(tensor.raw_data)
    return model


def _load_external(tensor, base: Path, folders: tuple[Path, ...], label: str) -> None:
    """Check one external tensor against its file; read it in when small."""
    from simulator.spec.paths import read_regular_file as read
    from simulator.spec.paths import resolve_user_path as resolve

    info = external_data_helper.ExternalDataInfo(tensor)
    what = f"external tensor '{tensor.name}'"
    count = tensor_elements(tensor.dims, what, label)
    try:
        itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"{what} has an unknown element type {tensor.data_type}", label) from None
    size = count * itemsize
    offset = int(info.offset or 0)
    if info.length is not None and int(info.length) != size:
        raise ModelError(
            f"{what}: its length {int(info.length):,} disagrees with its shape "
            f"{list(tensor.dims)} ({size:,} bytes)",
            label,
        )
    if not 0 <= offset <= MAX_EXTERNAL_FILE_BYTES:
        raise ModelError(f"{what}: offset {offset:,} is out of range", label)
    if not info.location:
        raise ModelError(f"{what} names no file", label)
    try:
        where = resolve(info.location, base, folders)
        if size > MAX_EXTERNAL_TENSOR_READ:  # present and whole, but never read
            read(where, MAX_EXTERNAL_FILE_BYTES, folders, offset=offset + size, length=0)
            return
        raw = read(where, MAX_EXTERNAL_FILE_BYTES, folders, offset=offset, length=size)
    except (OSError, SocsimError) as exc:
        message = str(exc) if isinstance(exc, SocsimError) else exc.strerror or str(exc)
        raise ModelError(f"{what} ({info.location}): {message}", label) from None
    tensor.raw_data = raw
    tensor.data_location = onnx.TensorProto.DEFAULT
    del tensor.external_data[:]
