"""One sender's tensor set at a receiver: chunks placed at their offsets, per-layer delivery."""
from __future__ import annotations

import numpy as np

from hosts.errors import PacketError
from hosts.transport.chunking import ChunkPlan


class TensorBuffer:
    """Reassembles the layers of one sender for one round; never accepts a malformed chunk."""

    def __init__(self, plan: ChunkPlan) -> None:
        self.plan = plan
        self.values = [np.zeros(n, dtype=np.float32) for n in plan.layer_sizes]
        self.delivered = [np.zeros(n, dtype=bool) for n in plan.layer_sizes]
        self.chunks = [np.zeros(c, dtype=bool) for c in plan.chunk_counts]
        self.delivered_elems = [0] * plan.num_layers

    def place(self, layer: int, seq: int, offset: int, payload: bytes | memoryview) -> bool:
        """Store one DATA chunk. False if it is a duplicate; PacketError if it does not fit."""
        plan = self.plan
        if layer >= plan.num_layers:
            raise PacketError("corrupt", f"layer {layer} >= {plan.num_layers} layers")
        if seq >= plan.chunk_counts[layer]:
            raise PacketError("corrupt", f"chunk {seq} >= {plan.chunk_counts[layer]} chunks")
        count = plan.length(layer, seq)
        if offset != plan.offset(layer, seq) or len(payload) != 4 * count:
            raise PacketError("corrupt", f"chunk {layer}/{seq} at offset {offset} with "
                                         f"{len(payload)} bytes does not match the plan")
        if self.chunks[layer][seq]:
            return False
        vals = np.frombuffer(payload, dtype=">f4")
        if not np.isfinite(vals).all():
            raise PacketError("nonfinite", f"chunk {layer}/{seq} carries NaN or infinity")
        self.values[layer][offset:offset + count] = vals
        self.delivered[layer][offset:offset + count] = True
        self.chunks[layer][seq] = True
        self.delivered_elems[layer] += count
        return True

    def fraction(self, layer: int) -> float:
        return self.delivered_elems[layer] / self.plan.layer_sizes[layer]

    def fractions(self) -> list[float]:
        return [self.fraction(i) for i in range(self.plan.num_layers)]

    def meets(self, required: tuple[float, ...], scope: str = "layer") -> bool:
        """True when every layer's delivered fraction reached its required fraction (layer
        scope), or (tensor scope) every layer required whole is complete and the others
        together miss no more elements than their budgets added up."""
        sizes = self.plan.layer_sizes
        if scope == "layer":
            return all(self.delivered_elems[i] >= required[i] * n - 1e-9
                       for i, n in enumerate(sizes))
        pooled_need = pooled_have = 0.0
        for i, n in enumerate(sizes):
            if required[i] >= 1.0:
                if self.delivered_elems[i] < n:
                    return False
            else:
                pooled_need += required[i] * n
                pooled_have += self.delivered_elems[i]
        return pooled_have >= pooled_need - 1e-9

    def complete(self) -> bool:
        return all(d == n for d, n in zip(self.delivered_elems, self.plan.layer_sizes))
