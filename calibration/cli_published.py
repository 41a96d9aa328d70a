"""``socsim calibrate published``: the phone presets against published TFLite latencies
(:mod:`calibration.published` computes it; this module is its command line)."""

from __future__ import annotations

import argparse
from pathlib import Path

from calibration.layout import DEFAULT_OUT
from simulator.exitcodes import EXIT_OK
from simulator.output import check_output_dir

PUBLISHED_IMAGE = "published_pred_vs_published.png"


def write_docs(page: Path, result, figure: Path) -> None:
    """Splice the generated block into ``page``; the figure goes to ``page``'s img/."""
    import shutil

    from calibration.published import load_table
    from calibration.published_fit import shipped_values
    from calibration.published_report import block, splice

    image = Path("img") / PUBLISHED_IMAGE
    text = page.read_text(encoding="utf-8")
    new = splice(text, block(result, load_table(), shipped_values(), image.as_posix()))
    (page.parent / "img").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(figure, page.parent / image)
    page.write_text(new, encoding="utf-8")


def cmd_published(args: argparse.Namespace) -> int:
    from calibration.published import (
        FIT_MEDIAN,
        HOLDOUT_BAND,
        HOLDOUT_SHARE,
        load_table,
        run,
        summary,
    )

    if args.fit:
        from calibration.published_fit import describe, fit_and_write

        print(describe(fit_and_write(load_table())))
    out = check_output_dir(args.output, "the output folder")
    result = run(out)
    figures = summary(result)
    if args.docs:
        write_docs(Path(args.docs), result, out / "published.png")
    print(
        f"fit rows {figures['fit_rows']}: median |error| {figures['fit_median_abs'] * 100:.1f} % "
        f"(target <= {FIT_MEDIAN * 100:.0f} %); hold-out rows {figures['holdout_rows']}: "
        f"{figures['holdout_within'] * 100:.0f} % within ±{HOLDOUT_BAND * 100:.0f} % "
        f"(target >= {HOLDOUT_SHARE * 100:.0f} %), median |error| "
        f"{figures['holdout_median_abs'] * 100:.1f} % -> {out / 'published.csv'}, "
        f"{out / 'published.png'}"
    )
    return EXIT_OK


def add_published_parser(steps: argparse._SubParsersAction) -> None:
    """Add ``published`` to the ``socsim calibrate`` subcommands."""
    published = steps.add_parser(
        "published",
        help="phone presets vs published TFLite latencies (calibration/data/published.csv)",
    )
    published.add_argument(
        "-o", "--output", default=str(DEFAULT_OUT), help="folder for published.csv and .png"
    )
    published.add_argument(
        "--fit",
        action="store_true",
        help="refit the presets' free parameters on the fit rows and rewrite their "
        "'# fit:' lines under scenarios/devices/ first",
    )
    published.add_argument(
        "--docs",
        metavar="PAGE",
        help="also splice the tables into PAGE (docs/presets.md) and copy the figure to "
        "PAGE's img/ folder",
    )
    published.set_defaults(handler=cmd_published)
