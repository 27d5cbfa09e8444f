"""Run conditions read the switch's stats file only once it was rewritten after the snapshot
began (the embedded switch rewrites it every second)."""
import json
import os
import threading
import time

from experiments.conditions import switch_file_counter, wait_fresh_stats


def test_snapshot_waits_for_a_copy_written_after_it_began(tmp_path):
    log = str(tmp_path / "s1.log")
    stats = tmp_path / "s1.log.stats.json"
    stats.write_text(json.dumps({"queue_tail_drops": 5}))
    os.utime(stats, (time.time() - 10, time.time() - 10))      # an old copy
    since = time.time()

    def rewrite():
        time.sleep(0.2)
        stats.write_text(json.dumps({"queue_tail_drops": 9}))

    writer = threading.Thread(target=rewrite)
    writer.start()
    wait_fresh_stats([log], since, timeout=5)
    writer.join()
    assert switch_file_counter(log, "queue_tail_drops") == 9


def test_a_switch_without_a_stats_file_is_not_waited_for(tmp_path):
    wait_fresh_stats([str(tmp_path / "simple_switch.log")], time.time(), timeout=5)
    assert switch_file_counter(str(tmp_path / "simple_switch.log"), "queue_tail_drops") is None
