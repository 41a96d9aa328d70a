"""Start-up and scenario loading: ``socsim --help`` and ``load_scenario`` (issue 17, item 6).

Run ``python bench/loader.py`` (options: ``--repeat K``, ``--starts N``, ``--against DIR``,
``--smoke``, ``--json``).

What runs (one invocation, everything interleaved so both sides of a ratio see the same
load):

* **load_scenario**: every shipped example (``scenarios/examples/*.yaml``) loaded once
  per round, with libyaml's parser (what ``load_scenario`` uses) and with PyYAML's pure
  parser (:mod:`simulator.spec.yamlio` with its ``_FAST_LOADER`` switched off, as on a
  PyYAML built without libyaml); best of ``--repeat`` rounds, ``time.perf_counter``.
  ``yaml only`` is the same for :func:`~simulator.spec.yamlio.load_yaml_file` of each
  top-level file (no includes, no validation).
* **start-up**: wall time of a fresh ``python -c`` that builds the ``socsim`` parser and
  formats its help (what ``socsim --help`` does before printing), against a bare
  ``python -c pass``; median of ``--starts`` runs each. The heavy packages the help
  imported are listed (none is the goal; tests/test_startup.py checks it).
* ``--against DIR``: the same load_scenario loop and start-up in subprocesses with
  ``PYTHONPATH=DIR`` (another checkout, e.g. ``git worktree add /tmp/main main``) and with
  this checkout, interleaved; prints before/after ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.spec import load_scenario, yamlio  # noqa: E402

EXAMPLES = sorted((ROOT / "scenarios" / "examples").glob("*.yaml"))
HEAVY = ("pandas", "numpy", "simpy", "networkx", "matplotlib", "onnx", "scipy")
HELP = (
    "import sys; from simulator.cli import build_parser; build_parser().format_help(); "
    f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
)
#: One load_scenario round over the examples in a child process: prints its best seconds.
LOOP = (
    "import sys, time; from simulator.spec import load_scenario; files = sys.argv[1:-1]; "
    "rounds = int(sys.argv[-1]); best = float('inf')\n"
    "for _ in range(rounds):\n"
    "    t = time.perf_counter()\n"
    "    for f in files: load_scenario(f)\n"
    "    best = min(best, time.perf_counter() - t)\n"
    "print(best)"
)


def _load_all(files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        load_scenario(path)
    return time.perf_counter() - start


def _yaml_all(files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        yamlio.load_yaml_file(path)
    return time.perf_counter() - start


def parsers(files: list[Path], repeat: int) -> dict[str, float]:
    """Best seconds of each loop with libyaml and with the pure parser."""
    if not hasattr(yamlio, "_FAST_LOADER"):  # the switch this bench flips was renamed
        raise SystemExit("simulator.spec.yamlio has no _FAST_LOADER: update bench/loader.py")
    fast = yamlio._FAST_LOADER
    if fast is None:
        raise SystemExit("PyYAML is built without libyaml: nothing to compare")
    best: dict[str, float] = {}
    _load_all(files)  # warm: imports, zoo caches
    for _ in range(repeat):
        for parser in ("libyaml", "pure"):
            yamlio._FAST_LOADER = fast if parser == "libyaml" else None
            try:
                for name, loop in (("load", _load_all), ("yaml", _yaml_all)):
                    key = f"{name} {parser}"
                    best[key] = min(best.get(key, float("inf")), loop(files))
            finally:
                yamlio._FAST_LOADER = fast
    return best


def _child(code: list[str], path: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(path))
    done = subprocess.run(  # cwd too: ``python -c`` puts it first on sys.path
        [sys.executable, *code], cwd=path, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def startup(starts: int, checkouts: dict[str, Path]) -> tuple[dict[str, float], list]:
    """Median wall seconds of a bare interpreter and of each checkout's help."""
    times: dict[str, list[float]] = {"bare python": []}
    heavy: list = []
    for _ in range(starts):
        for label, path in [("bare python", ROOT), *checkouts.items()]:
            start = time.perf_counter()
            out = _child(["-c", "pass" if label == "bare python" else HELP], path)
            times.setdefault(label, []).append(time.perf_counter() - start)
            if label == "this checkout":
                heavy = json.loads(out.replace("'", '"'))
    return {k: statistics.median(v) for k, v in times.items()}, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (best of)")
    parser.add_argument("--starts", type=int, default=7, help="interpreter starts (median)")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--smoke", action="store_true", help="2 rounds, 3 starts (~3 s)")
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()
    files = EXAMPLES
    repeat, starts = (2, 3) if args.smoke else (args.repeat, args.starts)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"socsim loader benchmark (python {sys.version.split()[0]}, load average {load:.2f})\n"
        f"load_scenario over {len(files)} shipped examples, best of {repeat} rounds"
    )
    best = parsers(files, repeat)
    ratios = {
        "load_pure_over_libyaml": best["load pure"] / best["load libyaml"],
        "yaml_pure_over_libyaml": best["yaml pure"] / best["yaml libyaml"],
    }
    for name in ("load", "yaml"):
        label = "load_scenario" if name == "load" else "yaml only"
        print(
            f"  {label:<14} libyaml {best[f'{name} libyaml'] * 1e3:8.1f} ms   "
            f"pure {best[f'{name} pure'] * 1e3:8.1f} ms   "
            f"ratio pure/libyaml {ratios[f'{name}_pure_over_libyaml']:.2f}"
        )
    checkouts = {"this checkout": ROOT}
    if args.against:
        checkouts = {"against": args.against.resolve(), **checkouts}
    median, heavy = startup(starts, checkouts)
    print(f"start-up (build the socsim parser, format --help), median of {starts}:")
    for label, seconds in median.items():
        print(f"  {label:<14} {seconds * 1e3:8.1f} ms")
    ratios["help_over_bare_python"] = median["this checkout"] / median["bare python"]
    print(
        f"  ratio help/bare python {ratios['help_over_bare_python']:.2f}; "
        f"heavy packages imported by --help: {', '.join(heavy) or 'none'}"
    )
    if args.against:
        names = [str(p.relative_to(ROOT)) for p in files]  # each checkout's own library
        rounds = str(repeat)
        before = after = float("inf")
        for _ in range(2):
            before = min(before, float(_child(["-c", LOOP, *names, rounds], args.against)))
            after = min(after, float(_child(["-c", LOOP, *names, rounds], ROOT)))
        ratios["load_before_over_after"] = before / after
        ratios["help_before_over_after"] = median["against"] / median["this checkout"]
        print(
            f"against {args.against}: load_scenario {before * 1e3:.1f} ms -> {after * 1e3:.1f} ms "
            f"(ratio before/after {ratios['load_before_over_after']:.2f}); --help ratio "
            f"before/after {ratios['help_before_over_after']:.2f}"
        )
    if args.json:
        record = {"bench": "loader", "smoke": args.smoke, "load_average": load}
        record.update({k: round(v, 4) for k, v in ratios.items()})
        record["seconds"] = {k: round(v, 6) for k, v in {**best, **median}.items()}
        print(json.dumps(record))


if __name__ == "__main__":
    main()
