"""A PyTorch DDP job on a running network: the gradients of a plain DDP script cross the P4
switches through gradlane's communication hook.

The job's PS host runs `hosts.ddp.server`; each worker host runs one rank of the script (by
default `examples/ddp_digits.py`) with torch.distributed's environment: the rendezvous at rank
0's host, gloo bound to each host's own interface. gloo's own traffic (start-up, bucketing)
crosses the switches as plain TCP; every step's gradients go to the server over the job's
transport (its bounds, priorities by layer and magnitude, the switches' selective drop) and
come back averaged. Same lifecycle as `TrainingJob` (start, wait, stop by PID); the server's
JSON lines and rank 0's result line are the job's records.
"""
from __future__ import annotations

import json
import os

from topo import agents
from topo.processes import ManagedProcess
from topo.training import TrainingJob

# The server logs "listening" once its control port is bound: ranks may register from then on.
_LISTENING = r'^\{.*"event":\s*"listening".*$'
_LISTEN_TIMEOUT_S = 60.0


class DdpJob(TrainingJob):
    """`TrainingJob` whose agents are the DDP server and the ranks of `job.ddp_script`."""

    def start(self) -> None:
        """Start the server on the PS host, then one rank per worker host."""
        agents.require(agents.DDP_SERVER_MODULE, "the DDP parameter server")
        ps, workers = self.hosts()
        for name in (ps, *workers):
            self.set_sysctls(name)
        ps_ip = self.topo.hosts[ps].ip
        key_file = self.new_key_file()
        server = ManagedProcess(f"ps@{ps}", "agent", agents.ddp_server_argv(self.job, key_file, ps_ip),
                                self.log_dir / f"job{self.job.job_id}.ddp-server.log", self.record,
                                self.net.get(ps))
        self.processes[ps] = server.start()
        listening = server.wait_for_line(_LISTENING, _LISTEN_TIMEOUT_S, "DDP server listening")
        control_port = int(json.loads(listening.group(0))["control_port"])
        master_ip = self.topo.hosts[workers[0]].ip
        for rank, name in enumerate(workers):
            node = self.net.get(name)
            env = dict(os.environ, **agents.ddp_rank_env(self.job, rank, master_ip, node.defaultIntf().name,
                                                         f"{ps_ip}:{control_port}", key_file))
            proc = ManagedProcess(f"rank{rank}@{name}", "agent", agents.ddp_rank_argv(self.job),
                                  self.log_dir / f"job{self.job.job_id}.rank{rank}.log", self.record,
                                  node, env=env)
            self.processes[name] = proc.start()

