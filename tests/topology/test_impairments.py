"""Link delay and loss requested in the description are really made (netem where the kernel
has it, else the embedded switch's egress), and the description says which one ran."""
import json
import re
from pathlib import Path

from topo.shaping import probe_qdiscs


def _rtts(output: str) -> list[float]:
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", output)]


def test_delay_and_loss_on_the_bottleneck(network):
    session = network("incast", workers=1, background=0, delay_ms=25, loss_pct=20)
    expected = "netem" if probe_qdiscs()["netem"] else "switch"
    data = json.loads(Path(session.config.topology_path).read_text())
    trunk = [link for link in data["links"] if {link["a"], link["b"]} == {"s1", "s2"}][0]
    assert trunk["impairment"] == expected and trunk["delay_ms"] == 25
    assert any(expected in line for line in session.impairment_lines)
    w1, ps = session.net.get("w1"), session.net.get("ps")
    out = w1.cmd(f"ping -c 60 -i 0.05 -W 1 {ps.IP()}")
    rtts = _rtts(out)
    assert rtts and min(rtts) >= 2 * 25 * 0.95, f"RTT below twice the one-way delay: {min(rtts)} ms"
    received = len(rtts)
    # Each direction loses 20 %: about 64 % of echoes come back; allow wide sampling noise.
    assert 20 <= received <= 55, f"{received}/60 echoes came back through a 20 %-loss link"
