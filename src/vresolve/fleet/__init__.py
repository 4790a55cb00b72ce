"""Fleets: one stack for a whole cluster.

- :mod:`.inventory`: the ``vresolve.fleet/1`` inventory (named hosts, failed nodes), checked where it enters;
- :mod:`.k8s`: Kubernetes nodes from GPU Feature Discovery's labels (pure);
- :mod:`.ray`: each Ray node's own detection, in a task pinned to it (needs ``vresolve[ray]``);
- :mod:`.plan`: groups, the common stack per CPU architecture, the nodes that hold it back (pure).
"""

from __future__ import annotations

from .inventory import SCHEMA, Failed, FleetHost, Inventory, InventoryError, inventory_from_json
from .plan import Blocker, FleetPlan, Group, plan_fleet

__all__ = ["SCHEMA", "Failed", "FleetHost", "Inventory", "InventoryError", "inventory_from_json", "Blocker",
           "FleetPlan", "Group", "plan_fleet"]
