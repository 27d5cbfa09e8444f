"""The demo summary reads agents' JSON lines and gradctl stats without guessing missing fields."""
from topo.summary import final_accuracy, per_layer, render, rounds_completed, stat_lines
from topo.training import TrainingResult, json_lines


def _result():
    worker = json_lines('noise\n{"round": 0, "delivered": {"0": 1.0, "1": 0.99}, "bound": {"0": 0.011, "1": 0.004}}\n'
                        '{"round": 1, "delivered": [0.995, 0.997]}\n{bad json\n')
    ps = [{"epoch": 0, "accuracy": 0.91}, {"epoch": 1, "accuracy": 0.94}]
    return TrainingResult({"ps@ps": 0, "worker0@w1": 0}, {"ps@ps": ps, "worker0@w1": worker},
                          {"ps@ps": "logs/p", "worker0@w1": "logs/w"}, 3.2)


def test_parsing():
    result = _result()
    assert rounds_completed(result) == 2
    layers = per_layer(result)
    assert layers[0] == {"min": 0.995, "mean": 0.9975, "bound": 0.011}
    assert layers[1]["min"] == 0.99
    assert final_accuracy(result) == 0.94


def test_render_marks_layers_below_bound_and_failures():
    result = _result()
    result.exit_codes["worker0@w1"] = 3
    text = render(result, {"switches": [{"name": "s1", "dropped": 4, "uptime": 9}]})
    assert "FAILED" in text and "exit code 3" in text
    assert "layer 1: 0.990" in text and "BELOW 1-bound" in text
    assert "switches[s1].dropped: 4" in text and "uptime" not in text


def test_render_without_stats_says_na():
    text = render(TrainingResult({}, {}, {}, 0.0), None)
    assert "accuracy: n/a" in text and "gradctl stats unavailable" in text
    assert list(stat_lines({"a": True})) == []
