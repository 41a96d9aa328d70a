"""Queueing checks against closed forms (issue 20): M/M/1, M/D/1 and M/M/c (Erlang C).

One unit serves a one-op model whose input starts and whose output ends on the unit's
own node (no transfer), so a request's latency is its sojourn time and the unit's
``queue_wait_mean_s`` its mean wait in queue. Arrivals are Poisson; service is the cost
model's 1 ms (M/D/1) or that mean with an exponential factor (``variation:
{default: {distribution: exponential}}``, M/M/1 and M/M/c). A unit of ``c`` cores with
``cores_per_op: 1`` is one central queue served by ``c`` workers (docs/design.md).

Confidence (why 2 % holds with margin on the seeded runs): the relative error of an
``n``-request mean was measured on independent simulations of the same queues written
from scratch (Lindley's recursion for one server, the Kiefer-Wolfowitz free-times heap
for c servers, numpy exponentials), 60-100 replicates each, started empty as here:

* M/D/1, rho = 0.5, n = 100,000: sd of the mean sojourn 0.43 % (2 % = 4.7 sd);
* M/M/1, rho = 0.2, n = 120,000: sd 0.48 % at 100,000, so 0.43 % (2 % = 4.6 sd);
  M/D/1 at the same load gives 10 % less, so the exponential service is what passes;
* M/M/4, rho = 0.6, n = 150,000: sd of the mean sojourn 0.48 % at 100,000, so 0.39 %
  (2 % = 5.1 sd); the mean wait in queue varies far more (sd 3.1 % at 100,000: most
  requests do not wait), so it is held to 12 % (4.7 sd at 150,000). Four M/M/1 queues
  fed at random would wait 1.5 ms, 8x Erlang C's 0.179 ms: 12 % still tells them apart.

The warm-up bias of an empty start is of the order of the relaxation time over the run,
under 0.1 % here. Each run takes about 1-1.5 s of CPU (trace none).
"""

from __future__ import annotations

import math

from simulator.engine import simulate
from simulator.spec import parse_scenario

SERVICE_S = 1e-3  # 1e6 FLOPs at 1 GFLOP/s on one core


def queue_document(n: int, rate_hz: float, cores: int = 1, service: str = "deterministic"):
    """One unit, one 1 ms op, Poisson arrivals at ``rate_hz``, ``n`` requests."""
    unit = {
        "kind": "cpu",
        "cores": cores,
        "cores_per_op": 1,
        "peak_gflops": {"fp32": 1},
        "efficiency": {"default": 1.0},
        "idle_w": 0.0,
        "active_w": 0.0,
        "variation": {"default": {"distribution": service}},
    }
    return {
        "name": "queue",
        "seed": 20,
        "nodes": {"box": {"role": "device", "units": {"cpu": unit}}},
        "models": {
            "one": {
                "ops": [
                    {"name": "a", "kind": "conv", "flops": 1e6, "input_elems": 1, "output_elems": 1}
                ],
                "edges": [],
            }
        },
        "workload": [
            {
                "app": "app",
                "model": "one",
                "source": "box",
                "arrival": {"process": "poisson", "rate_hz": rate_hz},
                "count": n,
            }
        ],
        "placement": {"policy": "manual", "default": "cpu"},
    }


def run(document):
    result = simulate(parse_scenario(document), trace="none")
    assert result.summary["completed"] == document["workload"][0]["count"]
    return result.summary["latency_mean_s"], float(result.units["queue_wait_mean_s"].iloc[0])


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load ``a = lambda / mu``."""
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) * c / (c - a)
    return tail / (head + tail)


def test_md1_mean_sojourn_is_pollaczek_khinchine():
    rho = 0.5
    sojourn_s, wait_s = run(queue_document(100_000, rho / SERVICE_S))
    expected_s = SERVICE_S + rho * SERVICE_S / (2 * (1 - rho))  # 1.5 ms
    assert abs(sojourn_s / expected_s - 1) < 0.02, sojourn_s / expected_s
    assert math.isclose(sojourn_s - wait_s, SERVICE_S, rel_tol=1e-9)  # service is exact


def test_mm1_mean_sojourn_is_one_over_mu_minus_lambda():
    rho = 0.2
    sojourn_s, _ = run(queue_document(120_000, rho / SERVICE_S, service="exponential"))
    expected_s = SERVICE_S / (1 - rho)  # 1.25 ms; M/D/1 would give 1.125 ms
    assert abs(sojourn_s / expected_s - 1) < 0.02, sojourn_s / expected_s


def test_mmc_central_queue_mean_wait_is_erlang_c():
    c, rho = 4, 0.6
    rate_hz = rho * c / SERVICE_S
    sojourn_s, wait_s = run(queue_document(150_000, rate_hz, cores=c, service="exponential"))
    wait_expected_s = erlang_c(c, rate_hz * SERVICE_S) / (c / SERVICE_S - rate_hz)
    assert math.isclose(wait_expected_s, 1.79402e-4, rel_tol=1e-5)  # C(4, 2.4) = 0.28704
    assert abs(wait_s / wait_expected_s - 1) < 0.12, wait_s / wait_expected_s
    assert abs(sojourn_s / (wait_expected_s + SERVICE_S) - 1) < 0.02
