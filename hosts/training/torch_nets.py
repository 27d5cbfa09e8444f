"""The models as `torch.nn.Module`s: the MLP and small CNN of the NumPy suite, a small
ResNet-style CNN and a small transformer.

Every module takes a batch of inputs as `hosts.training.dataset` holds them (flat 8x8 images as
float32, or token sequences as int64) and returns class logits. A transport layer is one
parameter, in `named_parameters()` order (nearest the input first), so the layers' names are the
parameters' names.

resnet: a convolutional stem, two residual stages (the second twice as wide), group
normalisation (no running statistics, so a model that only ever receives parameters evaluates
as it trains), global average pooling and a linear classifier. Its normalisation gains and
biases are a few dozen elements each, the stage convolutions thousands.
transformer: token and position embeddings, pre-norm encoder blocks (multi-head attention, a
feed-forward of 4x the width), mean pooling, a linear head; no dropout.
"""
from __future__ import annotations

import torch
from torch import nn

IMAGE_SIDE = 8


class TorchMLP(nn.Module):
    """Linear + ReLU hidden layers of `hidden` widths, then a linear output layer."""

    def __init__(self, features: int, hidden: tuple[int, ...], classes: int) -> None:
        super().__init__()
        sizes = [features, *hidden, classes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


class TorchCNN(nn.Module):
    """3x3 convolution (`filters` maps, same padding), ReLU, 2x2 max pool, dense `hidden`, ReLU,
    dense output: the NumPy SmallCNN's architecture."""

    def __init__(self, filters: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, filters, 3, padding=1)
        self.dense = nn.Linear((IMAGE_SIDE // 2) ** 2 * filters, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, IMAGE_SIDE, IMAGE_SIDE)
        x = torch.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.out(torch.relu(self.dense(x.flatten(1))))


class _Block(nn.Module):
    """Two 3x3 convolutions with group norm and a skip (a 1x1 convolution when widths differ)."""

    def __init__(self, inputs: int, width: int, groups: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, width, 3, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(groups, width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(groups, width)
        self.skip = nn.Conv2d(inputs, width, 1, bias=False) if inputs != width else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm1(self.conv1(x)))
        y = self.norm2(self.conv2(y))
        return torch.relu(y + (x if self.skip is None else self.skip(x)))


class SmallResNet(nn.Module):
    """Stem (3x3, `width` maps, group norm), a stage of `width` and one of 2 x `width` maps,
    global average pooling, linear classifier."""

    def __init__(self, width: int, classes: int, groups: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1, bias=False)
        self.stem_norm = nn.GroupNorm(groups, width)
        self.stage1 = _Block(width, width, groups)
        self.stage2 = _Block(width, 2 * width, groups)
        self.classifier = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(-1, 1, IMAGE_SIDE, IMAGE_SIDE)
        x = torch.relu(self.stem_norm(self.stem(x)))
        x = self.stage2(self.stage1(x))
        return self.classifier(x.mean(dim=(2, 3)))


class _EncoderBlock(nn.Module):
    """Pre-norm: x + attention(norm(x)), then x + feed-forward(norm(x))."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ff_norm = nn.LayerNorm(width)
        self.ff_in = nn.Linear(width, 4 * width)
        self.ff_out = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.attn_norm(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.ff_out(torch.relu(self.ff_in(self.ff_norm(x))))


class SmallTransformer(nn.Module):
    """Token + position embeddings of `width`, `depth` encoder blocks, mean pool, linear head."""

    def __init__(self, vocab: int, length: int, classes: int, width: int = 32, heads: int = 4,
                 depth: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.randn(length, width) * 0.02)
        self.blocks = nn.ModuleList(_EncoderBlock(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.tokens(x.long()) + self.positions
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h).mean(dim=1))
