"""SqueezeNet 1.0 against torchvision's squeezenet1_0 (shapes hand-computed)."""

from simulator.graph import build_zoo_model


def test_pool_outputs_follow_torchvision_ceil_mode():
    # 224 -> conv 7x7/2 -> 109 -> pool (ceil) 54 -> fire2-4 (256 ch) -> pool 27
    # -> fire5-8 (512 ch) -> pool 13 -> fire9 -> conv10 (1000 ch, 13 x 13)
    graph = build_zoo_model("squeezenet")
    assert graph.op("pool1").output_elems == 96 * 54 * 54
    assert graph.op("pool4").output_elems == 256 * 27 * 27
    assert graph.op("pool8").output_elems == 512 * 13 * 13
    assert graph.op("conv10").output_elems == 1000 * 13 * 13
    # fire2: squeeze 96->16 (1x1, bias), expand 16->64 (1x1) and 16->64 (3x3)
    assert graph.op("fire2.squeeze").params == 96 * 16 + 16
    assert graph.op("fire2.expand3x3").params == 16 * 64 * 9 + 64
    assert graph.op("fire2.concat").output_elems == 128 * 54 * 54


def test_fire_is_a_dag_not_a_chain():
    graph = build_zoo_model("squeezenet")
    assert not graph.is_chain()
    assert sorted(graph.predecessors("fire2.concat")) == [
        "fire2.expand1x1_relu",
        "fire2.expand3x3_relu",
    ]
