"""A short training job over the network converges (PS + workers on Mininet hosts)."""
from topo.summary import deadline_rounds, final_accuracy, per_layer, rounds_completed

ROUNDS = 30


def test_short_training_converges(network):
    session = network("incast", workers=2, background=0, bottleneck_pps=2000)
    result = session.train(rounds=ROUNDS, workers=2, timeout=400)
    assert result.ok, {name: open(path).read()[-1500:] for name, path in result.logs.items()}
    assert rounds_completed(result) >= ROUNDS
    accuracy = final_accuracy(result)
    assert accuracy is not None and accuracy >= 0.8, f"accuracy {accuracy}"
    layers = per_layer(result)
    assert layers, "the PS reported no per-layer delivery"
    for layer, row in layers.items():
        # Rounds closed by the bound delivered at least 1 - bound of every layer (a deadline
        # close may deliver less, by design; those must stay the exception).
        assert row["min"] >= 1 - row["bound"] - 1e-9, f"layer {layer}: {row}"
    assert deadline_rounds(result) <= ROUNDS // 3
