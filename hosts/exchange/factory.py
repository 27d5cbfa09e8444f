"""Pick the exchange implementation for --transport."""
from __future__ import annotations

from hosts.exchange.config import TransportConfig
from hosts.exchange.tcp import TcpServerExchange, TcpWorkerExchange
from hosts.exchange.udp_server import UdpServerExchange
from hosts.exchange.udp_worker import UdpWorkerExchange
from hosts.transport.chunking import ChunkPlan


def server_exchange(config: TransportConfig, plan: ChunkPlan, workers: int,
                    bind: tuple[str, int]) -> UdpServerExchange | TcpServerExchange:
    cls = UdpServerExchange if config.udp else TcpServerExchange
    return cls(config, plan, workers, bind)


def worker_exchange(config: TransportConfig, plan: ChunkPlan, rank: int, ps: tuple[str, int],
                    bind: tuple[str, int]) -> UdpWorkerExchange | TcpWorkerExchange:
    cls = UdpWorkerExchange if config.udp else TcpWorkerExchange
    return cls(config, plan, rank, ps, bind)
