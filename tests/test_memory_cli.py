"""``socsim validate`` and ``run`` flag weights that do not fit a phone's memory pool: 8 GB
of fp32 weights (a 40-layer d2048 encoder: 40 × 50,358,272 params × 4 B = 8.057 GB) on the
Pixel 4 preset's 6.442 GB (6 GiB) of RAM, at the placement's YAML path, with the fix."""

from __future__ import annotations

from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID

SCENARIO = """\
name: too_big
include: [preset:pixel4]
nodes:
  phone: {preset: pixel4}
models:
  llm: {zoo: transformer_encoder, dtype: fp32,
        options: {layers: 40, d_model: 2048, heads: 16, d_ff: 8192, seq_len: 8}}
workload:
  - app: chat
    model: llm
    source: phone
    arrival: {process: periodic, period_ms: 1000}
    count: 1
    placement: {policy: single, unit: cpu}
"""


def test_weights_beyond_the_phone_ram_are_flagged_by_validate_and_run(tmp_path, capsys):
    path = tmp_path / "too_big.yaml"
    path.write_text(SCENARIO)
    expected = (
        "workload[0].placement: app 'chat': 8.057 GB of weights on node 'phone' do not fit "
        "its 6.442 GB memory pool (memory_gb; weights by app: 'chat' 8.057 GB); fix: place "
        "fewer ops on 'phone'"
    )
    assert main(["validate", str(path)]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert expected in captured.out + captured.err
    assert f"{path}:14" in captured.out + captured.err  # the placement's line
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert expected in captured.err
    # memory_policy: allow runs it, and the units table shows the weights
    path.write_text(SCENARIO.replace("{preset: pixel4}", "{preset: pixel4, memory_policy: allow}"))
    assert main(["validate", str(path)]) == 0


def test_an_app_with_two_placements_on_the_node_is_named_per_replica(tmp_path, capsys):
    """Each replica's plan holds its weights: the message tells them apart."""
    two = SCENARIO.replace(
        "    placement: {policy: single, unit: cpu}\n",
        "    replicas: [{policy: single, unit: cpu}, {policy: fallback, preferred: gpu}]\n",
    )
    path = tmp_path / "two.yaml"
    path.write_text(two)
    assert main(["validate", str(path)]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert (
        "16.11 GB of weights on node 'phone' do not fit its 6.442 GB memory pool (memory_gb; "
        "weights by app: 'chat' replica 0 8.057 GB, 'chat' replica 1 8.057 GB)"
    ) in captured.out + captured.err
