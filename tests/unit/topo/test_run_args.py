"""`python -m topo.run` rejects bad options with one line and exit 1, before starting anything."""
import pytest

from topo.run import main


@pytest.mark.parametrize("argv, needle", [
    (["--workers", "0"], "--workers 0 must be >= 1"),
    (["--rounds", "-3", "--delay-ms", "-1"], "--rounds -3 must be >= 1; --delay-ms -1 must be >= 0"),
    (["--loss-pct", "101"], "--loss-pct 101 must be within 0..100"),
    (["--bottleneck-pps", "0"], "--bottleneck-pps 0 must be > 0"),
    (["--bottleneck-pps", "nan"], "--bottleneck-pps nan must be > 0"),
    (["--bottleneck-bytes", "0"], "--bottleneck-bytes 0 must be a rate > 0 in bytes/s"),
    (["--bottleneck-bytes", "4e5", "--pace"], "--pace shares a bottleneck in packets/s"),
    (["--burst", "soon"], "bad --burst 'soon'"),
    (["--demo", "--no-controller"], "--demo needs the controller"),
    (["--build", "/nonexistent-build"], "program JSON /nonexistent-build/gradlane.json not found"),
    (["--tcp-cc", "reno"], "--tcp-cc and --tcp-ecn need --transport tcp"),
    (["--transport", "tcp", "--tcp-cc", "no-such-cc"], "--tcp-cc no-such-cc is not available here"),
    (["--jobs", "0"], "--jobs must be 1..8"),
    (["--jobs", "2", "--topo", "pcn"], "more than 1 only with --topo incast"),
    (["--min-workers", "4"], "--min-workers 4 must be within 1..--workers 3"),
    (["--ddp-model", "resnet"], "--ddp-model needs --ddp"),
    (["--ddp", "/nonexistent/train.py"], "--ddp /nonexistent/train.py: no such script"),
])
def test_bad_options_one_line_error(argv, needle, capsys, tmp_path):
    assert main([*argv, "--log-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_unknown_topology_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--topo", "ring"])
    assert info.value.code == 2 and "invalid choice: 'ring'" in capsys.readouterr().err
