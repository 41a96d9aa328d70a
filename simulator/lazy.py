"""Public names of a package imported on first use (PEP 562 module ``__getattr__``).

Importing ``simulator.x.y`` runs every ``__init__`` on the way; when those import the
engine, pandas, networkx or SimPy eagerly, ``socsim --help`` pays seconds for modules it
never uses. A package lists its public names and the module defining each; this makes
``from package import name`` import that module then, and keeps ``dir(package)`` listing
every public name, imported or not.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` exporting ``exports`` lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Public name -> absolute name of the module that defines it.

    Returns
    -------
    tuple of callables
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__``. The first
        import of a name stores its value in the package, so later reads are plain
        attribute reads.

    Raises
    ------
    AttributeError
        (From ``__getattr__``) for a name that is not in ``exports``.
    """

    def get_attribute(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def list_names() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return get_attribute, list_names
