"""The PLOT profiler's in-process training (experiments.lossy_training) is the agents' training:
loss-free, it reaches exactly the accuracy the real PS and workers reach over loopback TCP."""
import pytest

from experiments.lossy_training import TrainSettings, train

ROUNDS = 30


@pytest.mark.parametrize("hole_fill", ["mean-delivered", "previous"])
def test_in_process_training_equals_the_agents_without_loss(agents, tmp_path, hole_fill):
    settings = TrainSettings(hidden=(32, 16), workers=3, batch=64, rounds=ROUNDS, lr=0.1,
                             momentum=0.9, hole_fill=hole_fill)
    model = ("--hidden", "32,16", "--batch", "64", "--seed", "2", "--transport", "tcp",
             "--hole-fill", hole_fill)
    port = agents.free_port()
    ps_log = tmp_path / "ps.jsonl"
    ps = agents.start("hosts.ps", "--workers", "3", "--bind", "127.0.0.1", "--port", str(port),
                      "--rounds", str(ROUNDS), "--lr", "0.1", "--momentum", "0.9",
                      "--log", str(ps_log), *model)
    workers = [agents.start("hosts.worker", "--rank", str(r), "--workers", "3", "--ps",
                            "127.0.0.1", "--ps-port", str(port), "--bind", "127.0.0.1",
                            "--port", "0", *model) for r in range(3)]
    rc, _, err = agents.wait(ps, 120)
    assert rc == 0, err
    for w in workers:
        assert agents.wait(w, 30)[0] == 0
    epochs = [e for e in agents.read_jsonl(ps_log) if e["event"] == "epoch"]
    assert epochs[-1]["round"] == ROUNDS - 1
    ours = train(settings, 2)
    assert ours.accuracy == pytest.approx(epochs[-1]["accuracy"], abs=1e-6)
    assert ours.accuracy > 0.5       # it learned something, so the match is not trivial
