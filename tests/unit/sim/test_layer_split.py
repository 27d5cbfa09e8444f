"""A gradient sized by its parameter count gets ResNet-50's stages as transport layers."""
import pytest

from sim.layer_split import fit_bitmaps, resnet50_stages, split_parameters


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


def test_a_layer_too_large_for_one_bitmap_is_cut_into_equal_parts():
    # 10 elements per chunk, 2-byte BITMAPs: 16 chunks = 160 elements per layer at most
    assert fit_bitmaps([160, 161, 7, 480], 10, 2) == [160, 81, 80, 7, 160, 160, 160]
    assert fit_bitmaps(resnet50_stages(), 360, 1440)[:3] == resnet50_stages()[:3]
