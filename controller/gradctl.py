"""gradctl: loss-tolerance policies, statistics and PCN settings of a running gradlane network.

gradctl talks to the controller daemon over its unix socket (``--socket``, default
$GRADLANE_CONTROLLER_SOCKET or logs/controller.sock). Without a daemon, ``--direct`` with
``--topology`` and ``--p4info`` acts on the switches itself, taking mastership with a higher
election id; it refuses while a daemon answers or while the daemon's socket exists but cannot
be reached (another user's daemon), so two controllers never fight over a switch. It connects
with the run's client certificate (``--pki DIR``, default ``pki/`` beside ``--topology``), or
with ``--plaintext`` to switches started without TLS.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from controller import api, errors
from controller.daemon import default_socket, load_p4info_file, read_bmv2_json
from controller.manager import DIRECT_ELECTION_ID, NetworkController
from controller.policy import load_policy
from controller.tls import add_tls_arguments, resolve_client_tls
from controller.topology import Topology


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"gradctl: error: {message}\n")


def _range(text: str) -> tuple[int, int]:
    shown = text if len(text) <= 30 else text[:27] + "..."
    try:
        if len(text) > 40:
            raise ValueError(text)
        if "-" in text:
            lo, hi = text.split("-", 1)
            pair = (int(lo), int(hi))
        else:
            pair = (int(text), int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO-HI (integers), got '{shown}'") from None
    if pair[0] > pair[1] or pair[0] < 0:
        raise argparse.ArgumentTypeError(f"expected 0 <= LO <= HI, got '{shown}'")
    return pair


def _fraction(text: str) -> float:
    shown = text if len(text) <= 30 else text[:27] + "..."
    try:
        if len(text) > 40:
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got '{shown}'") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {shown}")
    return value


def _yes_no(text: str) -> bool:
    if text.lower() in ("yes", "true", "1", "on"):
        return True
    if text.lower() in ("no", "false", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no, got '{text}'")


def _bounded(hi: int, what: str = "a non-negative integer") -> Callable[[str], int]:
    """An argparse type: a decimal integer in [0, hi]."""
    def parse(text: str) -> int:
        shown = text if len(text) <= 30 else text[:27] + "..."
        digits = text.strip().lstrip("+")
        if not digits.isdigit() or len(digits) > len(str(hi)):
            raise argparse.ArgumentTypeError(f"expected {what} (0..{hi}), got '{shown}'")
        value = int(digits)
        if value > hi:
            raise argparse.ArgumentTypeError(f"expected {what} (0..{hi}), got '{shown}'")
        return value
    return parse


_U32 = 0xFFFFFFFF
_nonneg = _bounded(_U32)
_job = _bounded(0xFFFF)
_round = _bounded(_U32)
_port = _bounded(511)


def _prio(text: str) -> int:
    value = _nonneg(text)
    if value > 7:
        raise argparse.ArgumentTypeError(f"priority must be 0..7, got {text}")
    return value


def _switch_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a switch name, got an empty string")
    return text


def _leaf(sub: argparse._SubParsersAction, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A command parser that also takes --json after the command (``gradctl stats --json``)."""
    leaf = sub.add_parser(name, **kwargs)
    leaf.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="machine-readable JSON output")
    return leaf


