"""verl's build of each role, as frozen data, computed once from the era table.

    inputs = {"actor": RoleInput("actor", prefix, megatron, otc), ...}
    sim = simulate(inputs, eras.ERAS[eras.ENGINE], model=spec)
    sim.owner                     # the role whose sizes initialize Megatron's parallel state
    sim.builds["actor"].sent      # the dict MindSpeed's repatch receives for the actor's build
    sim.builds["actor"].ns        # MindSpeed's process-wide namespace after it (repatch merges)
    sim.builds["actor"].built     # TransformerConfig as built: namespace, bridge view, the role's dict

The rules, the injection, the report and the guard read this one model of verl's build; the
integration tests check it against verl's real ``_mindspeed_repatch`` and worker code.
"""

from ._bridge import CONVERTER, MBRIDGE, MEGATRON_BRIDGE, bridge_kind, bridge_view
from ._build import Build, RoleInput, as_int, fmt
from ._repatch import Simulation, sent_dict, simulate
from ._roles import RawRole, active_roles, inherits_actor_otc, read_role, world_size

__all__ = [
    "Build", "CONVERTER", "as_int", "MBRIDGE", "MEGATRON_BRIDGE", "RawRole", "RoleInput", "Simulation", "active_roles",
    "bridge_kind", "bridge_view", "fmt", "inherits_actor_otc", "read_role", "sent_dict", "simulate", "world_size",
]
