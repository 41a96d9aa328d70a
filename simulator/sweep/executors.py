"""Sweep executors: who runs the batches of a sweep (a registry, like the placement policies).

An executor is ``execute(work, batches, **options) -> iterator of row lists``: it calls the
picklable top-level ``work(batch)`` on every batch and yields each result as it arrives, in
any order (the store sorts the table). Whatever the executor, the rows are the same: each
task carries its own seed, so results do not depend on which process ran it, or when.
``batches`` is sized but made one batch at a time: an executor keeps a few batches per
worker in flight (:data:`IN_FLIGHT_PER_WORKER`), never the whole sweep.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from simulator.registry import Registry
from simulator.schema import Boolean, Field, Number, Record, Text

Batch = list[Any]
Work = Callable[[Batch], list[dict]]
#: batches submitted per worker and not yet collected: what the parent and the queues hold
IN_FLIGHT_PER_WORKER = 2
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
Executor = Callable[..., Iterator[list[dict]]]

EXECUTORS: Registry[Executor] = Registry("sweep executor", "socsim.executors")

_WORKERS = Field(
    Number(integer=True, ge=1), default=None, doc="worker processes (default: every core)"
)


def default_workers() -> int:
    """Cores this process may use (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker when the sweep's process dies, even by SIGKILL.

    On Linux the kernel sends SIGKILL when the parent ends (``prctl(PR_SET_PDEATHSIG)``);
    a parent that died before that call is caught by comparing ``getppid()``. Elsewhere
    workers notice only when they next talk to the pool (docs/sweeps.md).
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc symbol: the getppid check still holds
            pass
    if os.getppid() != parent_pid:
        os._exit(1)  # orphaned before the kernel could be told


def bounded(
    submit: Callable[[Batch], Any],
    batches: Iterable[Batch],
    limit: int,
    wait_first: Callable[[set], tuple[set, set]],
) -> Iterator[Any]:
    """Submit ``batches`` keeping at most ``limit`` futures in flight; yield each finished
    future (``wait_first(futures) -> (done, not done)``)."""
    running: set = set()
    for batch in batches:
        running.add(submit(batch))
        if len(running) >= limit:
            done, running = wait_first(running)
            yield from done
    while running:
        done, running = wait_first(running)
        yield from done


@EXECUTORS.register("serial", Record({}, name="serial executor options"))
def serial(work: Work, batches: Iterable[Batch], **_: Any) -> Iterator[list[dict]]:
    """One batch after the other in this process (debugging, profiling, tiny sweeps)."""
    for batch in batches:
        yield work(batch)


@EXECUTORS.register(
    "processes",
    Record(
        {
            "workers": _WORKERS,
            "start_method": Field(
                Text(choices=("fork", "spawn", "forkserver")),
                default=None,
                doc="how workers start (default: the platform's; spawn: fresh interpreters, "
                "as on macOS and Windows)",
            ),
        },
        name="processes executor options",
    ),
)
def processes(
    work: Work,
    batches: Collection[Batch],
    workers: int | None = None,
    start_method: str | None = None,
    **_: Any,
) -> Iterator[list[dict]]:
    """Local worker processes (``concurrent.futures``), all cores by default.

    The workers die with this process (:func:`die_with_parent`)."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    count = min(workers or default_workers(), max(len(batches), 1))
    # the platform's start method by default: fork on Linux (workers start without
    # re-importing numpy, pandas and the simulator, seconds each on a loaded machine);
    # spawn on macOS and Windows, which the top-level ``work`` functions are written for
    # (a spawned worker loads the plug-ins itself: docs/plugins.md)
    context = multiprocessing.get_context(start_method)
    pool = ProcessPoolExecutor(
        count, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),)
    )
    try:
        limit = IN_FLIGHT_PER_WORKER * count

        def submit(batch: Batch) -> Future:
            return pool.submit(work, batch)

        first = functools.partial(wait, return_when=FIRST_COMPLETED)
        for future in bounded(submit, batches, limit, first):
            yield future.result()
    finally:  # also on KeyboardInterrupt or a consumer that stops early
        pool.shutdown(wait=True, cancel_futures=True)


#: Seconds to wait for a dask scheduler to answer before giving up with a clear error
#: (distributed's own default is 30 s, then a bare OSError).
SCHEDULER_TIMEOUT_S = 5.0


@EXECUTORS.register(
    "dask",
    Record(
        {
            "scheduler": Field(
                Text(),
                default=None,
                doc="a running scheduler, e.g. tcp://host:8786 (default: a LocalCluster)",
            ),
            "workers": _WORKERS,
            "processes": Field(
                Boolean(),
                default=True,
                doc="LocalCluster workers are processes (false: threads of this process)",
            ),
        },
        name="dask executor options",
    ),
)
def dask(
    work: Work,
    batches: Collection[Batch],
    scheduler: str | None = None,
    workers: int | None = None,
    processes: bool = True,
    **_: Any,
) -> Iterator[list[dict]]:
    """Dask distributed: a running scheduler's workers, or a LocalCluster of processes."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        from simulator.errors import SocsimError

        raise SocsimError(
            "the dask executor needs dask.distributed: pip install 'socsim[distributed]'"
        ) from None
    cluster = None
    if scheduler is None:
        count = min(workers or default_workers(), max(len(batches), 1))
        cluster = LocalCluster(
            n_workers=count, threads_per_worker=1, processes=processes, dashboard_address=None
        )
    try:
        client = Client(scheduler or cluster, timeout=SCHEDULER_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:  # distributed raises OSError after `timeout`
        if cluster is not None:
            cluster.close()
        from simulator.errors import SocsimError

        raise SocsimError(
            f"cannot reach the dask scheduler {scheduler or 'of the local cluster'} within "
            f"{SCHEDULER_TIMEOUT_S:g} s ({exc}); check the address (tcp://host:8786) and "
            "that the scheduler runs"
        ) from None
    try:
        limit = IN_FLIGHT_PER_WORKER * max(len(client.scheduler_info()["workers"]), 1)
        # pure=False: two batches never share a key, whatever their contents
        submit = functools.partial(client.submit, work, pure=False)

        def first(running: set) -> tuple[set, set]:
            done = next(as_completed(running))
            return {done}, running - {done}

        for future in bounded(submit, batches, limit, first):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
