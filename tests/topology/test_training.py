"""A short training job over the network converges (PS + workers on Mininet hosts)."""
from topo.summary import (deadline_rounds, final_accuracy, per_layer, rounds_completed,
                          tensor_delivery)

ROUNDS = 30


def test_short_training_converges(network):
    session = network("incast", workers=2, background=0, bottleneck_pps=2000)
    result = session.train(rounds=ROUNDS, workers=2, timeout=400)
    assert result.ok, {name: open(path).read()[-1500:] for name, path in result.logs.items()}
    assert rounds_completed(result) >= ROUNDS
    accuracy = final_accuracy(result)
    assert accuracy is not None and accuracy >= 0.8, f"accuracy {accuracy}"
    assert per_layer(result), "the PS reported no per-layer delivery"
    # Rounds closed by the bound delivered at least 1 - bound of the whole tensor (one bound
    # over all layers, the agents' default; a deadline close may deliver less, by design;
    # those must stay the exception).
    tensor = tensor_delivery(result)
    assert tensor is not None and tensor["min"] >= 1 - tensor["bound"] - 1e-6, tensor
    assert deadline_rounds(result) <= ROUNDS // 3
