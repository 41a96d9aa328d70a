"""Every figure of docs/performance.md in one sitting: run the benches, write the page.

Run ``python bench/sitting.py`` on an idle machine, from the repository root. It runs the
bench scripts one after the other (about 3 minutes on two idle cores), keeps each one's
output in ``runs/perf/NAME.txt``, then

* writes ``docs/performance.md`` from ``bench/performance_template.md``: ``{{out:NAME}}``
  is a script's output (without its JSON line), ``{{out:NAME:A:B}}`` lines A to B of it,
  ``{{NAME.dotted.key:FORMAT}}`` a figure of its JSON line, and the computed fields of
  :func:`derived` (target statuses, resume shares);
* refills ``bench/baseline.json``: every figure's ``value`` from this sitting and, for
  figures with a smoke counterpart, ``smoke`` as the median of three smoke runs.

``--render-only`` rewrites the page and the baseline from the outputs already in
``runs/perf/`` (after editing the template). Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "perf"
TEMPLATE = ROOT / "bench" / "performance_template.md"
PAGE = ROOT / "docs" / "performance.md"
BASELINE = ROOT / "bench" / "baseline.json"

#: (name, arguments), in the order they run
BENCHES = (
    ("engine", ["bench/engine.py", "--json"]),
    ("engine_1000", ["bench/engine.py", "--requests", "1000", "--repeat", "3", "--json"]),
    ("dvfs_window", ["bench/dvfs_window.py", "--json"]),
    ("loader", ["bench/loader.py", "--json"]),
    ("placement", ["bench/placement.py", "--cpu", "--json"]),
    ("sweep", ["bench/sweep.py", "--json"]),
    ("scale", ["bench/scale.py", "--json"]),
    ("sweep_resume", ["bench/sweep_resume.py"]),
    ("fleet", ["bench/fleet.py", "--json"]),
)
#: the engine's smoke run, as tests/test_bench_smoke.py runs it
SMOKE_ENGINE = ["bench/engine.py", "--requests", "4", "--repeat", "1", "--json"]
#: baseline.json: bench -> figure -> better; the figure is a dotted path into its JSON line
BASELINE_FIGURES = {
    "engine": {
        "ratio_ours_over_bare": "higher",
        "ratio_ours_over_bare_paired_median": "higher",
        "ratio_simulate_over_bare": "higher",
        "ratio_ours_wall_over_heapq_limit": "lower",
    },
    "loader": {
        "load_pure_over_libyaml": "higher",
        "yaml_pure_over_libyaml": "higher",
        "help_over_bare_python": "lower",
    },
    "sweep": {
        "ratios.processes / serial": "higher",
        "ratios.fast processes / fast serial": "higher",
    },
    "scale": {"trace_bytes_per_row": "lower"},
}


def _load_average() -> float:
    return os.getloadavg()[0]


def run_benches() -> dict[str, float]:
    """Run every bench into ``runs/perf``; return the load averages seen (min, max)."""
    OUT.mkdir(parents=True, exist_ok=True)
    loads = [_load_average()]
    for name, args in BENCHES:
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(args)}", flush=True)
        done = subprocess.run(
            [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=False
        )
        (OUT / f"{name}.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
        if done.returncode != 0:
            sys.exit(f"bench {name} failed (status {done.returncode}): see {OUT / name}.txt")
        loads.append(_load_average())
    smokes = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, *SMOKE_ENGINE], cwd=ROOT, capture_output=True, text=True, check=True
        )
        smokes.append(json_line(done.stdout))
    (OUT / "engine_smoke.json").write_text(json.dumps(smokes), encoding="utf-8")
    loads.append(_load_average())
    conditions = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_min": min(loads),
        "load_max": max(loads),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
    }
    (OUT / "conditions.json").write_text(json.dumps(conditions), encoding="utf-8")
    return conditions


def json_line(text: str) -> dict:
    """The last line of ``text`` that is a JSON object."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in the output")


def lookup(data: dict, dotted: str):
    """``data`` at ``a.b.c``; keys may contain spaces and slashes, not dots."""
    value = data
    for key in dotted.split("."):
        value = value[key]
    return value


def output_lines(name: str) -> list[str]:
    """A bench's printed lines, without its JSON line, timing lines and blank lines."""
    text = (OUT / f"{name}.txt").read_text(encoding="utf-8")
    return [
        line
        for line in text.splitlines()
        if line.strip()
        and not line.startswith("{")
        and not line.startswith(("real\t", "user\t", "sys\t"))
    ]


