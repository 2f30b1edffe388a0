"""`pluginsdk slurm reconcile`: repair what the controller and the engine disagree on.

| case | seen as | repair |
|---|---|---|
| node powered up, no machine | Slurm state without POWERED_DOWN/POWERING_DOWN, no active machine named after it, not DOWN already | node DOWN with reason (its job is requeued) |
| machine, node powered down | an active machine named after a node set's node that Slurm holds POWERED_DOWN or POWERING_DOWN | machine returned |
| machine, node unknown | an active machine named after a node set's node the controller does not know | machine returned |
| never registered | node POWERING_UP (or NOT_RESPONDING) and its machine launched more than the registration timeout ago | machine returned, node DOWN with reason |

Machines not named after a configured node are not Slurm's and are never touched. Every repair is one line
of JSON on stdout (`node`, `machine`, `case`, `action`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .nodes import NodeMap
from .scontrol import Scontrol

if TYPE_CHECKING:
    from ..models import Machine
    from ..sdk import PluginSDK

__all__ = ["reconcile"]


async def reconcile(sdk: PluginSDK, registration_timeout: float) -> list[dict[str, str]]:
    settings = sdk.settings.slurm
    known = NodeMap(settings).template
    scontrol = Scontrol(settings.scontrol)
    nodes = await scontrol.nodes()
    machines: dict[str, Machine] = {}
    async for machine in sdk.iterate("list_machines", active_only=True, limit=1000):
        if machine.name in known and machine.return_request_id is None:
            machines.setdefault(machine.name, machine)
    now = datetime.now(UTC)
    fixes: list[dict[str, str]] = []
    down: dict[str, list[str]] = {}
    give_back: list[Machine] = []
    for name in known:
        node, machine = nodes.get(name), machines.get(name)
        if machine is None:
            if node is not None and node.powered_up and "DOWN" not in node.state:
                down.setdefault("powered up without a machine", []).append(name)
                fixes.append({"node": name, "case": "powered up without a machine", "action": "down"})
            continue
        if node is None or not node.powered_up:
            give_back.append(machine)
            case = "machine for an unknown node" if node is None else "machine for a powered-down node"
            fixes.append({"node": name, "machine": machine.machine_id, "case": case, "action": "return"})
            continue
        age = (now - machine.created_at).total_seconds()
        if not node.registered and age > registration_timeout:
            give_back.append(machine)
            down.setdefault(f"did not register within {registration_timeout:.0f} s", []).append(name)
            fixes.append(
                {"node": name, "machine": machine.machine_id, "case": "never registered", "action": "return, down"}
            )
    for reason, names in down.items():
        await scontrol.down(names, reason)
    if give_back:
        await sdk.create_return_request(machine_ids=[m.machine_id for m in give_back], force_return=True)
    return fixes
