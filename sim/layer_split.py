"""Transport layers for a gradient sized by its parameter count (`params.sim_gradient_params`):
the count split in the proportions of ResNet-50's stages (conv1 with its batch norm, layer1 to
layer4, fc), so that per-layer bounds, priorities and the tensor bound have layers to act on.

ResNet-50's stage sizes are computed here from its architecture (He et al., CVPR '16:
bottleneck blocks of 1x1, 3x3, 1x1 convolutions without bias, each followed by a batch norm
of 2 parameters per channel, a 1x1 projection with batch norm on each stage's first block,
an ImageNet fc of 2048 x 1000 plus bias). They sum to 25,557,032, torchvision's count.
"""
from __future__ import annotations

RESNET50_BLOCKS = (3, 4, 6, 3)           # bottleneck blocks per stage
RESNET50_WIDTHS = (64, 128, 256, 512)    # the 3x3 convolution's channels per stage
EXPANSION = 4                            # a bottleneck's output channels / its width
CLASSES = 1000
STAGE_NAMES = ("conv1", "layer1", "layer2", "layer3", "layer4", "fc")


def _conv_bn(cin: int, cout: int, k: int) -> int:
    return k * k * cin * cout + 2 * cout


def resnet50_stages() -> list[int]:
    """Parameters of ResNet-50's stages, in STAGE_NAMES order."""
    stages = [_conv_bn(3, 64, 7)]
    cin = 64
    for blocks, width in zip(RESNET50_BLOCKS, RESNET50_WIDTHS):
        cout = width * EXPANSION
        total = 0
        for b in range(blocks):
            total += _conv_bn(cin, width, 1) + _conv_bn(width, width, 3) + _conv_bn(width, cout, 1)
            if b == 0:
                total += _conv_bn(cin, cout, 1)      # the projection shortcut
            cin = cout
        stages.append(total)
    stages.append(cin * CLASSES + CLASSES)
    return stages


def split_parameters(count: int) -> list[int]:
    """`count` parameters as six layers in ResNet-50's stage proportions (largest remainder,
    every layer at least one parameter): ResNet-50's own count gives its exact stages."""
    shares = resnet50_stages()
    if count < len(shares):
        raise ValueError(f"{count} parameters cannot fill {len(shares)} layers")
    whole = sum(shares)
    exact = [count * s / whole for s in shares]
    sizes = [max(1, int(x)) for x in exact]
    by_remainder = sorted(range(len(shares)), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    for i in by_remainder[:count - sum(sizes)]:
        sizes[i] += 1
    while sum(sizes) > count:                # only when the floors of 1 overshot
        sizes[sizes.index(max(sizes))] -= 1
    return sizes

