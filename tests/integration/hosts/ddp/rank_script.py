"""A DDP rank for the hook's fault tests (run by the tests as a script, not collected):
  layout   rank 1's model is wider than rank 0's: it registers a layout the server does not expect
  foreign  the hook's state is made for a smaller model than the one DDP buckets
  leave    rank 1 exits without a goodbye after LEAVE_AFTER steps
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from hosts.ddp import hook as gradlane
from hosts.training.models import ModelSpec

LEAVE_AFTER = 3

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
data = ModelSpec("torch-mlp").load_data(1)
wide = mode == "layout" and rank == 1
module = ModelSpec("torch-mlp", hidden=(32 if wide else 16,)).module(64, 10, 1)
if mode == "foreign":
    state = gradlane.GradlaneHook(ModelSpec("torch-mlp", hidden=(8,)).module(64, 10, 1))
    model = DDP(module)
    model.register_comm_hook(state, gradlane.gradlane_hook)
else:
    state = gradlane.GradlaneHook(module)   # registers (before DDP checks shapes across ranks)
    model = DDP(module)
    model.register_comm_hook(state, gradlane.gradlane_hook)
x, y = torch.from_numpy(data.x_train[:32]), torch.from_numpy(data.y_train[:32])
for step in range(50):
    if mode == "leave" and rank == 1 and step == LEAVE_AFTER:
        os._exit(3)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
state.close()
dist.destroy_process_group()
