"""Fleet scale: 1,000 phones x 60 s of simulated time at 1 request/s each, end to end.

Run ``python bench/fleet.py`` (options ``--devices N``, ``--duration S``, ``--rate HZ``,
``--json``). It writes the scenario below to a temporary folder and times the command a
user runs, ``python -m simulator run FILE --trace none -q -o DIR``, in a child process:
wall time (imports, load, fleet expansion, 1,000 apps planned (identical phones: one
decision, docs/fleets.md), the run, writing the tables) and the child's CPU time, with
the load average before and after. The target (issue 20) is under 60 s on this machine.

Workload: a fleet of ``--devices`` midrange phones on one shared Wi-Fi access point
(600 Mbit/s each alone, equal-throughput airtime) in front of an edge GPU server; each
phone sends a 36.9 kB frame (Poisson, ``--rate`` per second) to a 2-op model on the
edge GPU and gets 40 B back. At 1,000 phones the frames take ~49 % of the airtime. The
model is small on purpose: this measures what a fleet adds (1,000 nodes, apps, radios,
plans and station links, one medium every transfer contends on), not op
throughput, which ``bench/engine.py`` measures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 60.0


def fleet_document(devices: int, duration_s: float, rate_hz: float) -> dict:
    """The bench scenario as a document (presets from the shipped library)."""
    return {
        "name": "bench_fleet",
        "seed": 1,
        "duration_s": duration_s,
        "include": ["preset:midrange_phone", "preset:edge_gpu_server", "preset:wifi"],
        "nodes": {
            "phone": {"preset": "midrange_phone", "fleet": {"count": devices}},
            "edge": {"preset": "edge_gpu_server"},
        },
        "links": {
            "wlan": {
                "kind": "shared",
                "preset": "wifi",
                "access_point": "edge",
                "stations": ["phone"],
                "bandwidth_mbps": 600,
                "reverse_bandwidth_mbps": 600,
            }
        },
        "models": {
            "tiny": {
                "ops": [
                    {"name": "conv", "kind": "conv", "flops": 2.0e7, "input_elems": 9216,
                     "output_elems": 4096, "params": 864},
                    {"name": "fc", "kind": "fc", "flops": 8.2e4, "input_elems": 4096,
                     "output_elems": 10, "params": 40970},
                ],
                "edges": [{"src": "conv", "dst": "fc"}],
            }
        },
        "workload": [
            {"app": "camera", "model": "tiny", "source": "phone",
             "arrival": {"process": "poisson", "rate_hz": rate_hz}}
        ],
        "placement": {"policy": "offload", "node": "edge", "unit": "gpu"},
    }  # fmt: skip


def measure(devices: int, duration_s: float, rate_hz: float) -> dict:
    """Time one ``socsim run --trace none`` of the fleet scenario in a child process."""
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(yaml.safe_dump(fleet_document(devices, duration_s, rate_hz)))
        command = [sys.executable, "-m", "simulator", "run", str(path), "--trace", "none"]
        command += ["-q", "-o", str(Path(tmp) / "out")]
        load_before = os.getloadavg()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - start
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(f"the fleet run failed ({done.returncode}): {done.stderr[-2000:]}")
        summary = json.loads((Path(tmp) / "out" / "summary.json").read_text())
        media = (Path(tmp) / "out" / "media.csv").read_text().splitlines()
    cpu_s = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    airtime = float(media[1].split(",")[-1]) if len(media) > 1 else float("nan")
    return {
        "bench": "fleet",
        "devices": devices,
        "duration_s": duration_s,
        "rate_hz": rate_hz,
        "requests": summary["requests"],
        "completed": summary["completed"],
        "airtime_utilisation": airtime,
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "target_s": TARGET_S,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    parser.add_argument("--rate", type=float, default=1.0, help="requests/s per device")
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()
    record = measure(args.devices, args.duration, args.rate)
    print(
        f"{record['devices']:,} devices x {record['duration_s']:g} s at {record['rate_hz']:g} "
        f"req/s: {record['requests']:,} requests ({record['completed']:,} completed), "
        f"airtime in use {record['airtime_utilisation']:.1%}"
    )
    print(
        f"socsim run --trace none: {record['wall_s']:.1f} s wall, {record['cpu_s']:.1f} s CPU "
        f"(target < {TARGET_S:g} s; load average {record['load_before']:.1f} before, "
        f"{record['load_after']:.1f} after)"
    )
    if args.json:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
