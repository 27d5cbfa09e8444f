"""Each job's policy epoch and its history are part of the controller's state file: written,
read back, checked strictly, and the history stays bounded."""
import json

import pytest

from controller import errors
from controller.state import EPOCH_HISTORY, ControllerState
from controller.statefile import check_shape, read_state, write_state


def test_epochs_round_trip_through_the_state_file(tmp_path):
    state = ControllerState()
    state.record_epoch(1, 1, 0, "policy")
    state.record_epoch(1, 2, 5, "operator")
    state.record_epoch(2, 1, 0, "policy")
    path = tmp_path / "state.json"
    write_state(path, json.dumps(state.to_json()))
    doc = read_state(path)
    assert doc["epochs"]["1"] == {"epoch": 2, "effective_round": 5, "history": [
        {"epoch": 1, "effective_round": 0, "by": "policy"},
        {"epoch": 2, "effective_round": 5, "by": "operator"}]}
    again = ControllerState.from_json(doc)
    assert (again.epochs[1].epoch, again.epochs[1].effective_round) == (2, 5)
    assert again.epochs[2].epoch == 1 and again.to_json() == state.to_json()


def test_a_state_file_without_epochs_still_reads():
    assert ControllerState.from_json({}).epochs == {}


def test_history_is_bounded():
    state = ControllerState()
    for epoch in range(1, EPOCH_HISTORY + 11):
        state.record_epoch(7, epoch, epoch, "ps")
    history = state.epochs[7].history
    assert len(history) == EPOCH_HISTORY
    assert history[0]["epoch"] == 11 and history[-1]["epoch"] == EPOCH_HISTORY + 10
    check_shape(state.to_json())


@pytest.mark.parametrize("epochs, expect", [
    ([], "epochs: must be an object"),
    ({"x": {"epoch": 1, "effective_round": 0}}, "epochs.'x'"),
    ({"1": {"epoch": 0, "effective_round": 0}}, "epochs.'1'"),
    ({"1": {"epoch": 2, "effective_round": -1}}, "epochs.'1'"),
    ({"1": {"epoch": 2, "effective_round": 0, "extra": 1}}, "epochs.'1'"),
    ({"1": {"epoch": 2, "effective_round": 0, "history": [{"epoch": 2}]}}, "history[0]"),
    ({"1": {"epoch": 2, "effective_round": 0, "history": [
        {"epoch": 3, "effective_round": 0, "by": "ps"},
        {"epoch": 2, "effective_round": 4, "by": "ps"}]}}, "goes backwards"),
    ({"1": {"epoch": 5, "effective_round": 0, "history": [
        {"epoch": 2, "effective_round": 0, "by": "ps"}]}}, "not the last of its history"),
])
def test_malformed_epochs_are_refused(epochs, expect):
    with pytest.raises(ValueError, match=None) as info:
        check_shape({"epochs": epochs})
    assert expect in str(info.value)


def test_a_corrupt_epoch_stops_the_read_with_one_line(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"epochs": {"1": {"epoch": "two", "effective_round": 0}}}))
    with pytest.raises(errors.ConfigError) as info:
        read_state(path)
    assert "has the wrong shape (epochs.'1'" in str(info.value) and "\n" not in str(info.value)
