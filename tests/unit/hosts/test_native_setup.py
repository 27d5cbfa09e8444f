"""A send session's setup on the native core against the Python reference: the chunks'
magnitude classes (native/mag_classes.cpp, ChunkPlan.classes with native=True, against
ChunkPlan.split): bit for bit the same float32 means (numpy's pairwise sums) and the same class
for every chunk, whatever the sizes, the chunk boundaries and the values (zeros, denormals, inf,
nan, negatives, exponents from the smallest to the largest); the first pass's 'interleave' order
(native/send_order.cpp); and a sender opened on either core marks and orders every chunk the
same."""
from __future__ import annotations

import numpy as np
import pytest

from hosts import wire
from hosts.errors import ConfigError
from hosts.transport import core as transport_core
from hosts.transport.chunking import ChunkPlan, _chunk_means, _class_of_mean, send_order
from hosts.transport.port import Port
from hosts.transport.sender import SendOptions, SendSession

needs_native = pytest.mark.skipif(not transport_core.native_available(),
                                  reason=f"native core not built: {transport_core.NATIVE_ERROR}")

SIZES = [1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 135, 136, 255, 256, 257, 1000, 1023, 1024,
         1025, 100_000]
CHUNKS = [1, 7, 8, 127, 128, 129, 360]
KINDS = ["normal", "lognormal", "cauchy", "huge", "exponents", "specials"]


