"""Pipelines (BMv2: `init_pipelines`, `check_next_nodes`, `init_checksums`): action profiles,
tables, their keys, actions, next nodes, default entries and const entries; conditionals,
action calls; checksums."""
from __future__ import annotations

from typing import Any

from ... import hashes
from .values import _MAX_WIDTH, ValueChecks

KEY_MATCH_TYPES = frozenset({"exact", "lpm", "ternary", "valid", "range"})
TABLE_MATCH_TYPES = frozenset({"exact", "lpm", "ternary", "range"})
TABLE_TYPES = frozenset({"simple", "indirect", "indirect_ws"})


class PipelineChecks(ValueChecks):
    """Pipelines and their control nodes; checksums."""

    def pipelines(self) -> None:
        pipes = self.named("pipelines")
        for required in ("ingress", "egress"):
            if required not in pipes:
                self.fail("pipelines", f"simple_switch needs an '{required}' pipeline")
        self.profiles: dict[str, dict] = {}
        self.tables: dict[str, tuple[dict, str]] = {}
        for n, pipe in pipes.items():
            p = self.path_of("pipelines", n)
            nodes: dict[str, str] = {}
            for group in ("tables", "conditionals", "action_calls"):
                seen: set[int] = set()
                for i, node in enumerate(self.arr(pipe.get(group, []), f"{p}.{group}")):
                    np_ = f"{p}.{group}[{i}]"
                    self.obj(node, np_)
                    name = self.string(self.key(node, "name", np_), f"{np_}.name")
                    nid = self.integer(self.key(node, "id", np_), f"{np_}.id")
                    if name in nodes or name in self.tables or nid in seen:
                        self.fail(np_, f"duplicate control node name or id ('{name}', {nid})")
                    seen.add(nid)
                    nodes[name] = np_
                    if group == "tables":
                        self.tables[name] = (node, np_)
            for i, prof in enumerate(self.arr(pipe.get("action_profiles", []), f"{p}.action_profiles")):
                pp = f"{p}.action_profiles[{i}]"
                self.obj(prof, pp)
                pname = self.string(self.key(prof, "name", pp), f"{pp}.name")
                self.integer(self.key(prof, "id", pp), f"{pp}.id")
                if pname in self.profiles:
                    self.fail(f"{pp}.name", f"duplicate action profile '{pname}'")
                self.profiles[pname] = prof
                if "max_size" in prof:
                    self.integer(prof["max_size"], f"{pp}.max_size", 0)
                if "selector" in prof:
                    self.selector(prof["selector"], f"{pp}.selector")
            next_node = self.next_node_checker(nodes)
            for t in pipe.get("tables", []):
                self.table(t, self.tables[t["name"]][1], next_node)
            for i, c in enumerate(pipe.get("conditionals", [])):
                cp = f"{p}.conditionals[{i}]"
                self.expression(self.key(c, "expression", cp), f"{cp}.expression")
                if "true_next" not in c and "false_next" not in c:
                    self.fail(cp, 'a conditional needs "true_next" or "false_next"')
                next_node(c.get("true_next"), f"{cp}.true_next")
                next_node(c.get("false_next"), f"{cp}.false_next")
            for i, ac in enumerate(pipe.get("action_calls", [])):
                ap = f"{p}.action_calls[{i}]"
                a = self.action(self.key(ac, "action_id", ap), f"{ap}.action_id")
                if a.get("runtime_data"):
                    self.fail(f"{ap}.action_id", f"action '{a['name']}' takes parameters: it cannot be called directly")
                next_node(ac.get("next_node"), f"{ap}.next_node")
            next_node(self.key(pipe, "init_table", p), f"{p}.init_table")
        for n, c in self.counters.items():
            if c.get("is_direct"):
                self.ref(self.tables, "table", self.key(c, "binding", self.path_of("counter_arrays", n)),
                         f"{self.path_of('counter_arrays', n)}.binding")
        for n, m in self.meters.items():
            if m.get("is_direct"):
                self.ref(self.tables, "table", self.key(m, "binding", self.path_of("meter_arrays", n)),
                         f"{self.path_of('meter_arrays', n)}.binding")

    def selector(self, sel: Any, sp: str) -> None:
        self.obj(sel, sp)
        algo = self.string(self.key(sel, "algo", sp), f"{sp}.algo")
        if algo not in hashes.ALGORITHMS:
            self.fail(f"{sp}.algo", f"unknown hash algorithm '{algo}'")
        for k, inp in enumerate(self.arr(self.key(sel, "input", sp), f"{sp}.input")):
            self.calc_input(inp, f"{sp}.input[{k}]", only_fields=True)

    def next_node_checker(self, nodes: dict[str, str]):
        def check(v: Any, path: str) -> None:
            if v is not None and self.string(v, path) not in nodes:
                self.fail(path, f"unknown control node '{v}'")
        return check

    def action(self, aid: Any, path: str) -> dict:
        if type(aid) is not int or aid not in self.action_ids:
            self.fail(path, f"unknown action id {aid!r:.40}")
        return self.action_ids[aid]

    def action_data(self, data: Any, action: dict, path: str) -> None:
        self.arr(data, path)
        want = len(action.get("runtime_data", []))
        if len(data) != want:
            self.fail(path, f"action '{action['name']}' takes {want} argument(s), got {len(data)}")
        for k, d in enumerate(data):
            self.hexstr(d, f"{path}[{k}]")

    def table(self, t: dict, tp: str, next_node) -> None:
        keys = self.arr(t.get("key", []), f"{tp}.key")
        lpm = 0
        for k, key in enumerate(keys):
            kp = f"{tp}.key[{k}]"
            self.obj(key, kp)
            mt = self.string(self.key(key, "match_type", kp), f"{kp}.match_type")
            if mt not in self.key_match_types:
                self.fail(f"{kp}.match_type", f"invalid match type '{mt}'")
            lpm += mt == "lpm"
            target = self.key(key, "target", kp)
            if mt == "valid":
                self.header(target, f"{kp}.target")
            else:
                self.field(target, f"{kp}.target")
            if key.get("mask") is not None:
                self.hexstr(key["mask"], f"{kp}.mask")
            if "name" in key:
                self.string(key["name"], f"{kp}.name")
        if lpm > 1:
            self.fail(f"{tp}.key", "a table has at most one lpm match field")
        if self.string(t.get("match_type"), f"{tp}.match_type") not in TABLE_MATCH_TYPES:
            self.fail(f"{tp}.match_type", f"invalid table match type '{t['match_type']}'")
        ttype = self.string(self.key(t, "type", tp), f"{tp}.type")
        if ttype not in TABLE_TYPES:
            self.fail(f"{tp}.type", f"invalid table type '{ttype}'")
        if "max_size" not in t and "entries" not in t:
            self.fail(tp, 'a table needs "max_size" or "entries"')
        if "max_size" in t:
            self.integer(t["max_size"], f"{tp}.max_size", 0)
        for flag in ("with_counters", "support_timeout"):
            if t.get(flag) is not None:
                self.boolean(t[flag], f"{tp}.{flag}")
        if ttype != "simple":
            if "action_profile" in t:
                prof = self.ref(self.profiles, "action profile", t["action_profile"], f"{tp}.action_profile")
                if ttype == "indirect_ws" and "selector" not in self.profiles[prof]:
                    self.fail(f"{tp}.action_profile", f"action profile '{prof}' has no selector")
            elif "act_prof_name" in t:  # the older format: the table declares its own profile
                prof = self.string(t["act_prof_name"], f"{tp}.act_prof_name")
                if prof in self.profiles:
                    self.fail(f"{tp}.act_prof_name", f"duplicate action profile '{prof}'")
                self.profiles[prof] = {"name": prof, "selector": t.get("selector")}
                if ttype == "indirect_ws":
                    self.selector(self.key(t, "selector", tp), f"{tp}.selector")
            else:
                self.fail(tp, 'an indirect table needs "action_profile" (or "act_prof_name", the older format)')
        if t.get("direct_meters") is not None:
            dm = self.ref(self.meters, "meter array", t["direct_meters"], f"{tp}.direct_meters")
            if not self.meters[dm].get("is_direct"):
                self.fail(f"{tp}.direct_meters", f"meter array '{dm}' is not direct")
        # actions: by id, or by name as older compilers list them
        if "action_ids" in t:
            acts = [self.action(aid, f"{tp}.action_ids[{k}]")
                    for k, aid in enumerate(self.arr(t["action_ids"], f"{tp}.action_ids"))]
        else:
            acts = []
            for k, name in enumerate(self.arr(self.key(t, "actions", tp), f"{tp}.actions")):
                if self.string(name, f"{tp}.actions[{k}]") not in self.action_names:
                    self.fail(f"{tp}.actions[{k}]", f"unknown action '{name}'")
                acts.append(self.action_names[name])
        nt = self.obj(self.key(t, "next_tables", tp), f"{tp}.next_tables")
        if "__HIT__" in nt or "__MISS__" in nt:
            if set(nt) != {"__HIT__", "__MISS__"}:
                self.fail(f"{tp}.next_tables", 'with "__HIT__" or "__MISS__", next_tables has exactly those two keys')
        else:
            names = {a["name"] for a in acts}
            if set(nt) != names:
                missing = sorted(names - set(nt)) or sorted(set(nt) - names)
                self.fail(f"{tp}.next_tables", f"needs exactly one key per action of the table (check '{missing[0]}')")
        for k, v in nt.items():
            next_node(v, f"{tp}.next_tables.{k}")
        if "base_default_next" in t:
            next_node(t["base_default_next"], f"{tp}.base_default_next")
        if "default_entry" in t:
            dp = f"{tp}.default_entry"
            de = self.obj(t["default_entry"], dp)
            a = self.action(self.key(de, "action_id", dp), f"{dp}.action_id")
            for flag in ("action_const", "action_entry_const"):
                if de.get(flag) is not None and self.boolean(de[flag], f"{dp}.{flag}") and \
                        flag == "action_const" and ttype != "simple":
                    self.fail(f"{dp}.action_const", "only a simple table may have a const default action")
            self.action_data(self.key(de, "action_data", dp), a, f"{dp}.action_data")
        if "entries" in t:
            if ttype != "simple":
                self.fail(f"{tp}.entries", "only a simple table may have entries")
            for k, ent in enumerate(self.arr(t["entries"], f"{tp}.entries")):
                self.entry(ent, keys, f"{tp}.entries[{k}]")

    def entry(self, ent: Any, keys: list, ep: str) -> None:
        self.obj(ent, ep)
        mk = self.arr(self.key(ent, "match_key", ep), f"{ep}.match_key", len(keys))
        for k, (m, ref) in enumerate(zip(mk, keys)):
            mp = f"{ep}.match_key[{k}]"
            self.obj(m, mp)
            mt = m.get("match_type")
            if mt != ref["match_type"]:
                self.fail(f"{mp}.match_type", f"expected '{ref['match_type']}', got {mt!r:.40}")
            if mt == "valid":
                self.boolean(self.key(m, "key", mp), f"{mp}.key") if type(m.get("key")) is bool else \
                    self.hexstr(self.key(m, "key", mp), f"{mp}.key")
            elif mt == "range":
                self.hexstr(self.key(m, "start", mp), f"{mp}.start")
                self.hexstr(self.key(m, "end", mp), f"{mp}.end")
            else:
                self.hexstr(self.key(m, "key", mp), f"{mp}.key")
                if mt == "lpm":
                    self.integer(self.key(m, "prefix_length", mp), f"{mp}.prefix_length", 0, _MAX_WIDTH)
                if mt == "ternary" or (mt == "optional" and m.get("mask") is not None):
                    self.hexstr(self.key(m, "mask", mp), f"{mp}.mask")
        ae = self.obj(self.key(ent, "action_entry", ep), f"{ep}.action_entry")
        a = self.action(self.key(ae, "action_id", f"{ep}.action_entry"), f"{ep}.action_entry.action_id")
        self.action_data(self.key(ae, "action_data", f"{ep}.action_entry"), a, f"{ep}.action_entry.action_data")
        if "priority" in ent:
            self.integer(ent["priority"], f"{ep}.priority")

    def checksums(self) -> None:
        for n, c in self.named("checksums").items():
            p = self.path_of("checksums", n)
            self.field(self.key(c, "target", p), f"{p}.target", valid_ok=False)
            if c.get("type", "generic") != "generic":
                self.fail(f"{p}.type", f"checksum type {c.get('type')!r:.40} is not supported (only 'generic')")
            self.ref(self.calcs, "calculation", self.key(c, "calculation", p), f"{p}.calculation")
            for flag in ("verify", "update"):
                if c.get(flag) is not None:
                    self.boolean(c[flag], f"{p}.{flag}")
            self.expression(c.get("if_cond"), f"{p}.if_cond")
