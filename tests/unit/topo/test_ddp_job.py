"""A DDP job's command lines and environment (topo.agents) and its summary (topo.ddp_summary)."""
import shlex

from hosts.ddp.flags import FLAGS_ENV, PS_ENV, parse_flags
from topo import agents
from topo.ddp_summary import is_ddp, rank_result, render_ddp
from topo.summary import render
from topo.training import TrainingResult, json_lines

JOB = agents.JobSpec(job_id=2, rounds=30, workers=3, extra_ps=("--transport", "ltp", "--bound", "0.05"),
                     extra_worker=("--transport", "ltp", "--bound", "0.05", "--pace-pps", "900"),
                     ddp_script=agents.DDP_EXAMPLE, ddp_model="resnet")


def test_server_and_rank_command_lines():
    server = agents.ddp_server_argv(JOB, "/run/job2.key", "10.0.0.10")
    assert server[server.index("-m") + 1] == agents.DDP_SERVER_MODULE
    assert server[server.index("--ranks") + 1] == "3" and server[server.index("--bind") + 1] == "10.0.0.10"
    assert server[server.index("--job") + 1] == "2" and server[-2:] == ["--bound", "0.05"]
    rank = agents.ddp_rank_argv(JOB)
    assert rank[2] == agents.DDP_EXAMPLE and rank[3:] == ["--steps", "30", "--model", "resnet"]


def test_rank_environment_is_what_torch_and_the_hook_read():
    env = agents.ddp_rank_env(JOB, 1, "10.0.0.1", "w2-eth0", "10.0.0.10:19528", "/run/job2.key")
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("1", "3", "0")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("10.0.0.1", str(agents.DDP_MASTER_PORT))
    assert env["GLOO_SOCKET_IFNAME"] == "w2-eth0" and env[PS_ENV] == "10.0.0.10:19528"
    flags = parse_flags(env[FLAGS_ENV])     # the hook parses exactly this
    assert flags.job == 2 and flags.job_key == "/run/job2.key" and flags.pace_pps == 900
    assert shlex.split(env[FLAGS_ENV])[:4] == ["--job", "2", "--job-key", "/run/job2.key"]


def _ddp_result(ok: bool = True) -> TrainingResult:
    server = json_lines(
        '{"event":"listening","role":"ddp-ps","control_port":19528,"ranks":2}\n'
        '{"event":"start","role":"ddp-ps","ranks":2,"layout":{"names":["conv.weight","fc.bias"],'
        '"sizes":[288,10]},"push_bounds":[0.1,0.0],"config":{"transport":"ltp","chunking":"360 float32 '
        'per DATA packet","pull":"reliable","hole_fill":"mean-delivered"}}\n'
        '{"event":"round","role":"ddp-ps","round":0,"push_s":0.02,"pull_s":0.01,"delivered":[0.9,1.0],'
        '"closed_by":["bound"]}\n'
        '{"event":"round","role":"ddp-ps","round":1,"push_s":0.04,"pull_s":0.03,"delivered":[1.0,1.0],'
        '"closed_by":["complete"]}\n')
    rank0 = json_lines('{"steps": 2, "accuracy": 0.61, "gradlane": null}\n')
    codes = {"ps@ps": 0, "rank0@w1": 0, "rank1@w2": 0 if ok else 1}
    return TrainingResult(codes, {"ps@ps": server, "rank0@w1": rank0, "rank1@w2": []},
                          {n: f"logs/{n}" for n in codes}, 4.5)


def test_summary_names_layers_steps_and_accuracy():
    result = _ddp_result()
    assert is_ddp(result) and rank_result(result)["accuracy"] == 0.61
    text = render_ddp(result)
    assert "DDP training: finished in 4.5 s, 2 step(s) through gradlane" in text
    assert "per step: push 30.0 ms, pull 20.0 ms" in text
    assert "  conv.weight: 0.900 / 0.950   bound 0.100" in text and "  fc.bias: 1.000 / 1.000   bound 0.000" in text
    assert "steps closed by: bound 1, complete 1" in text and "accuracy (rank 0, test set): 0.61" in text
    # the common render dispatches to it, with the switches' counters below
    assert render(result, None).startswith(text) and "switch statistics: n/a" in render(result, None)


def test_summary_names_a_failed_rank():
    text = render_ddp(_ddp_result(ok=False))
    assert text.startswith("DDP training: FAILED") and "rank1@w2: exit code 1 (log logs/rank1@w2)" in text
