"""The transport flags of a DDP job (the agents' flags, plus bounds by parameter name), read by
the parameter server and by every rank's hook alike."""
from __future__ import annotations

import argparse
import shlex

from hosts.errors import ConfigError
from hosts.exchange.config import DEFAULT_BOUND, TransportConfig, add_transport_arguments, config_from_args
from hosts.ddp.layout import Layout, layer_bounds, parse_name_bounds

FLAGS_ENV = "GRADLANE_FLAGS"    # the launcher hands the ranks the job's flags in this variable
PS_ENV = "GRADLANE_PS"          # HOST:CONTROL_PORT of the parameter server (set by the launcher)


def add_ddp_transport_arguments(ap: argparse.ArgumentParser) -> None:
    """The agents' transport flags and --name-bound."""
    add_transport_arguments(ap)
    ap.add_argument("--name-bound", action="append", metavar="PATTERN=BOUND",
                    help="push bound of the parameters whose names match PATTERN (fnmatch, "
                         "e.g. '*norm*=0' or 'classifier.*=0.02'); the first match wins, "
                         "other parameters take --bound; implies --bound-scope layer (PLOT)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the transport's send order")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # type: ignore[override]
        raise ConfigError(f"transport flags: {message}")


def parse_flags(flags: list[str] | str) -> argparse.Namespace:
    """The job's flags, as a list or one shell-quoted string; ConfigError on bad ones."""
    if isinstance(flags, str):
        try:
            flags = shlex.split(flags)
        except ValueError as exc:
            raise ConfigError(f"{FLAGS_ENV}: {exc}") from None
    ap = _Parser(prog="gradlane DDP transport flags", add_help=False)
    add_ddp_transport_arguments(ap)
    return ap.parse_args(flags)


def transport_config(args: argparse.Namespace, layout: Layout, seed: int,
                     create_key: bool = False) -> TransportConfig:
    """The exchange's configuration for `layout`: --name-bound turns into per-layer bounds."""
    names = parse_name_bounds(getattr(args, "name_bound", None))
    if names:
        if args.layer_bounds is not None:
            raise ConfigError("--name-bound and --layer-bounds both give per-layer bounds; use one")
        default = DEFAULT_BOUND if args.bound is None else args.bound
        args = argparse.Namespace(**vars(args))
        args.layer_bounds = ",".join(repr(b) for b in layer_bounds(layout, default, names))
    return config_from_args(args, len(layout.sizes), seed, create_key=create_key)
