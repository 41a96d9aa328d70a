"""Writing results safely: default locations under ``runs/``, checks before work,
atomic files and folders, and user text made safe for CSV, figures and HTML."""

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

__all__ = [
    "NAME_RULE",
    "RUNS_DIR",
    "check_output_dir",
    "check_output_file",
    "default_output_dir",
    "name_problem",
    "neutralise_formulas",
    "staged_dir",
    "suggest_slug",
    "visible_bidi",
    "write_bytes",
    "write_csv",
    "write_parquet",
    "write_text",
]
