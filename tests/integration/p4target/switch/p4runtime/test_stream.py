"""StreamChannel: packet-out through the CPU port, packet-in with metadata, digests."""
import queue
import time

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

P = p4runtime_pb2
EXACT = "MyIngress.t_exact"


def pkt(a=1, b=2, c=3, d=4):
    return bytes([a, b]) + c.to_bytes(2, "big") + d.to_bytes(4, "big")


def packet_out(payload, **metadata_by_id):
    req = P.StreamMessageRequest()
    req.packet.payload = payload
    for mid, value in metadata_by_id.items():
        req.packet.metadata.add(metadata_id=int(mid[1:]), value=value)
    return req


def test_packet_out_header_is_packed_in_front_of_the_payload(loaded):
    sw, c, _ = loaded
    # egress_port = 5 (9 bits) then _pad (7 bits): 0b000000101_0000000 -> 0x02 0x80
    c.send(packet_out(pkt(), m1=b"\x05"))
    assert sw.sink.get() == (5, pkt())
    c.send(packet_out(pkt(a=9), m1=b"\x01\x02", m2=b"\x00"))
    assert sw.sink.get() == (0x102, pkt(a=9))


def test_bad_packet_out_gets_a_stream_error_and_the_stream_lives_on(loaded):
    sw, c, _ = loaded
    c.send(packet_out(pkt(), m1=b"\x02\x00"))  # 0x200 does not fit in 9 bits
    err = c.get("error").error
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT and err.packet_out.packet_out.payload == pkt()
    c.send(packet_out(pkt(), m7=b"\x01"))
    assert c.get("error").error.canonical_code == code_pb2.INVALID_ARGUMENT
    c.send(packet_out(pkt(), m1=b"\x03"))
    assert sw.sink.get() == (3, pkt())


def test_backup_cannot_send_packets(loaded):
    sw, c, _ = loaded
    backup = sw.client((0, 0))
    backup.send(packet_out(pkt(), m1=b"\x05"))
    assert backup.get("error").error.canonical_code == code_pb2.PERMISSION_DENIED
    assert sw.sink.drain(0.2) == []


def test_packet_in_carries_ingress_port_metadata_to_the_primary_only(loaded, ids, helpers):
    sw, c, _ = loaded
    backup = sw.client((0, 0))
    c.write(helpers.update("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.to_cpu")))
    sw.target.receive(3, pkt())
    msg = c.get("packet").packet
    assert msg.payload == pkt()
    assert [(m.metadata_id, m.value) for m in msg.metadata] == [(1, b"\x03"), (2, b"\x00")]
    assert backup.none("packet")
    assert sw.sink.drain(0.1) == []  # CPU-port frames go to the controller, not out of a port


def test_digests_need_a_digest_entry_and_are_batched_acked_and_deduplicated(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    did = ids.of("digests", "learn_t")
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.learn")))
    sw.target.receive(0, pkt(c=0x1234))
    assert c.none("digest")  # not configured yet
    entry = P.DigestEntry(digest_id=did)
    entry.config.max_timeout_ns = 0
    entry.config.max_list_size = 1
    entry.config.ack_timeout_ns = 10**9
    c.write(u("INSERT", "digest_entry", entry))
    assert [e.digest_entry for e in c.read(P.Entity(digest_entry=P.DigestEntry()))] == [entry]
    sw.target.receive(0, pkt(c=0x1234))
    dl = c.get("digest").digest
    assert dl.digest_id == did and dl.list_id == 1
    assert [[m.bitstring for m in d.struct.members] for d in dl.data] == [[b"\x01", b"\x12\x34"]]
    sw.target.receive(0, pkt(c=0x1234))  # same data, list 1 not acked yet: suppressed
    assert c.none("digest")
    ack = P.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = did, 1
    c.send(ack)
    deadline = time.monotonic() + 5
    got = None
    while got is None and time.monotonic() < deadline:  # the ack travels asynchronously
        sw.target.receive(0, pkt(c=0x1234))
        try:
            got = c.get("digest", timeout=0.1).digest
        except queue.Empty:
            pass
    assert got is not None and got.list_id == 2
    sw.target.receive(0, pkt(c=0x1234))  # the new list is unacked again: suppressed
    assert c.none("digest")
    # batching: up to 3 digests per list, the rest flushed after 0.5 s
    entry.config.max_list_size, entry.config.max_timeout_ns, entry.config.ack_timeout_ns = 3, 500_000_000, 0
    c.write(u("MODIFY", "digest_entry", entry))
    for cval in range(4):
        sw.target.receive(0, pkt(c=cval))
    first = c.get("digest").digest
    second = c.get("digest").digest
    assert (len(first.data), len(second.data)) == (3, 1)
    c.write(u("DELETE", "digest_entry", entry))
    sw.target.receive(0, pkt(c=99))
    assert c.none("digest")
