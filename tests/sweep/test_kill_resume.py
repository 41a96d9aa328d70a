"""A sweep killed with SIGKILL (parent and workers) part-way resumes without losing or
repeating a row, and its table equals an uninterrupted run's (bench/sweep_resume.py at
a small size)."""

from __future__ import annotations

from bench_loader import load_bench

kill_and_resume = load_bench("sweep_resume").kill_and_resume


def test_a_killed_process_sweep_resumes_without_loss_or_duplicates(tmp_path):
    points = 100  # 10 x 10
    figures = kill_and_resume(tmp_path, points, workers=2, kill_at=0.3)
    journal = figures["journal"]
    assert 0 < figures["rows_at_kill"] < points  # killed part-way
    assert journal["complete"] and journal["rows"] == journal["distinct"] == points
    assert figures["tables_equal"] and figures["ok_rows"] == points
