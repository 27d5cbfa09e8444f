"""Live mode: an unshaped packet leaves on the receiving thread before `receive` returns (no
hand-off); rate-held packets leave from the scheduler at their rate, in priority order."""
import threading
import time

from p4target.engine import Engine

from .test_features import FWD, SM, assign, pkt, program, rd


def test_unshaped_packet_is_transmitted_before_receive_returns_on_the_same_thread():
    eng = Engine(program(actions=[FWD]))
    eng.table_set_default("t", "fwd", [5])
    got = []
    eng.start(lambda port, data: got.append((port, data, threading.current_thread())))
    try:
        eng.receive(1, pkt())
        assert got == [(5, pkt(), threading.current_thread())]
        assert eng.tm.depth_of(5) == 0
    finally:
        eng.stop()


def test_rate_held_packets_leave_at_the_port_rate_in_priority_order():
    setpri = ("p", [("pri", 3)], [assign(F_sm("egress_spec"), {"type": "hexstr", "value": "0x5"}),
                                   assign(F_sm("priority"), rd(0))])
    mark = ("mark", [], [assign({"type": "field", "value": ["h", "a"]}, F_sm("enq_qdepth"))])
    eng = Engine(program(actions=[setpri], egress_actions=[mark]), priority_queues=2)
    eng.set_port_rate(20.0, 5)  # one packet every 50 ms
    sent = []
    done = threading.Event()

    def transmit(port, data):
        sent.append((time.monotonic(), data))
        if len(sent) == 4:
            done.set()

    eng.start(transmit)
    try:
        start = time.monotonic()
        eng.table_set_default("t", "p", [0])
        eng.receive(1, pkt(b=1))  # a token is there: leaves at once
        eng.receive(1, pkt(b=2))  # held for the rate, low priority
        eng.receive(1, pkt(b=3))
        eng.table_set_default("t", "p", [1])
        eng.receive(1, pkt(b=4))  # high priority: overtakes the held low ones
        assert done.wait(5)
    finally:
        eng.stop()
    order = [data[1] for _, data in sent]
    assert order == [1, 4, 2, 3]
    assert [data[0] for _, data in sent] == [0, 0, 0, 1]  # enq_qdepth: what waited ahead in its queue
    spread = sent[-1][0] - start
    assert 0.12 <= spread < 2.0  # three 50 ms gaps: the scheduler woke for each, not at its idle poll


def F_sm(name):
    return {"type": "field", "value": [SM, name]}


def test_packets_never_overtake_those_still_queued_when_the_rate_is_lifted():
    eng = Engine(program(actions=[FWD]))
    eng.table_set_default("t", "fwd", [5])
    eng.set_queue_rate(1.0, 5)  # one packet per second: the 2nd and 3rd wait
    sent = []
    done = threading.Event()

    def transmit(port, data):
        sent.append(data[1])
        if len(sent) == 4:
            done.set()

    eng.start(transmit)
    try:
        for b in (1, 2, 3):
            eng.receive(1, pkt(b=b))
        assert sent == [1]
        eng.set_queue_rate(None, 5)
        eng.receive(1, pkt(b=4))
        assert done.wait(5)
    finally:
        eng.stop()
    assert sent == [1, 2, 3, 4]


def test_process_on_a_live_engine_returns_its_outputs_instead_of_sending_them():
    eng = Engine(program(actions=[FWD]))
    eng.table_set_default("t", "fwd", [5])
    got = []
    eng.start(lambda port, data: got.append((port, data)))
    try:
        assert eng.process(1, pkt()) == [(5, pkt())]
        assert got == []
        eng.receive(1, pkt(b=9))
        assert got == [(5, pkt(b=9))]
    finally:
        eng.stop()
