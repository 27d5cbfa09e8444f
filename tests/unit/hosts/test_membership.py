"""The PS's view of its workers: absence, re-admission at a round boundary, --min-workers."""
import pytest

from hosts.errors import PeerTimeout
from hosts.exchange.membership import Membership


def test_the_first_join_and_its_repeated_hellos_keep_round_zero():
    m = Membership(3)
    assert m.hello(1) == (0, False) and m.hello(1) == (0, False)
    assert m.pushers(0) == m.pullers(0) == [0, 1, 2] and m.missing(0) == []


def test_an_absent_worker_is_left_behind_and_readmitted_at_the_next_pull():
    m = Membership(3)
    m.data_from(2)
    assert m.mark_absent(2, 5) and not m.mark_absent(2, 6)
    assert m.pushers(6) == [0, 1] and m.pullers(6) == [0, 1] and m.missing(6) == [2]
    m.next_pull = 7          # the PS is in round 7's push: its pull is the next one formed
    assert m.hello(2) == (8, True)
    assert m.pullers(7) == [0, 1, 2]          # it takes round 7's model whole...
    assert m.pushers(7) == [0, 1] and m.missing(7) == [2]
    assert m.pushers(8) == [0, 1, 2]          # ...and pushes from round 8
    assert m.hello(2) == (8, False)           # a repeated HELLO before any data changes nothing
    assert m.summary()["rejoins"] == {"2": 1} and m.summary()["absent_at_end"] == []


def test_a_worker_that_exchanged_data_and_says_hello_again_rejoins():
    m = Membership(2)
    m.data_from(0)
    m.next_pull = 3
    assert m.hello(0) == (4, True) and m.missing(3) == [0]


def test_a_worker_restarted_from_a_new_address_rejoins_even_before_any_data():
    m = Membership(2)
    m.next_pull = 0
    assert m.hello(1, restarted=True) == (1, True)     # it pulls round 0 whole, pushes from 1
    assert m.missing(0) == [1] and m.pullers(0) == [0, 1]
    assert m.summary()["rejoins"] == {"1": 1}


def test_below_min_workers_the_ps_waits_the_horizon_then_names_the_absent():
    m = Membership(3, min_workers=2, horizon=5.0)
    m.mark_absent(1, 4)
    assert m.check_quorum(4, now=100.0)
    m.mark_absent(2, 4)
    assert not m.check_quorum(4, now=100.0) and not m.check_quorum(4, now=105.0)
    with pytest.raises(PeerTimeout, match=r"below --min-workers 2: 1 of 3 .*worker rank 1 absent "
                                          r"since round 4, worker rank 2 absent since round 4"):
        m.check_quorum(4, now=105.1)
    m.hello(2)   # one comes back in time: the wait starts over
    assert m.check_quorum(4, now=106.0) and m.short_since is None
