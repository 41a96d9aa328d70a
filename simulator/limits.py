"""The stated bounds on what a scenario may ask for (docs/security.md lists them with the
memory measured at each).

A scenario of a few hundred bytes could otherwise ask for an unbounded run: 10^12
requests, a horizon where simulated time no longer advances in float64, one SimPy process
per core of a 10^7-core unit, or integers that overflow the int64 columns of the result
tables. Each bound is checked at validation (the schema, or the loader for bounds across
keys), so the error names the YAML path and the limit before anything is built or run.
"""

from __future__ import annotations

#: Integers are stored as int64 in every result table (and numpy seeds them as such).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: Longest simulated horizon, s (46 days). At 2^22 s, float64 time has a resolution of
#: 2^-30 s (0.93 ns), so every step of 1 ns or more still advances the clock; beyond it,
#: short ops and transfer steps would be rounded away (and at 1e17 s, 1 s is).
MAX_HORIZON_S = 4.0e6
#: Shortest period between arrivals, s (1 ns: above float64 resolution at the horizon, so
#: ``now + dt > now`` always holds; a 1 GHz request rate is beyond any serving system).
MIN_PERIOD_S = 1e-9
#: Shortest hold of a random bandwidth draw and shortest governor window, s (0.1 ms: a 5G
#: NR slot at 120 kHz spacing is 0.125 ms [R]; Linux cpufreq governors sample every few
#: ms [R]). Each hold or window is an event for as long as the run lasts.
MIN_HOLD_S = 1e-4

#: Most requests in one run, all apps together (a 30 Hz camera for 9.3 hours; a sweep
#: runs longer workloads as several points). Closed-loop apps bounded only by a duration
#: are held to it while running.
MAX_REQUESTS = 1_000_000
#: Most requests one closed-loop app may issue at one simulated instant: a request that
#: ends the moment it is issued (dropped at once, e.g. its unit is down and the app's
#: on_failure is drop) is issued again at once, for ever (a concurrency of MAX_CONCURRENCY
#: re-issuing once each stays below it).
MAX_SAME_INSTANT_REQUESTS = 100_000
#: Most closed-loop clients in flight (C10k: ten thousand concurrent clients, the classic
#: server scale); each holds a request record from t = 0.
MAX_CONCURRENCY = 10_000

#: Most cores of one compute unit. The largest CPU cluster modelled as one unit is a
#: two-socket AMD EPYC 9965 server, 2 x 192 cores, 768 threads [R]; GPUs, DSPs and NPUs
#: are one core with their whole-unit peak (docs/scenario-format.md). Each core slot is a
#: SimPy process when ``cores_per_op`` is 1.
MAX_CORES = 1024

#: Most rows of a bandwidth trace (inline or CSV): a 1 ms trace of 16.7 minutes.
MAX_TRACE_ROWS = 1_000_000
#: Most outages of one link.
MAX_OUTAGES = 100_000
#: Most ops of an inline model (ONNX exports of 7B-parameter LLMs have ~10^4 nodes [R]).
MAX_INLINE_OPS = 50_000
#: Most edges of an inline model.
MAX_INLINE_EDGES = 200_000

#: Thermal resistance to ambient, K/W: 1e-3 is 20x below a liquid-cooled 1 kW accelerator
#: (~0.02 K/W [R]); 1e4 is 40x above a small IC package in still air (~250 K/W [R]).
THERMAL_R_K_PER_W = (1e-3, 1e4)
#: Heat capacity, J/K: 1e-4 is a 0.06 mm^3 silicon die (1.63 J/(cm^3 K) [R]); 1e7 is ten
#: tonnes of aluminium (0.9 J/(g K) [R]). With R, tau = R C stays within [1e-7, 1e11] s.
THERMAL_C_J_PER_K = (1e-4, 1e7)

#: Most power of one unit, radio or node part, W: a GB200 NVL72 rack draws ~120 kW [R];
#: 1 MW is eight of them. Beyond it, temperatures and battery drain overflow the float
#: arithmetic of the thermal and battery models.
MAX_POWER_W = 1e6
#: Largest coefficient of variation of a random bandwidth: measured cellular throughput
#: varies by a CV of about 0.1-1.5 [R]; its square enters the samplers' parameters.
MAX_CV = 100.0
#: Slowest link, bit/s: LoRa's slowest rate is ~250 bit/s [R]. A slower link makes a
#: transfer outlast the horizon while its hold or window events keep firing.
MIN_BANDWIDTH_BPS = 100.0
#: Most elements in one tensor, ONNX or inline (``params``, ``*_elems``): 2^48 ≈ 2.8e14
#: is 1 PiB at fp32, far beyond any device's memory; byte counts and FLOPs derived from
#: it stay exact in float64 and within int64.
MAX_TENSOR_ELEMENTS = 2**48

#: Most members of one fleet (``nodes.<name>.fleet.count``): each member is a node, its
#: apps and links; 100 k phones on one access point is past any real cell's attach limit.
MAX_FLEET_COUNT = 100_000
