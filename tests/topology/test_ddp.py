"""A PyTorch DDP job trains through gradlane's hook in Mininet: one rank per worker host, gloo's
rendezvous and the gradients both crossing the P4 switches, the DDP server on the PS host."""
from topo import agents
from topo.ddp_summary import rank_result
from topo.summary import render

STEPS = 40


def test_a_ddp_script_trains_through_the_hook_across_the_switches(network):
    session = network("incast", workers=2, background=0, bottleneck_pps=3000)
    result = session.train(rounds=STEPS, workers=2, timeout=400, ddp_script=agents.DDP_EXAMPLE)
    assert result.ok, {n: open(p).read()[-2000:] for n, p in result.logs.items()}
    stats = session.stats()
    text = render(result, stats)
    print(text)
    server = [r for r in result.all_records() if r.get("role") == "ddp-ps"]
    rounds = [r for r in server if r.get("event") == "round"]
    # one exchange per optimizer step, every layer of the model delivered
    assert len(rounds) == STEPS
    start = next(r for r in server if r.get("event") == "start")
    assert start["ranks"] == 2 and len(start["layout"]["names"]) == len(rounds[0]["delivered"])
    # the job's default bound is 10 % over the whole tensor: a small layer may go missing in a
    # step, the tensor as a whole may not (the delivered fractions are means over the ranks)
    sizes = start["layout"]["sizes"]
    bound = max(start["push_bounds"])
    for r in rounds:
        whole = sum(f * n for f, n in zip(r["delivered"], sizes)) / sum(sizes)
        assert whole >= 1.0 - bound - 1e-6, (r["round"], r["delivered"])
    final = rank_result(result)
    assert final is not None and final["steps"] == STEPS
    # 40 steps of the CNN on the digits: well above chance (10 classes)
    assert final["accuracy"] > 0.5, final
    # the gradients crossed the switches as gradlane packets of this job
    assert f"{STEPS} step(s) through gradlane" in text
    # the gradients crossed the switches as gradlane packets of job 1 (the switches classify
    # them by job and layer: counters a plain TCP all-reduce would never touch)
    seen = sum(c["seen"] for st in stats.values() for c in st["classes"] if c["job"] == 1)
    assert seen >= STEPS * 2, stats