def _values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` float32 values of one kind (signed; 'specials' mixes zeros, denormals, inf, nan)."""
    sign = rng.choice([-1.0, 1.0], n)
    if kind == "normal":
        a = rng.normal(0, 0.01, n)
    elif kind == "lognormal":
        a = rng.lognormal(0, 6, n) * sign
    elif kind == "cauchy":
        a = rng.standard_cauchy(n)
    elif kind == "huge":          # sums overflow float32 to inf
        a = rng.random(n) * 3.4e38 * sign
    elif kind == "exponents":     # every binade, denormals included
        a = rng.normal(0, 1, n) * 2.0 ** rng.integers(-150, 128, n)
    else:
        pool = np.array([0.0, -0.0, 1e-45, -3e-39, 1.1754942e-38, np.inf, -np.inf, np.nan, 1.0,
                         -2.5, 3.4e38], dtype=np.float32)
        a = np.where(rng.random(n) < 0.3, rng.choice(pool, n), rng.normal(0, 1, n))
    with np.errstate(over="ignore"):
        return a.astype(np.float32)


def _reference_means(layer: np.ndarray, size: int) -> tuple[float, list[float]]:
    magnitude = np.abs(layer)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.mean(magnitude)), _chunk_means(magnitude, size)


def _bits(values) -> bytes:
    return np.asarray(values, dtype=np.float64).tobytes()


@needs_native
@pytest.mark.parametrize("kind", KINDS)
def test_the_means_are_numpys_bit_for_bit(kind: str) -> None:
    from hosts.transport import _native
    rng = np.random.default_rng(KINDS.index(kind))
    for n in SIZES:
        layer = _values(kind, n, rng)
        for size in CHUNKS:
            want_layer, want = _reference_means(layer, size)
            got_layer, got = _native.chunk_means(layer, size)
            assert _bits(got_layer) == _bits(want_layer), (n, size)
            assert _bits(got) == _bits(want), (n, size)


@needs_native
@pytest.mark.parametrize("kind", KINDS)
def test_every_chunk_has_the_reference_class(kind: str) -> None:
    rng = np.random.default_rng(100 + KINDS.index(kind))
    seen: set[int] = set()
    for size in CHUNKS:
        # layers that end on, just before and just after a chunk boundary, and every SIZE
        sizes = SIZES + [3 * size, 3 * size - 1, 3 * size + 1]
        plan = ChunkPlan(sizes, size)
        layers = [_values(kind, n, rng) for n in sizes]
        with np.errstate(over="ignore", invalid="ignore"):
            want = plan.classes(layers)
        got = plan.classes(layers, native=True)
        assert len(got) == plan.total_chunks
        assert got == want, size
        seen |= set(got)
    assert len(seen) >= {"huge": 2, "specials": 4}.get(kind, 6)   # the values reach many classes


@needs_native
def test_classes_of_uneven_plans_and_any_layout() -> None:
    rng = np.random.default_rng(5)
    plan = ChunkPlan([1000, 37, 5, 720, 1], [64, 7, 360, 360, 1])
    base = rng.lognormal(0, 4, 2000)
    layers = [base[:1000], np.asfortranarray(base[1000:1036].reshape(6, 6)).ravel()[:36].tolist() + [0.0],
              np.zeros(5), base[1100:1820].reshape(8, 90)[:, ::-1], np.array([7.0])]
    layers = [np.asarray(a) for a in layers]
    assert plan.classes(layers, native=True) == plan.classes(layers)
    zeros = [np.zeros(n, dtype=np.float32) for n in plan.layer_sizes]
    assert plan.classes(zeros, native=True) == plan.classes(zeros) == bytes(plan.total_chunks)


@needs_native
def test_bad_layers_are_the_same_error_on_both() -> None:
    with pytest.raises(ConfigError):
        ChunkPlan([0], 8)
    plan = ChunkPlan([10, 4], 4)
    for layers in ([np.ones(10)], [np.ones(10), np.ones(5)]):
        for native in (False, True):
            with pytest.raises(ConfigError):
                plan.classes(layers, native=native)
    from hosts.transport import _native
    with pytest.raises(TypeError):
        _native.mag_classes([np.ones(4, dtype=np.float64)], [4])
    with pytest.raises(ValueError):
        _native.mag_classes([np.ones(4, dtype=np.float32)], [0])
    with pytest.raises(ValueError):
        _native.mag_classes([np.ones(4, dtype=np.float32)], [4, 4])
    with pytest.raises(ValueError):
        _native.mag_classes([np.ones(0, dtype=np.float32)], [4])


def test_log2_of_a_power_of_two_is_exact_here() -> None:
    """The premise of the native rule (floor(log2) read off the exponent): np.log2 of every
    power of two a ratio of two float32 can be is that integer exactly."""
    exps = np.arange(-300, 301)
    assert np.array_equal(np.log2(np.ldexp(1.0, exps)), exps.astype(np.float64))


@needs_native
def test_the_class_rule_at_and_beside_every_power_of_two() -> None:
    """Ratios of two float32 at a power of two and one or two float32 steps either side of
    it, where floor(log2) turns: the native rule (the ratio's exponent) and the reference's
    np.log2 give the same class, from the smallest denormal to the largest float32."""
    from hosts.transport import _native
    rng = np.random.default_rng(9)
    layer_means = np.concatenate([
        np.float32(2.0) ** rng.integers(-149, 128, 300).astype(np.float32),   # powers of two
        (rng.random(1500) + 0.5).astype(np.float32) * np.float32(2.0) ** rng.integers(-140, 120, 1500),
        np.array([1e-45, 3e-39, 1.0, 3.4028235e38], dtype=np.float32)]).astype(np.float32)
    checked = 0
    for b in layer_means[layer_means > 0]:
        for j in range(-6, 6):
            exact = np.ldexp(np.float64(b), j)
            if not np.float32(1e-45) <= exact < np.float32(3.4028235e38):
                continue
            centre = np.float32(exact)
            down = np.nextafter(centre, np.float32(0))
            up = np.nextafter(centre, np.float32(np.inf))
            for a in (centre, down, up, np.nextafter(down, np.float32(0)),
                      np.nextafter(up, np.float32(np.inf))):
                mean, layer_mean = float(a), float(b)
                assert _native.mag_class(mean, layer_mean) == _class_of_mean(mean, layer_mean), (a, b)
                checked += 1
    assert checked > 50_000
    for mean, layer_mean in [(0.0, 1.0), (-1.0, 1.0), (np.inf, 1.0), (np.nan, 1.0), (1.0, 0.0),
                             (1.0, np.inf), (1.0, np.nan), (np.nan, np.nan), (1e-45, 3.4e38),
                             (3.4e38, 1e-45)]:
        assert _native.mag_class(mean, layer_mean) == _class_of_mean(mean, layer_mean)


@needs_native
@pytest.mark.parametrize("options", [
    SendOptions(), SendOptions(droppable_below=6),
    SendOptions(droppable=(frozenset({0, 1, 7}), frozenset(), frozenset({3, 4}))),
    SendOptions(plain=True, cc="ecn"), SendOptions(priority_hints=False),
], ids=["default", "below-6", "policy", "plain", "no-hints"])
@pytest.mark.parametrize("pull", [False, True])
def test_a_sender_marks_every_chunk_the_same_on_both_cores(options: SendOptions, pull: bool) -> None:
    plan = ChunkPlan([4000, 700, 64], [64, 50, 16])
    rng = np.random.default_rng(3)
    layers = [rng.lognormal(0, 2, n).astype(np.float32) for n in plan.layer_sizes]
    opened = {}
    for core in ("python", "native"):
        port = Port(7, wire.PS_RANK if pull else 0, lambda: 0.0)
        s = SendSession(port, ("10.0.0.9", 6000), 0 if pull else wire.PS_RANK, plan, layers, 3,
                        pull=pull, options=options, critical_layers=frozenset({2}), core=core)
        opened[core] = (s.mag_classes, s._marks, s._not_ect.tolist(), s._queue)
    assert opened["native"] == opened["python"]
    assert len(set(opened["python"][0])) >= 4


@needs_native
def test_the_interleave_order_is_the_reference_order() -> None:
    rng = np.random.default_rng(4)
    plans = [ChunkPlan([1], 1), ChunkPlan([8320, 8256, 650], 360), ChunkPlan([1000, 37, 5], [64, 7, 1]),
             ChunkPlan([360 * 7, 360 * 21, 360 * 3, 360], 360)]     # equal fractions across layers
    for _ in range(20):
        layers = int(rng.integers(1, 12))
        plans.append(ChunkPlan([int(n) for n in rng.integers(1, 20_000, layers)],
                               [int(c) for c in rng.integers(1, 361, layers)]))
    for plan in plans:
        want = send_order(plan, "interleave")
        assert send_order(plan, "interleave", native=True) == want
        assert sorted(want) == list(range(plan.total_chunks))
    plan = plans[1]
    for order in ("layer", "shuffle"):   # not ported: the same on both
        assert send_order(plan, order, [1, 2], native=True) == send_order(plan, order, [1, 2])
    with pytest.raises(ConfigError):
        send_order(plan, "random", native=True)


@needs_native
@pytest.mark.slow
def test_a_layer_beyond_two_to_the_24_elements() -> None:
    """A count float32 cannot hold exactly: numpy divides the layer's float32 sum by it in
    float64, and so does the native mean."""
    from hosts.transport import _native
    layer = np.random.default_rng(2).lognormal(0, 3, 2**24 + 3).astype(np.float32)
    assert _bits(_native.chunk_means(layer, 360)[0]) == _bits(float(np.mean(np.abs(layer))))