def build_parser() -> argparse.ArgumentParser:
    """The gradctl command line."""
    p = _Parser(prog="gradctl", description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", "--controller", dest="socket", default=None,
                   help="controller daemon socket (default logs/controller.sock)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    direct = p.add_argument_group("without a daemon")
    direct.add_argument("--direct", action="store_true",
                        help="act on the switches directly (only when no daemon runs)")
    direct.add_argument("--topology", help="topology description JSON (with --direct)")
    direct.add_argument("--p4info", help="P4Info of the loaded pipeline (with --direct)")
    direct.add_argument("--bmv2-json", help="BMv2 JSON to push if a switch has no pipeline (with --direct)")
    direct.add_argument("--timeout", type=float, default=3.0, help="RPC timeout in seconds (with --direct)")
    direct.add_argument("--state-file", help="controller state to use and update (with --direct; "
                                             "default logs/<topo>.controller.json, as the daemon's)")
    add_tls_arguments(direct)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    pol = sub.add_parser("policy", help="show or change the loss-tolerance policy")
    pol_sub = pol.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    pol_sub.required = True
    ap = _leaf(pol_sub, "apply", help="validate a policy file and install it (diff, all or nothing)")
    ap.add_argument("file", help="policy file (YAML or JSON)")
    ap.add_argument("--check", action="store_true", help="only validate the file")
    _leaf(pol_sub, "show", help="the installed policy and its classes")
    cl = _leaf(pol_sub, "clear", help="delete every installed class (needs --yes)")
    cl.add_argument("--yes", action="store_true", help="yes, delete every class")
    st = _leaf(pol_sub, "set", help="change (or add) one job's rule for a layer range, "
                                    "or the job's ablation switches")
    st.add_argument("--job", type=_job, required=True, help="job id")
    st.add_argument("--layers", type=_range, help="layer range LO-HI (or one layer); needed for rule fields")
    st.add_argument("--mag-classes", type=_range, help="magnitude class range LO-HI (default: the rule's)")
    st.add_argument("--loss-bound", type=_fraction, help="push-stage loss bound, 0..1")
    st.add_argument("--pull-bound", type=_fraction, help="pull-stage loss bound, 0..loss bound")
    st.add_argument("--priority", type=_prio, help="priority queue 0..7")
    st.add_argument("--drop-eligible", type=_yes_no, metavar="yes|no", help="may be selectively dropped")
    st.add_argument("--drop-threshold", type=_nonneg, help="queue depth (packets) where drops may start")
    st.add_argument("--spray", type=_yes_no, metavar="yes|no",
                    help="job switch: spray DATA packets per packet over equal-cost paths (no: per-flow hash)")
    st.add_argument("--prioritize", type=_yes_no, metavar="yes|no",
                    help="job switch: use the classes' priority queues (no: the DSCP queue of ordinary traffic)")
    st.add_argument("--selective-drop", type=_yes_no, metavar="yes|no",
                    help="job switch: budgeted selective drops (no: counted, never dropped)")
    ph = _leaf(pol_sub, "phase", help="show each job's live regime and who set it (PS report, "
                                      "operator, policy); with --critical or --round, set it")
    ph.add_argument("--job", type=_job, help="job id (show: default every job; set: required)")
    ph.add_argument("--round", type=_round, help="current training round (set)")
    ph.add_argument("--critical", type=_yes_no, metavar="yes|no",
                    help="set the critical learning regime: the phase's low bound (set)")

    s = _leaf(sub, "stats", help="per job/layer and per queue counters of each switch, and the "
                                 "jobs' host-side bound violations")
    s.add_argument("--switch", type=_switch_name, help="only this switch")
    _watch_arguments(s)
    jb = _leaf(sub, "jobs", help="running jobs: round, regime, policy epoch, per-layer delivered "
                                 "vs bound, violations, last adaptation")
    _watch_arguments(jb)

    pcn = sub.add_parser("pcn", help="show or set PCN/ECN thresholds")
    pcn_sub = pcn.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    pcn_sub.required = True
    _leaf(pcn_sub, "show", help="thresholds and PCN counters per switch port")
    _leaf(pcn_sub, "jobs", help="per job: PCN threshold in force, its law, counts, last change")
    _leaf(pcn_sub, "adapt", help="run one step of the PCN threshold law now (it also runs by "
                                 "itself in the daemon)")
    ps = _leaf(pcn_sub, "set", help="set a port's PCN threshold (and optionally its normal one)")
    ps.add_argument("--switch", type=_switch_name, required=True, help="switch name")
    ps.add_argument("--port", type=_port, required=True, help="egress port")
    ps.add_argument("--threshold", type=_nonneg, required=True, help="PCN threshold (packets)")
    ps.add_argument("--normal", type=_nonneg, help="normal ECN threshold (packets)")

    _leaf(sub, "switches", help="each switch: reachable, primary, pipeline loaded")
    return p


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got '{text[:30]}'") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0.05..3600 seconds, got {text[:30]}")
    return value


