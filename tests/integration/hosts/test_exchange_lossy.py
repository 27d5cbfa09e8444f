"""A tensor exchange between real processes through a user-space lossy relay on loopback."""
import time

import pytest

from hosts import wire
from hosts.lossy_relay import LossyRelay

LAYERS = "4160,650"
# The chunking these tests were written for (65 + 11 chunks), on both sides: without the flag
# the default chunks depend on each side's bounds, and here the sides' bound flags differ.
CHUNKS = ("--chunk-elems", "64")


def _exchange(agents, tmp_path, loss, rounds, recv_flags, send_flags, blackhole=None):
    port = agents.free_port()
    rlog, slog = tmp_path / "recv.jsonl", tmp_path / "send.jsonl"
    recv = agents.start("hosts.tensor_exchange", "recv", "--bind", "127.0.0.1", "--port", str(port),
                        "--layers", LAYERS, "--rounds", str(rounds), "--log", str(rlog), *CHUNKS,
                        *recv_flags)
    end = time.monotonic() + 30      # start sending once the receiver listens
    while time.monotonic() < end and "listening" not in (rlog.read_text() if rlog.exists() else ""):
        time.sleep(0.05)
    with LossyRelay(("127.0.0.1", 0), ("127.0.0.1", port), loss, seed=5,
                    blackhole=blackhole) as relay:
        send = agents.start("hosts.tensor_exchange", "send", "--to",
                            f"127.0.0.1:{relay.address[1]}", "--bind", "127.0.0.1",
                            "--layers", LAYERS, "--rounds", str(rounds), "--log", str(slog),
                            *CHUNKS, *send_flags)
        s_rc, _, s_err = agents.wait(send, 60)
        r_rc, _, r_err = agents.wait(recv, 60)
        dropped = relay.counters["dropped_up"]
    assert (s_rc, r_rc) == (0, 0), s_err + r_err
    recv_rounds = [e for e in agents.read_jsonl(rlog) if e["event"] == "round"]
    send_rounds = [e for e in agents.read_jsonl(slog) if e["event"] == "round"]
    assert len(recv_rounds) == len(send_rounds) == rounds
    return recv_rounds, send_rounds, dropped


def _tensor_fraction(per_layer: list[float]) -> float:
    sizes = [int(n) for n in LAYERS.split(",")]
    return sum(f * n for f, n in zip(per_layer, sizes)) / sum(sizes)


def _first_chunk_of_layer0(data: bytes) -> bool:
    hdr = wire.unpack_header(data)
    return hdr.kind == wire.KIND_DATA and hdr.layer_id == 0 and hdr.chunk_seq == 0


def test_lossy_exchange_meets_bound_per_layer_and_closes_before_every_packet_arrived(agents, tmp_path):
    # 10% random loss, and layer 0's first chunk (1 of 65) never gets through, resends included:
    # a receiver that waited for everything would only ever close at the 5 s deadline.
    bounds = (0.1, 0.05)
    recv_rounds, send_rounds, dropped = _exchange(
        agents, tmp_path, 0.1, 20,
        ["--layer-bounds", ",".join(map(str, bounds)), "--deadline", "fixed", "--deadline-ms", "5000"], [],
        blackhole=_first_chunk_of_layer0)
    assert dropped > 0
    for r in recv_rounds:
        assert r["closed_by"] == ["bound"]          # early close, never the 5 s deadline
        assert r["delivered"][0] < 1.0
        for frac, bound in zip(r["delivered"], bounds):
            assert frac >= 1 - bound
    # the sender resent only part of what it had to: a fraction of its packets, not everything
    total_retx = sum(s["retransmissions"] for s in send_rounds)
    assert 0 < total_retx < sum(s["data_packets"] - s["retransmissions"] for s in send_rounds)


