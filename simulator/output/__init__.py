"""Writing results safely: default locations under ``runs/``, checks before work,
atomic files and folders, and user text made safe for CSV, figures and HTML."""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the re-exports, listed in __all__)

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.lazy import lazy_exports

_EXPORTS = {
    "NAME_RULE": "simulator.output.names",
    "RUNS_DIR": "simulator.output.names",
    "check_output_dir": "simulator.output.location",
    "check_output_file": "simulator.output.location",
    "default_output_dir": "simulator.output.names",
    "name_problem": "simulator.output.names",
    "neutralise_formulas": "simulator.output.text",
    "staged_dir": "simulator.output.atomic",
    "suggest_slug": "simulator.output.names",
    "visible_bidi": "simulator.output.text",
    "write_bytes": "simulator.output.atomic",
    "write_csv": "simulator.output.atomic",
    "write_parquet": "simulator.output.atomic",
    "write_text": "simulator.output.atomic",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from simulator.output.atomic import (
        staged_dir,
        write_bytes,
        write_csv,
        write_parquet,
        write_text,
    )
    from simulator.output.location import check_output_dir, check_output_file
    from simulator.output.names import (
        NAME_RULE,
        RUNS_DIR,
        default_output_dir,
        name_problem,
        suggest_slug,
    )
    from simulator.output.text import neutralise_formulas, visible_bidi

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
