#!/usr/bin/env python3
"""simple_switch_CLI as p4c's STF runner sees it during `make check-reference`.

The runner turns every STF `add` into `table_add`, which BMv2 refuses on a table with an action
profile or selector (WRONG_TABLE_TYPE): here such an entry gets an action-profile member of its
own (`act_prof_create_member` + `table_indirect_add`), as our STF runner does. Range keys arrive
as one number (`lo << RANGE_SHIFT | hi`, see `check_reference.runner_stf`) and leave as BMv2's
`lo->hi`. Everything else goes to the real CLI ($CHECK_REFERENCE_CLI) unchanged.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

RANGE_SHIFT = 128


def translate(line: str, info: dict, members: dict[str, int]) -> list[str]:
    """The CLI commands for one command of the runner."""
    words = line.split()
    table = info["tables"].get(words[1]) if len(words) > 2 and words[0] == "table_add" else None
    if table is None:
        return [line]
    action = words[2]
    keys_text, _, rest_text = " ".join(words[3:]).partition("=>")
    keys = keys_text.split()
    for i, kind in enumerate(table["keys"]):
        if kind == "range" and i < len(keys):
            v = int(keys[i], 0)
            keys[i] = f"{v >> RANGE_SHIFT}->{v & ((1 << RANGE_SHIFT) - 1)}"
    rest = rest_text.split()
    if not table["profile"]:
        return [" ".join(["table_add", words[1], action, *keys, "=>", *rest])]
    n = info["params"][action]
    handle = members.get(table["profile"], 0)
    members[table["profile"]] = handle + 1
    return [" ".join(["act_prof_create_member", table["profile"], action, *rest[:n]]),
            " ".join(["table_indirect_add", words[1], *keys, "=>", str(handle), *rest[n:]])]


def main() -> int:
    with open(os.environ["CHECK_REFERENCE_TABLES"]) as f:
        info = json.load(f)
    cli = subprocess.Popen([os.environ["CHECK_REFERENCE_CLI"]] + sys.argv[1:], stdin=subprocess.PIPE, text=True)
    assert cli.stdin is not None
    members: dict[str, int] = {}
    for line in sys.stdin:
        for command in translate(line.rstrip("\n"), info, members):
            cli.stdin.write(command + "\n")
        cli.stdin.flush()
    cli.stdin.close()
    return cli.wait()


if __name__ == "__main__":
    sys.exit(main())
