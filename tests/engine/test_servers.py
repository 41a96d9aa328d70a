"""Servers serve queued jobs smallest key first; only a FailingServer can go down.

Hand numbers: jobs are (key, duration s); a one-worker server starts the next job when
the previous one ends, a two-worker server runs two at once. A FailingServer that fails
cuts the job in service (never finished), drops its queue, holds what is submitted
while down and serves it, in key order, from its recovery.
"""

from __future__ import annotations

import simpy

from simulator.engine.clock import after
from simulator.engine.servers import FailingServer, Server


def serve(server: Server) -> list[tuple[str, float, float]]:
    """(payload, start s, end s) of every job ``server`` finishes, in order."""
    done: list[tuple[str, float, float]] = []
    server.serve_with(lambda _payload, _t: None, lambda p, a, b: done.append((p, a, b)))
    return done


def test_jobs_run_smallest_key_first_one_worker_at_a_time():
    env = simpy.Environment()
    server = Server(env, "cpu")
    done = serve(server)
    for key, duration_s, name in ((3, 1.0, "c"), (1, 2.0, "a"), (2, 0.5, "b")):
        server.submit(key, duration_s, name)
    assert server.backlog_s == 3.5
    env.run()
    # all three queued at t = 0 before the worker woke: a (key 1), b, c
    assert done == [("a", 0, 2.0), ("b", 2.0, 2.5), ("c", 2.5, 3.5)]
    assert (server.busy_s, server.jobs_served, server.backlog_s) == (3.5, 3, 0.0)
    assert not hasattr(server, "down") and not hasattr(server, "fail")


def test_two_workers_serve_two_jobs_at_once():
    env = simpy.Environment()
    server = Server(env, "cluster", workers=2)
    done = serve(server)
    for key, duration_s in ((1, 1.0), (2, 3.0), (3, 1.0)):
        server.submit(key, duration_s, str(key))
    env.run()
    assert sorted(done) == [("1", 0, 1.0), ("2", 0, 3.0), ("3", 1.0, 2.0)]
    assert server.busy_s == 5.0


def test_a_failing_server_holds_what_is_submitted_while_down_until_it_recovers():
    env = simpy.Environment()
    server = FailingServer(env, "npu")
    done = serve(server)
    cut: list = []
    server.submit(1, 1.0, "a")  # runs 0 -> 1.0, cut at 0.5
    server.submit(2, 1.0, "queued")  # dropped by the failure
    after(env, 0.5, lambda _e: cut.extend(server.fail()))

    def while_down(_event) -> None:
        assert server.down and server.backlog_s == 0.0
        server.submit(5, 2.0, "late")
        server.submit(4, 1.0, "early")
        server.submit(6, 9.0, "gone")
        assert server.cancel(lambda payload: payload == "gone") == 1
        assert server.backlog_s == 3.0

    after(env, 0.6, while_down)
    after(env, 1.0, lambda _e: server.recover())
    env.run()
    assert cut == [("a", 0, None)]  # (payload, start s, no DRAM stream)
    assert done == [("early", 1.0, 2.0), ("late", 2.0, 4.0)]
    assert (server.jobs_served, server.busy_s, server.backlog_s) == (2, 3.0, 0.0)
