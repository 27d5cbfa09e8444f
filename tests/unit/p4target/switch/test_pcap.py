"""pcap writer/reader round trip and rejection of non-pcap files."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4target.switch.errors import PcapError
from p4target.switch.pcap import LINKTYPE_ETHERNET, MAGIC_USEC, PcapWriter, read_pcap


def test_round_trip_keeps_frames_and_timestamps(tmp_path: Path) -> None:
    path = str(tmp_path / "veth1_out.pcap")
    frames = [b"\xff" * 14 + b"abc", bytes(range(60))]
    with PcapWriter(path) as writer:
        writer.write(frames[0], timestamp=1000.25)
        writer.write(frames[1], timestamp=1001.5)
    records = list(read_pcap(path))
    assert [r.data for r in records] == frames
    assert records[0].timestamp == pytest.approx(1000.25) and records[1].timestamp == pytest.approx(1001.5)
    magic, major, minor, _, _, _, linktype = struct.unpack("<IHHiIII", Path(path).read_bytes()[:24])
    assert (magic, major, minor, linktype) == (MAGIC_USEC, 2, 4, LINKTYPE_ETHERNET)


def test_frames_are_visible_before_close(tmp_path: Path) -> None:
    path = str(tmp_path / "a.pcap")
    writer = PcapWriter(path)
    writer.write(b"x" * 20, timestamp=1.0)
    assert [r.data for r in read_pcap(path)] == [b"x" * 20]
    writer.close()


def test_non_pcap_and_truncated_files_raise(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 24)
    with pytest.raises(PcapError, match="not a pcap"):
        list(read_pcap(str(bad)))
    good = tmp_path / "good.pcap"
    with PcapWriter(str(good)) as writer:
        writer.write(b"y" * 40, timestamp=2.0)
    good.write_bytes(good.read_bytes()[:-5])
    with pytest.raises(PcapError, match="truncated"):
        list(read_pcap(str(good)))
