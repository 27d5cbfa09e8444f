"""Training over a Mininet path with injected loss (user-space, in the embedded switch, since
this kernel has no netem) reaches an accuracy within 2 points of the same job on a loss-free path,
and every round closed by its bound got at least (1 - bound) of the whole gradient."""
from topo.agents import RELIABLE_FLAGS
from topo.summary import final_accuracy, rounds_completed, tensor_delivery

# Six epochs: at two (40 rounds) the model was still climbing. The loss-free arm is the
# reliable reference (topo.agents.RELIABLE_FLAGS): nothing may go missing, so with --seed 1 it
# ends at the same accuracy in every run (0.958217, on loopback as in Mininet; docs/faults.md,
# "Repeatable accuracy"). The lossy arm follows the default policy, which lets switches drop up
# to 10 % of the tensor and closes rounds by that bound: which chunks miss depends on timing.
# On loopback (timing alone) 5 runs ended at most 0.84 points below the reference; in Mininet
# the switches' queue-dependent drops add more (a loss-free run of the policy arm ended 1.1
# points below it), so the bar stays at 2 points: a broken hole filling or bound costs far more.
ROUNDS = 120
MAX_ACCURACY_GAP = 0.02


def _train(network, loss_pct: float, flags: tuple[str, ...] = ()):
    session = network("incast", workers=2, background=0, bottleneck_pps=2000, loss_pct=loss_pct)
    try:
        result = session.train(rounds=ROUNDS, workers=2, timeout=400, extra_ps=flags,
                               extra_worker=flags)
        assert result.ok, {name: open(path).read()[-1500:] for name, path in result.logs.items()}
        return result, session.impairment_lines
    finally:
        session.stop()


def test_lossy_path_trains_within_two_points_of_the_loss_free_reference(network):
    clean, _ = _train(network, 0.0, RELIABLE_FLAGS)
    lossy, impairments = _train(network, 3.0)
    assert any("loss" in line for line in impairments), impairments
    assert rounds_completed(clean) >= ROUNDS and rounds_completed(lossy) >= ROUNDS
    acc_clean, acc_lossy = final_accuracy(clean), final_accuracy(lossy)
    print(f"accuracy loss-free {acc_clean:.4f}, with 3 % loss {acc_lossy:.4f}")
    assert acc_lossy >= acc_clean - MAX_ACCURACY_GAP, (acc_clean, acc_lossy)
    tensor = tensor_delivery(lossy)     # one bound over the tensor, the agents' default scope
    assert tensor is not None and tensor["min"] >= 1 - tensor["bound"] - 1e-6, tensor
