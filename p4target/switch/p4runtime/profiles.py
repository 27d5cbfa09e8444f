"""Action profile members and groups (controller-chosen ids mapped onto engine handles)."""
from __future__ import annotations

from typing import Iterator

from p4.v1 import p4runtime_pb2

from .errors import Code, P4RuntimeError, invalid, not_found, unimplemented
from .state import PipelineState
from .translate import ProfileInfo

Update = p4runtime_pb2.Update


class ActionProfiles:
    """Write and read `ActionProfileMember` and `ActionProfileGroup` entities."""

    def __init__(self, state: PipelineState) -> None:
        self.s = state
        self.tr = state.translator
        self.engine = state.engine

    # -- members -------------------------------------------------------------------------
    def write_member(self, op: int, m: p4runtime_pb2.ActionProfileMember) -> None:
        prof = self.tr.profile(m.action_profile_id)
        ids = self.s.profiles[prof.id]
        if op == Update.DELETE:
            handle = self._member_handle(prof, m.member_id)
            if self.s.refs.get((prof.id, "member", m.member_id)):
                raise P4RuntimeError(Code.FAILED_PRECONDITION,
                                     f"member {m.member_id} of '{prof.name}' is used by table entries")
            in_groups = [g for g, mbrs in ids.group_members.items() if m.member_id in mbrs]
            if in_groups:
                raise P4RuntimeError(Code.FAILED_PRECONDITION,
                                     f"member {m.member_id} of '{prof.name}' is in group {in_groups[0]}")
            self.engine.act_prof_delete_member(prof.name, handle)
            del ids.members[m.member_id]
            del ids.member_ids[handle]
            return
        name, data = self._member_action(prof, m)
        if op == Update.INSERT:
            if m.member_id in ids.members:
                raise P4RuntimeError(Code.ALREADY_EXISTS, f"member {m.member_id} of '{prof.name}' exists")
            handle = self.engine.act_prof_add_member(prof.name, name, data)
            ids.members[m.member_id] = handle
            ids.member_ids[handle] = m.member_id
        elif op == Update.MODIFY:
            self.engine.act_prof_modify_member(prof.name, self._member_handle(prof, m.member_id), name, data)
        else:
            raise invalid("update type must be INSERT, MODIFY or DELETE")

    def _member_action(self, prof: ProfileInfo, m) -> tuple[str, list[int]]:
        if not m.HasField("action"):
            raise invalid(f"member {m.member_id} of '{prof.name}' has no action")
        for tid in prof.table_ids:
            table = self.tr.tables.get(tid)
            if table is not None and m.action.action_id in table.action_scopes:
                self.tr.check_table_action(table, m.action.action_id, default=False)
                break
        else:
            raise invalid(f"action id {m.action.action_id} is not an action of the tables of '{prof.name}'")
        return self.tr.action_to_engine(m.action)

    def _member_handle(self, prof: ProfileInfo, member_id: int) -> int:
        handle = self.s.profiles[prof.id].members.get(member_id)
        if handle is None:
            raise not_found(f"no member {member_id} in action profile '{prof.name}'")
        return handle

    def read_members(self, m: p4runtime_pb2.ActionProfileMember) -> Iterator[p4runtime_pb2.Entity]:
        profs = [self.tr.profile(m.action_profile_id)] if m.action_profile_id else list(self.tr.profiles.values())
        for prof in profs:
            ids = self.s.profiles[prof.id]
            members = [m.member_id] if m.member_id else sorted(ids.members)
            for mid in members:
                handle = ids.members.get(mid)
                if handle is None:
                    continue
                name, data = self.engine.action_profile(prof.name).members[handle]
                out = p4runtime_pb2.ActionProfileMember(action_profile_id=prof.id, member_id=mid)
                self.tr.action_from_engine(name, data, out.action)
                yield p4runtime_pb2.Entity(action_profile_member=out)

    # -- groups --------------------------------------------------------------------------
    def write_group(self, op: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
        prof = self.tr.profile(g.action_profile_id)
        if not prof.with_selector:
            raise invalid(f"action profile '{prof.name}' has no selector: it has no groups")
        ids = self.s.profiles[prof.id]
        if op == Update.DELETE:
            handle = self._group_handle(prof, g.group_id)
            if self.s.refs.get((prof.id, "group", g.group_id)):
                raise P4RuntimeError(Code.FAILED_PRECONDITION,
                                     f"group {g.group_id} of '{prof.name}' is used by table entries")
            self.engine.act_prof_delete_group(prof.name, handle)
            for key in (ids.groups, ids.group_members, ids.group_max_size):
                key.pop(g.group_id, None)
            del ids.group_ids[handle]
            return
        members = self._group_members(prof, g)
        if op == Update.INSERT:
            if g.group_id in ids.groups:
                raise P4RuntimeError(Code.ALREADY_EXISTS, f"group {g.group_id} of '{prof.name}' exists")
            if prof.max_group_size and g.max_size > prof.max_group_size:
                raise P4RuntimeError(Code.RESOURCE_EXHAUSTED,
                                     f"group max_size {g.max_size} exceeds '{prof.name}' limit {prof.max_group_size}")
            handle = self.engine.act_prof_create_group(prof.name)
            ids.groups[g.group_id] = handle
            ids.group_ids[handle] = g.group_id
            ids.group_members[g.group_id] = []
            ids.group_max_size[g.group_id] = g.max_size
        elif op == Update.MODIFY:
            handle = self._group_handle(prof, g.group_id)
            if g.max_size and g.max_size != ids.group_max_size.get(g.group_id, 0):
                raise invalid(f"group {g.group_id} of '{prof.name}': max_size cannot change")
        else:
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        self._set_members(prof, g.group_id, members)

    def _group_members(self, prof: ProfileInfo, g) -> list[int]:
        ids = self.s.profiles[prof.id]
        out: list[int] = []
        for mem in g.members:
            if mem.member_id not in ids.members:
                raise not_found(f"group {g.group_id}: no member {mem.member_id} in '{prof.name}'")
            if mem.member_id in out:
                raise invalid(f"group {g.group_id}: member {mem.member_id} listed twice")
            if mem.weight > 1:
                raise unimplemented("member weights above 1 are not supported")
            out.append(mem.member_id)
        limit = g.max_size or self.s.profiles[prof.id].group_max_size.get(g.group_id, 0) or prof.max_group_size
        if limit and len(out) > limit:
            raise P4RuntimeError(Code.RESOURCE_EXHAUSTED,
                                 f"group {g.group_id} of '{prof.name}': {len(out)} members exceed max size {limit}")
        return out

    def _set_members(self, prof: ProfileInfo, group_id: int, members: list[int]) -> None:
        ids = self.s.profiles[prof.id]
        handle = ids.groups[group_id]
        current = ids.group_members[group_id]
        for mid in [m for m in current if m not in members]:
            self.engine.act_prof_remove_member_from_group(prof.name, ids.members[mid], handle)
        for mid in [m for m in members if m not in current]:
            self.engine.act_prof_add_member_to_group(prof.name, ids.members[mid], handle)
        ids.group_members[group_id] = list(members)

    def _group_handle(self, prof: ProfileInfo, group_id: int) -> int:
        handle = self.s.profiles[prof.id].groups.get(group_id)
        if handle is None:
            raise not_found(f"no group {group_id} in action profile '{prof.name}'")
        return handle

    def read_groups(self, g: p4runtime_pb2.ActionProfileGroup) -> Iterator[p4runtime_pb2.Entity]:
        profs = [self.tr.profile(g.action_profile_id)] if g.action_profile_id else list(self.tr.profiles.values())
        for prof in profs:
            ids = self.s.profiles[prof.id]
            groups = [g.group_id] if g.group_id else sorted(ids.groups)
            for gid in groups:
                if gid not in ids.groups:
                    continue
                out = p4runtime_pb2.ActionProfileGroup(action_profile_id=prof.id, group_id=gid,
                                                       max_size=ids.group_max_size.get(gid, 0))
                for mid in ids.group_members[gid]:
                    out.members.add(member_id=mid, weight=1)
                yield p4runtime_pb2.Entity(action_profile_group=out)
