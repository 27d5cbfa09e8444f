"""The built-in topologies as the emulation names them: `controller.topologies` builds them
(one builder for Mininet and ns-3: incast, leaf-spine, the PCN tree and the address plan);
here a bad name or bad knobs are `DescriptionError`s, as every error of `topo` is a TopoError."""
from __future__ import annotations

from controller import topologies as _shared
from controller.errors import TopologyError
from controller.topologies import TOPOLOGIES, TopoParams
from controller.topology import Topology
from topo.errors import DescriptionError

__all__ = ["TOPOLOGIES", "TopoParams", "build_topology"]


def build_topology(name: str, params: TopoParams | None = None) -> Topology:
    """The named built-in topology, validated; DescriptionError for an unknown name or bad knobs."""
    try:
        return _shared.build_topology(name, params)
    except TopologyError as exc:
        raise DescriptionError(str(exc)) from None