def test_deadline_closes_rounds_that_cannot_reach_their_bound(agents, tmp_path):
    # The path swallows every DATA packet of layer 1 from chunk 5 on (resends too): layer 1
    # can never reach its bound, so only the acceptance deadline ends each round.
    def layer1_tail(data: bytes) -> bool:
        hdr = wire.unpack_header(data)
        return hdr.kind == wire.KIND_DATA and hdr.layer_id == 1 and hdr.chunk_seq >= 5

    recv_rounds, send_rounds, _ = _exchange(
        agents, tmp_path, 0.0, 3, ["--bound", "0.1", "--bound-scope", "layer", "--deadline", "fixed",
                                   "--deadline-ms", "200", "--order", "layer"],
        ["--bound-scope", "layer", "--order", "layer"],
        blackhole=layer1_tail)
    for r in recv_rounds:
        assert r["closed_by"] == ["deadline"]
        assert r["delivered"][0] == 1.0
        assert r["delivered"][1] == pytest.approx(320 / 650, abs=1e-4)
        assert r["seconds"] >= 0.2
    # the sender kept resending the 6 missing layer-1 chunks, paced by its probes, until STOP
    for s in send_rounds:
        assert 6 <= s["retransmissions"] <= 6 * (s["probes"] + 1)


@pytest.mark.parametrize("window", [["--window", "0"], ["--window", "10", "--cc", "ecn"]], ids=["no-window", "ecn-window"])
def test_tensor_bound_closes_rounds_with_holes_anywhere_and_no_resend(agents, tmp_path, window):
    # One 10% bound over the tensor, 5% random loss on the path (ACKs and STOPs too), chunks
    # interleaved across layers: rounds close by the bound on the first pass, whichever chunks
    # were lost; a window that reacts to loss only beyond the bound does not change that.
    flags = ["--bound", "0.1", "--bound-scope", "tensor", "--order", "interleave",
             "--deadline", "fixed", "--deadline-ms", "5000", *window]
    rounds = 20
    recv_rounds, send_rounds, dropped = _exchange(agents, tmp_path, 0.05, rounds, flags, flags)
    assert dropped > 0
    by_bound = [r for r, s in zip(recv_rounds, send_rounds)
                if r["closed_by"] == ["bound"] and r["resends"] == 0 and s["resends"] == 0]
    assert len(by_bound) >= 0.9 * rounds
    for r in recv_rounds:
        assert _tensor_fraction(r["delivered"]) >= 0.9 - 1e-6
    # holes land in either layer, not only in the last one sent
    assert any(r["delivered"][0] < 1.0 for r in recv_rounds)
    assert any(r["delivered"][1] < 1.0 for r in recv_rounds)


def test_tcp_and_mlt_baselines_deliver(agents, tmp_path):
    port = agents.free_port()
    rlog = tmp_path / "tcp.jsonl"
    recv = agents.start("hosts.tensor_exchange", "recv", "--bind", "127.0.0.1", "--port",
                        str(port), "--rounds", "3", "--transport", "tcp", "--tcp-cc", "reno",
                        "--log", str(rlog))
    slog = tmp_path / "tcp-send.jsonl"
    send = agents.start("hosts.tensor_exchange", "send", "--to", f"127.0.0.1:{port}",
                        "--rounds", "3", "--transport", "tcp", "--tcp-cc", "cubic", "--log", str(slog))
    assert agents.wait(send)[0] == 0 and agents.wait(recv)[0] == 0
    rounds = [e for e in agents.read_jsonl(rlog) if e["event"] == "round"]
    assert [r["delivered"] for r in rounds] == [[1.0, 1.0]] * 3
    # the sender's congestion control is the one it was given (the receiver's listener has its own)
    assert next(e for e in agents.read_jsonl(slog) if e["event"] == "connected")["cc"] == "cubic"
    mlt_rounds, _, _ = _exchange(agents, tmp_path, 0.05, 5,
                                 ["--transport", "mlt", "--bound", "0.05"], ["--transport", "mlt"])
    # mlt's default scope is the tensor: 95% of all elements, holes in any layer
    assert all(_tensor_fraction(r["delivered"]) >= 0.95 - 1e-6 for r in mlt_rounds)
