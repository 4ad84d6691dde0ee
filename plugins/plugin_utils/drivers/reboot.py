# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a driver role reboots a node, refuses to go on, or skips the reboot. Pure; shared by the NVIDIA and
ROCm roles so both behave the same way."""
from __future__ import annotations

from typing import Any


def decide(*, why: str, allow: bool, container: bool, control_node: bool, allow_var: str) -> dict[str, Any]:
    """A reboot is needed for `why` (empty: not needed). Never in containers or on the control node;
    refuse with the variable that allows it when not allowed."""
    if not why:
        return {"needed": False, "action": "none", "msg": ""}
    if container:
        return {"needed": True, "action": "skip", "msg": f"{why}; no reboot inside a container"}
    if control_node:
        return {"needed": True, "action": "refuse",
                "msg": f"{why}; this host runs Ansible itself and is never rebooted by it: reboot it by hand"}
    if not allow:
        return {"needed": True, "action": "refuse",
                "msg": f"a reboot is pending: {why}. Set {allow_var}: true to let the play reboot "
                       "(one host at a time with serial), or reboot by hand and run again"}
    return {"needed": True, "action": "reboot", "msg": why}
