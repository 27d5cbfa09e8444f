"""The socket driver's port sends every datagram with its own TOS (ancillary data), on a real
loopback socket."""
from hosts import wire
from hosts.transport.endpoint import Endpoint


def test_each_datagram_arrives_with_the_tos_it_was_sent_with():
    rx = Endpoint(("127.0.0.1", 0), 7, wire.PS_RANK)
    tx = Endpoint(("127.0.0.1", 0), 7, 0)
    try:
        sent = [wire.data_tos(c, c < 4) for c in range(8)] + [wire.CONTROL_TOS, 0]
        for i, tos in enumerate(sent):
            tx.send_control(wire.KIND_PROBE, rx.address, i, tos=tos)
        got: list = []
        while len(got) < len(sent):
            batch = rx.receive(2.0)
            assert batch, "datagrams lost on loopback"
            got += batch
        assert [p.tos for p in sorted(got, key=lambda p: p.header.round)] == sent
        assert tx.counters["packets_sent"] == len(sent)
    finally:
        rx.close()
        tx.close()
