"""A plain PyTorch DDP script that trains over gradlane when launched with its launcher:

    python -m hosts.ddp.launch --ranks 2 -- examples/ddp_digits.py
    python -m hosts.ddp.launch --ranks 2 --backend gloo -- examples/ddp_digits.py   # baseline

Prints (rank 0) one JSON line: steps taken, final test accuracy, what gradlane delivered.
"""
import argparse
import json

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from hosts.ddp import hook as gradlane
from hosts.training.models import ModelSpec

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="torch-cnn")
ap.add_argument("--steps", type=int, default=150)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--lr", type=float, default=0.05)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
spec = ModelSpec(args.model)
data = spec.load_data(args.seed)                       # the digits (or generated sequences)
model = DDP(spec.module(data.num_features, data.num_classes, args.seed))
state = gradlane.register(model) if gradlane.configured() else None   # the one line
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

x, y = torch.from_numpy(data.x_train[rank::world]), torch.from_numpy(data.y_train[rank::world])
order = torch.Generator().manual_seed(args.seed + rank)
for step in range(args.steps):
    idx = torch.randint(len(y), (args.batch,), generator=order)
    loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
    optimizer.zero_grad()
    loss.backward()                                    # the hook runs here
    optimizer.step()

if state is not None:
    state.close()
if rank == 0:
    with torch.no_grad():
        logits = model.module(torch.from_numpy(data.x_test))
    accuracy = (logits.argmax(1) == torch.from_numpy(data.y_test)).float().mean().item()
    print(json.dumps({"steps": args.steps, "accuracy": round(accuracy, 4),
                      "gradlane": state.summary() if state else None}), flush=True)
dist.destroy_process_group()