def derived(data: dict[str, dict]) -> dict[str, object]:
    """Figures computed from several outputs, and each issue-17 target's status."""

    def status(ok: bool, short: str = "") -> str:
        return "met" if ok else f"not met{short}"

    engine = data["engine"]["ratio_ours_over_bare"]
    seconds = data["placement"]["seconds"]
    resume = data["sweep_resume"]
    full = next(r for r in data["scale"]["runs"] if r["level"] == "full")
    return {
        "status_engine": status(engine >= 2.5, f" ({(1 - engine / 2.5) * 100:.0f} % short)"),
        "status_simulate": status(data["engine"]["ratio_simulate_over_bare"] >= 1.5),
        "status_trace": status(data["scale"]["trace_bytes_per_row"] <= 64),
        "status_split": status(
            seconds["split_point"]["1000"] < 0.5 and seconds["split_point"]["10000"] < 5
        ),
        "status_heft": status(seconds["heft"]["10000"] < 1 and seconds["cpop"]["10000"] < 1),
        "status_sweep": status(data["sweep"]["ratios"]["processes / serial"] >= 1.7),
        "status_help": status(data["loader"]["seconds"]["this checkout"] < 0.5),
        "status_loader": status(data["loader"]["load_pure_over_libyaml"] >= 2),
        "resume_pending": resume["points"] - resume["rows_at_kill"],
        "resume_time_pct": 100 * resume["resume_s"] / resume["uninterrupted_s"],
        "resume_rows_pct": 100 * (resume["points"] - resume["rows_at_kill"]) / resume["points"],
        "scale_full_mib_per_1000": full["run_mib"] / full["requests"] * 1000,
        "status_fleet": status(data["fleet"]["wall_s"] < data["fleet"]["target_s"]),
    }


def render(conditions: dict) -> str:
    """docs/performance.md from the template and the outputs in ``runs/perf``."""
    data = {name: json_line((OUT / f"{name}.txt").read_text()) for name, _ in BENCHES}
    fields = {
        **derived(data),
        "commit": conditions["commit"],
        "when": conditions["when"],
        "load": f"{conditions['load_min']:.1f}–{conditions['load_max']:.1f}",
    }

    def fill(match: re.Match) -> str:
        body = match.group(1)
        if body.startswith("out:"):
            parts = body.split(":")
            lines = output_lines(parts[1])
            if len(parts) == 4:
                lines = lines[int(parts[2]) : int(parts[3])]
            return "\n".join(lines)
        key, _, spec = body.partition(":")
        if key in fields:
            value = fields[key]
        else:
            name, _, dotted = key.partition(".")
            value = lookup(data[name], dotted)
        return format(value, spec)

    return re.sub(r"\{\{(.+?)\}\}", fill, TEMPLATE.read_text(encoding="utf-8"))


def refill_baseline(conditions: dict) -> dict:
    """bench/baseline.json with this sitting's figures (and the engine's smoke medians)."""
    data = {name: json_line((OUT / f"{name}.txt").read_text()) for name, _ in BENCHES}
    smokes = json.loads((OUT / "engine_smoke.json").read_text())
    note = (
        "Baseline figures of the bench scripts, as quoted in docs/performance.md "
        "(bench/compare.py prints any figure > 10 % worse; tests/test_bench_smoke.py does so "
        "in CI). 'value' is the full-size figure, 'smoke' the same ratio with the smoke "
        "test's arguments (what CI compares with). Keys are dotted paths into a bench's "
        "--json line. Written by python bench/sitting.py with docs/performance.md: do not "
        "edit by hand."
    )
    when = (
        f"{conditions['when']}, load average {conditions['load_min']:.1f}–"
        f"{conditions['load_max']:.1f}, one sitting (python bench/sitting.py)"
    )
    baseline: dict = {"_note": note}
    for bench, figures in BASELINE_FIGURES.items():
        baseline[bench] = {}
        for figure, better in figures.items():
            entry = {"value": round(lookup(data[bench], figure), 3), "better": better}
            if bench == "engine":
                entry["smoke"] = round(statistics.median(s[figure] for s in smokes), 3)
            entry["source"] = f"{' '.join(dict(BENCHES)[bench])}; {when}"
            baseline[bench][figure] = entry
    return baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite the page from runs/perf"
    )
    args = parser.parse_args()
    if args.render_only:
        conditions = json.loads((OUT / "conditions.json").read_text())
    else:
        conditions = run_benches()
    PAGE.write_text(render(conditions), encoding="utf-8")
    baseline = refill_baseline(conditions)
    BASELINE.write_text(json.dumps(baseline, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {PAGE.relative_to(ROOT)} and {BASELINE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