def _watch_arguments(leaf: argparse.ArgumentParser) -> None:
    leaf.add_argument("--watch", action="store_true", help="refresh in place until Ctrl-C")
    leaf.add_argument("--interval", type=_interval, default=1.0, help="seconds between refreshes (1)")
    leaf.add_argument("--count", type=_bounded(1_000_000, "a positive integer"),
                      help="with --watch: stop after this many refreshes")


# -- requests ----------------------------------------------------------------------------------
def request_of(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The API command and arguments for parsed command-line ``args``."""
    if args.command == "policy":
        if args.action == "apply":
            policy = load_policy(args.file)   # validated here: errors name the file and field
            return "policy.apply", {"document": dict(policy.document), "source": args.file}
        if args.action == "show":
            return "policy.show", {}
        if args.action == "clear":
            if not args.yes:
                raise errors.ConfigError("policy clear deletes every installed class; "
                                         "add --yes to do so")
            return "policy.clear", {"confirm": True}
        if args.action == "set":
            return "policy.set", {
                "spray": args.spray, "prioritize": args.prioritize,
                "selective_drop": args.selective_drop,
                "job": args.job, "layers": list(args.layers) if args.layers else None,
                "mag_classes": list(args.mag_classes) if args.mag_classes else None,
                "loss_bound": args.loss_bound, "pull_bound": args.pull_bound,
                "priority": args.priority, "drop_eligible": args.drop_eligible,
                "drop_threshold": args.drop_threshold}
        if args.critical is None and args.round is None:
            return "policy.phase.show", {"job": args.job}
        if args.job is None:
            raise errors.ConfigError("policy phase: setting the regime needs --job")
        return "policy.phase", {"job": args.job, "round": args.round, "critical": bool(args.critical)}
    if args.command == "stats":
        return "stats", {"switch": args.switch}
    if args.command == "jobs":
        return "jobs", {}
    if args.command == "pcn":
        if args.action in ("show", "jobs", "adapt"):
            return f"pcn.{args.action}", {}
        return "pcn.set", {"switch": args.switch, "port": args.port, "threshold": args.threshold,
                           "normal": args.normal}
    return "switches", {}


def policy_set_problem(args: argparse.Namespace) -> str | None:
    """Why a ``policy set`` command line cannot be sent, or None."""
    if args.command != "policy" or args.action != "set" or args.layers is not None:
        return None
    if any(v is not None for v in (args.loss_bound, args.pull_bound, args.priority, args.drop_eligible,
                                   args.drop_threshold, args.mag_classes)):
        return "policy set: rule fields need --layers LO-HI"
    if all(v is None for v in (args.spray, args.prioritize, args.selective_drop)):
        return ("policy set: nothing to change (give --layers and rule fields, "
                "or --spray/--prioritize/--selective-drop)")
    return None


def check_no_daemon(sock: Path) -> None:
    """DaemonError unless no daemon can be on `sock`: one answers there, or the socket exists but
    cannot be reached (another user's daemon, whose socket is 0600; a stuck or crashed one), so
    `--direct` never takes the switches from a daemon it merely cannot see."""
    try:
        running = api.call(sock, "ping", timeout=3.0)
    except errors.RemoteError:
        running = {}   # something answered, if not to ping
    except errors.DaemonError as exc:
        if not os.path.lexists(sock):
            return
        raise errors.DaemonError(f"{exc}: --direct refuses while that socket exists (a daemon of another "
                                 "user, or a stuck one, would fight it over the switches; remove the "
                                 "socket if no daemon runs)") from None
    pid = running.get("pid", "?") if isinstance(running, dict) else "?"
    raise errors.DaemonError(f"a controller daemon (pid {pid}) runs on {sock}; "
                             "drop --direct so the two do not fight over the switches")


def run_direct(args: argparse.Namespace, cmd: str, cargs: dict[str, Any], sock: Path) -> Any:
    """Execute a command in process, as primary with a higher election id than the daemon's."""
    if not args.topology or not args.p4info:
        raise errors.ConfigError("--direct needs --topology and --p4info")
    check_no_daemon(sock)
    tls = resolve_client_tls(args.pki, args.plaintext, args.topology)
    topo = Topology.load(args.topology)
    config = read_bmv2_json(args.bmv2_json) if args.bmv2_json else None
    state_file = Path(args.state_file or f"logs/{topo.name}.controller.json")
    if cmd in ("policy.set", "policy.phase", "policy.phase.show", "policy.show",
               "policy.clear") and not state_file.exists():
        raise errors.ConfigError(f"no controller state at {state_file}: the current policy is unknown "
                                 "(give --state-file, or install one with `policy apply FILE`)")
    ctl = NetworkController(topo, load_p4info_file(args.p4info), config,
                            election_id=DIRECT_ELECTION_ID, timeout=args.timeout,
                            state_file=state_file, set_queues=False, reconnect=False, tls=tls)
    try:
        # switches without a pipeline get one (and the network) only when --bmv2-json is given
        ctl.start(push_pipeline=config is not None, sync=config is not None)
        return api.handle(ctl, cmd, cargs)
    finally:
        ctl.stop()


# -- output ------------------------------------------------------------------------------------
def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header] + [[("-" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _fmt_switches(res: list[dict]) -> str:
    def recovery(r: dict) -> str:
        if r.get("down_for_s") is not None:
            return f"down {r['down_for_s']:.1f} s"
        return "-" if r.get("last_recovery_s") is None else f"{r['last_recovery_s']:.2f} s"

    return _table([[r["switch"], r["address"], "yes" if r["connected"] else "no",
                    "yes" if r["primary"] else "no", "yes" if r["pipeline_loaded"] else "no",
                    r.get("switch_restarts", 0), recovery(r), r["error"] or ""] for r in res],
                  ["SWITCH", "ADDRESS", "REACHABLE", "PRIMARY", "PIPELINE", "RESTARTS",
                   "CRASH->PROGRAMMED", "ERROR"])


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


def _fmt_policy_show(res: dict) -> str:
    if not res["classes"]:
        return "no policy classes installed (every gradient packet gets the default class)"
    classes = _table([[c["job"], c["name"], f"{c['layers'][0]}-{c['layers'][1]}",
                       f"{c['mag_classes'][0]}-{c['mag_classes'][1]}", _pct(c["loss_bound"]),
                       _pct(c["pull_bound"]), c["priority"], "yes" if c["drop_eligible"] else "no",
                       c["slot"]] for c in res["classes"]],
                     ["JOB", "NAME", "LAYERS", "MAG", "LOSS", "PULL", "PRIO", "DROPPABLE", "SLOT"])
    jobs = _table([[j["job"], j["name"], _on_off(j["spray"]), _on_off(j["prioritize"]),
                    _on_off(j["selective_drop"])] for j in res.get("jobs", [])],
                  ["JOB", "NAME", "SPRAY", "PRIORITIZE", "SELECTIVE-DROP"])
    return classes + "\n\n" + jobs


def _fmt_apply(res: dict) -> str:
    lines = [f"{sw}: {s['inserted']} inserted, {s['modified']} modified, {s['deleted']} deleted"
             for sw, s in res["switches"].items()]
    if res.get("pending"):
        lines.append(f"not reachable (will get the policy when back): {', '.join(res['pending'])}")
    return "\n".join(lines) or "no switch reachable"


def _fmt_stats(res: dict) -> str:
    out = []
    for sw, st in res.items():
        if not st["reachable"]:
            out.append(f"{sw}: unreachable ({st.get('error') or 'no connection'})")
            continue
        out.append(f"{sw}: classes")
        out.append(_table([[c["job"], f"{c['layers'][0]}-{c['layers'][1]}",
                            f"{c['mag_classes'][0]}-{c['mag_classes'][1]}", c["seen"], c["dropped"],
                            c["marked"], _pct(c["loss"]), _pct(c["bound"]), _stage(c, "push"),
                            _stage(c, "pull"), "ok" if c["within_bound"] else "OVER"]
                           for c in st["classes"]],
                          ["JOB", "LAYERS", "MAG", "SEEN", "DROPPED", "MARKED", "LOSS", "BOUND",
                           "PUSH DROPPED/SEEN (BOUND)", "PULL DROPPED/SEEN (BOUND)", ""]))
        busy = [q for q in st["queues"] if q["tx"] or q["dropped"] or q["marked"]]
        out.append(f"{sw}: queues" + ("" if busy else " (no traffic yet)"))
        if busy:
            out.append(_table([[q["port"], q["prio"], q["tx"], q["dropped"], q["marked"]] for q in busy],
                              ["PORT", "PRIO", "TX", "DROPPED", "MARKED"]))
    return "\n".join(out)


def _stage(c: dict, stage: str) -> str:
    st = c.get(stage)
    if st is None:
        return "-"
    return f"{st['dropped']}/{st['seen']} ({_pct(st['bound'])})"


def _fmt_jobs(res: list[dict]) -> str:
    if not res:
        return "no jobs (a job appears once its hosts follow the controller: --controller)"
    out = [_table([[j["job"], j["name"], "yes" if j["running"] else "no", j["round"],
                    j["regime"], j["set_by"], j["epoch"],
                    f"{j['effective_round']}{' (pending)' if j['pending'] else ''}", j["violations"],
                    _adaptation(j["last_adaptation"])] for j in res],
                   ["JOB", "NAME", "RUNNING", "ROUND", "REGIME", "SET BY", "EPOCH", "FROM ROUND",
                    "VIOLATIONS", "LAST ADAPTATION"])]
    for j in res:
        laws = _laws(j.get("control_laws"))
        if laws:
            out.append(f"job {j['job']}: {laws}")
        if j["layers"]:
            out.append(f"job {j['job']}: push delivered (last round) vs bound")
            out.append(_table([[r["layer"], _pct(r["delivered"]), _pct(r["bound"]),
                                "ok" if r["delivered"] >= 1 - r["bound"] - 1e-9 else "BELOW",
                                r["violations"]] for r in j["layers"]],
                              ["LAYER", "DELIVERED", "BOUND", "", "VIOLATIONS"]))
    return "\n".join(out)


def _laws(laws: dict | None) -> str:
    """One line on a job's control laws (docs/control-laws.md)."""
    if not laws:
        return ""
    parts = [f"early close {laws['early_close']}"]
    if laws.get("deadline_s") is not None:
        parts[0] += f" {laws['deadline_s'] * 1000:.0f} ms"
    d = laws.get("last_deadline_adaptation")
    if d:
        parts[0] += (f" (round {d['round']}: {d['previous_ms']:.0f} -> {d['deadline_ms']:.0f} ms, "
                     f"{d['reason']})")
    if laws.get("pcn_threshold") is not None:
        p = laws.get("last_pcn_adaptation")
        parts.append(f"PCN threshold {laws['pcn_threshold']} (law {'on' if laws['pcn_law'] else 'off'}"
                     + (f"; last {p['previous']} -> {p['value']}: {p['reason']}" if p else "") + ")")
    return "; ".join(parts)


def _adaptation(a: dict | None) -> str:
    if not a:
        return "-"
    return f"round {a['round']}: {a['what']} (by {a['by']}, epoch {a['epoch']})"


def _fmt_phase(res: list[dict]) -> str:
    if not res:
        return "no jobs in the policy"
    return _table([[p["job"], p["name"], p["round"], p["regime"], p["set_by"],
                    "yes" if p["scheduled"] else "no", p["epoch"], p["effective_round"],
                    ", ".join(f"{b['layers'][0]}-{b['layers'][1]}: {_pct(b['push'])}" for b in p["bounds"])]
                   for p in res],
                  ["JOB", "NAME", "ROUND", "REGIME", "SET BY", "IN A PHASE", "EPOCH", "FROM ROUND",
                   "PUSH BOUNDS NOW"])


def _host_violations(jobs: list[dict]) -> str:
    """The jobs' host-side violations (from the PS reports), for `gradctl stats`."""
    if not jobs:
        return "host-side bound violations: no job reports (hosts without --controller)"
    return "host-side bound violations (PS reports): " + "; ".join(
        f"job {j['job']} {j['violations']} over {len(j['rounds'])} recent rounds, round {j['round']}"
        for j in jobs)


def _fmt_pcn(res: list[dict]) -> str:
    return _table([[r["switch"], r.get("port"), r.get("peer"), r.get("normal"), r.get("pcn"),
                    r.get("starts"), r.get("arrivals"), r.get("expired")] if r["reachable"]
                   else [r["switch"], "-", "-", "-", "-", "-", "-", f"unreachable: {r.get('error')}"]
                   for r in res],
                  ["SWITCH", "PORT", "PEER", "NORMAL", "PCN", "STARTS", "ARRIVALS", "EXPIRED"])


def _fmt_pcn_jobs(res: list[dict]) -> str:
    if not res:
        return "no job has a PCN setting (policy field `pcn` of a job)"
    rows = []
    for r in res:
        last = r.get("last_adaptation")
        rows.append([r["job"], r["name"], r["threshold"], "on" if r["adapt"] else "off",
                     f"{r['floor']}-{r['ceiling']}",
                     " ".join(f"{n}:{v}" for n, v in sorted(r["starts"].items())) or "-",
                     " ".join(f"{n}:{v}" for n, v in sorted(r["arrivals"].items())) or "-",
                     "-" if not last else f"{last['previous']} -> {last['value']}: {last['reason']}"])
    return _table(rows, ["JOB", "NAME", "THRESHOLD", "LAW", "BOUNDS", "STARTS", "ARRIVALS",
                         "LAST ADAPTATION"])


def _fmt_pcn_adapt(res: list[dict]) -> str:
    if not res:
        return "no change"
    return "\n".join(f"job {c['job']}: PCN threshold {c['previous']} -> {c['value']} ({c['reason']})"
                     for c in res)


FORMATS: dict[str, Callable[[Any], str]] = {
    "switches": _fmt_switches, "policy.show": _fmt_policy_show, "policy.apply": _fmt_apply,
    "policy.clear": _fmt_apply,
    "policy.set": _fmt_apply, "policy.phase": _fmt_apply, "stats": _fmt_stats,
    "policy.phase.show": _fmt_phase, "jobs": _fmt_jobs,
    "pcn.show": _fmt_pcn, "pcn.jobs": _fmt_pcn_jobs, "pcn.adapt": _fmt_pcn_adapt,
    "pcn.set": lambda r: f"{r['switch']} port {r['port']}: normal {r['normal']}, pcn {r['pcn']}",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gradctl`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = policy_set_problem(args)
    if problem:
        parser.error(problem)
    if getattr(args, "count", None) is not None and not args.watch:
        parser.error("--count needs --watch")
    sock = Path(args.socket) if args.socket else default_socket()
    try:
        cmd, cargs = request_of(args)
        if args.command == "policy" and args.action == "apply" and args.check:
            print(f"{args.file}: valid")
            return 0
        if getattr(args, "watch", False):
            return _watch(args, cmd, cargs, sock)
        result = run_direct(args, cmd, cargs, sock) if args.direct else api.call(sock, cmd, cargs)
        print(_render(args, cmd, result, sock))
    except errors.ControllerError as exc:
        print(f"gradctl: error: {exc}", file=sys.stderr)
        return 1
    if cmd == "switches" and not all(r["pipeline_loaded"] for r in result):
        return 3   # scripts can wait on "every switch ready"
    return 0


def _render(args: argparse.Namespace, cmd: str, result: Any, sock: Path) -> str:
    if args.json:
        return json.dumps(result, indent=2, sort_keys=True)
    text = FORMATS[cmd](result)
    if cmd == "stats" and not args.direct:
        text += "\n" + _host_violations(api.call(sock, "jobs"))
    return text


CLEAR = "\x1b[H\x1b[2J"   # cursor home, clear screen


def _watch(args: argparse.Namespace, cmd: str, cargs: dict[str, Any], sock: Path) -> int:
    """Refresh ``cmd`` every --interval seconds in place (a JSON document per refresh with
    --json) until Ctrl-C or --count refreshes."""
    if args.direct:
        raise errors.ConfigError("--watch needs the daemon (drop --direct)")
    shown = 0
    try:
        while args.count is None or shown < args.count:
            if shown:
                time.sleep(args.interval)
            text = _render(args, cmd, api.call(sock, cmd, cargs), sock)
            if args.json:
                print(json.dumps(json.loads(text)), flush=True)
            else:
                stamp = time.strftime("%H:%M:%S")
                print(f"{CLEAR}gradctl {args.command} every {args.interval:g} s ({stamp}, Ctrl-C stops)"
                      f"\n{text}", flush=True)
            shown += 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
