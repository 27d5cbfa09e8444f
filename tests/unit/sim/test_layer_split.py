"""A gradient sized by its parameter count gets ResNet-50's stages as transport layers."""
import pytest

from sim.layer_split import resnet50_stages, split_parameters


def test_resnet50_stages_sum_to_its_parameter_count():
    stages = resnet50_stages()
    assert sum(stages) == 25_557_032
    assert stages[0] == 9_536 and stages[-1] == 2_049_000      # conv1 + bn1; fc 2048 x 1000 + bias


def test_a_count_is_split_in_the_stages_proportions():
    assert split_parameters(25_557_032) == resnet50_stages()
    sizes = split_parameters(250_000)
    assert sum(sizes) == 250_000 and len(sizes) == 6 and min(sizes) >= 1
    assert sizes.index(max(sizes)) == 4                        # layer4 holds most parameters
    assert split_parameters(6) == [1] * 6
    with pytest.raises(ValueError, match="6 layers"):
        split_parameters(5)

