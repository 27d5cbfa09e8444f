"""The controller's PCN threshold law (docs/control-laws.md): lower at once when the job's
packets meet deep queues, raise only after calm steps, stay within bounds, hold in the band."""
from controller.control_laws import (CALM_STEPS, MIN_PACKETS, STEP, PcnLawState, PcnObservation,
                                     pcn_step)


def _state(threshold=10, floor=5, ceiling=40):
    return PcnLawState(threshold, floor, ceiling)


def test_deep_queues_lower_the_threshold_down_to_the_floor():
    st = _state(threshold=15)
    step = pcn_step(st, PcnObservation(seen=100, congested=30))
    assert step.changed and step.threshold == 15 - STEP and step.reason.startswith("lowered")
    step = pcn_step(st, PcnObservation(seen=100, congested=30))
    assert step.threshold == 5
    step = pcn_step(st, PcnObservation(seen=100, congested=30))
    assert not step.changed and st.threshold == 5 and step.reason.startswith("floor")


def test_short_queues_raise_only_after_calm_steps_up_to_the_ceiling():
    st = _state(threshold=30)
    for _ in range(CALM_STEPS - 1):
        assert not pcn_step(st, PcnObservation(seen=100, congested=0)).changed
    step = pcn_step(st, PcnObservation(seen=100, congested=1))
    assert step.changed and step.threshold == 35 and step.reason.startswith("raised")
    for _ in range(CALM_STEPS * 3):
        pcn_step(st, PcnObservation(seen=100, congested=0))
    assert st.threshold == 40


def test_band_and_sparse_samples_hold_and_restart_the_calm_count():
    st = _state(threshold=20)
    pcn_step(st, PcnObservation(seen=100, congested=0))
    assert st.calm == 1
    step = pcn_step(st, PcnObservation(seen=100, congested=5))        # 5 %: inside the band
    assert not step.changed and st.calm == 0 and step.reason.startswith("hold")
    step = pcn_step(st, PcnObservation(seen=MIN_PACKETS - 1, congested=MIN_PACKETS - 1))
    assert not step.changed and "too few packets" in step.reason


def test_oscillating_input_does_not_flap_upwards():
    """Alternating deep / calm steps only ever lower the threshold (hysteresis)."""
    st = _state(threshold=40)
    for i in range(20):
        pcn_step(st, PcnObservation(seen=100, congested=50 if i % 2 else 0))
    assert st.threshold == 5


def test_a_reconnecting_switch_gets_the_adapted_thresholds(p4info_msg):
    """What a (re)connecting switch is given includes each job's adapted pcn_job entry."""
    from controller import p4names as N
    from controller.manager import NetworkController
    from controller.policy import assign_slots, parse_policy
    from controller.topology import Topology
    from support.controller_topologies import diamond

    ctl = NetworkController(Topology.from_dict(diamond()), p4info_msg, None, reconnect=False)
    policy = parse_policy({"jobs": [
        {"job": 3, "pcn": {"threshold": 20}, "layers": [{"range": [0, 9], "loss_bound": 0.1}]},
        {"job": 4, "pcn": {"threshold": 20, "adapt": False},
         "layers": [{"range": [0, 9], "loss_bound": 0.1}]}]})
    ctl.state.policy, ctl.state.slots = policy, assign_slots(policy)
    ctl.state.pcn_thresholds = {3: 5, 4: 5}     # job 4's law is off: its own threshold stays
    entries = [e for e in ctl.policy_entries() if e.table == N.PCN_JOB_TABLE]
    assert {e.match[0][1].value: e.action.param(N.SET_PCN_JOB_THRESHOLD) for e in entries} == \
        {3: 5, 4: 20}
    assert len([e for e in ctl.policy_entries() if e.table == N.CLASS_TABLE]) == 2
