"""The default chunk size: a DATA packet fills the MTU, unless a loss bound is too small for
such a chunk to go missing; then the layers concerned alone are cut finer.

A bound acts in whole chunks: a receiver may close with a chunk missing only when the bound
covers every element of it. A packet-counting bottleneck (BMv2's queue rate is in packets per
second) carries a full packet's worth of gradient for the price of any packet, so the default
chunk is MTU_CHUNK_ELEMS float32 (1500-byte IPv4 datagram). A small layer's bound may then
cover less than one chunk: in layer scope that layer's transfer would run reliable, in tensor
scope (the budgets pooled) the whole tensor's would. Such a layer gets chunks of as many
elements as the bound covers, no fewer than MIN_CHUNK_ELEMS (a payload at least as large as
the packet's own headers); a bound covering fewer elements than that cannot act at any useful
size, and its layer keeps MTU chunks (bounds.sub_chunk_notes reports the stage as reliable).

Sized from the push bounds in force when the job starts (the flags, or the controller's policy
at round 0): the pull's bound, tighter by design (a quarter of the push's by default), would
cut chunks several times finer for every round's pull. Later policy generations do not re-cut.
"""
from __future__ import annotations

from dataclasses import dataclass

from hosts import wire

MTU_CHUNK_ELEMS = wire.MAX_DATA_PAYLOAD // 4            # 360: 1500 - IPv4 20 - UDP 8 - header 32
PACKET_HEADERS = 20 + 8 + wire.HEADER_LEN               # bytes of headers in every DATA packet
MIN_CHUNK_ELEMS = -(-PACKET_HEADERS // 4)                # 15 float32: payload >= headers


@dataclass(frozen=True)
class ChunkSizes:
    """Per layer the chunk size in float32 elements, and one line per layer cut finer (why)."""

    per_layer: tuple[int, ...]
    reasons: tuple[str, ...]

    def describe(self) -> str:
        """One line for a run's summary: the size, and why any layer differs."""
        base = max(self.per_layer)
        text = f"{base} float32 per DATA packet (fills the MTU)"
        if self.reasons:
            text += "; " + "; ".join(self.reasons)
        return text


def default_chunk_sizes(layer_sizes: list[int], push_bounds: tuple[float, ...] | list[float],
                        scope: str, limit: int = MTU_CHUNK_ELEMS) -> ChunkSizes:
    """The chunk size of every layer (module docstring): `limit` elements, finer where the
    push bound in `scope` ('layer' or 'tensor') covers less than one such chunk."""
    sizes = [limit] * len(layer_sizes)
    reasons: list[str] = []
    whole = [min(limit, n) for n in layer_sizes]          # the largest chunk a layer can have
    if scope == "tensor":
        open_layers = [i for i, b in enumerate(push_bounds) if b > 0.0]
        pooled = int(sum(push_bounds[i] * layer_sizes[i] for i in open_layers))
        finer = [i for i in open_layers if whole[i] > pooled]
        if finer and pooled >= MIN_CHUNK_ELEMS:
            for i in finer:
                sizes[i] = pooled
            reasons.append(f"layers {_names(finer)}: {pooled} (the pooled bound covers "
                           f"{pooled} elements, less than one {limit}-element chunk)")
        return ChunkSizes(tuple(sizes), tuple(reasons))
    for i, (n, b) in enumerate(zip(layer_sizes, push_bounds)):
        covered = int(b * n)
        if b > 0.0 and covered < whole[i] and covered >= MIN_CHUNK_ELEMS:
            sizes[i] = covered
            reasons.append(f"layer {i}: {covered} (its bound covers {covered} of {n} elements)")
    return ChunkSizes(tuple(sizes), tuple(reasons))


def _names(layers: list[int]) -> str:
    return ",".join(str(i) for i in layers)
