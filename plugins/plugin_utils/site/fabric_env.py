# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a node's fabric facts to what its server needs: NCCL/GLOO variables and the PD transfer HCAs.

Pure. Used by placement when the node's metalserve_fabric facts are known; a render without facts
leaves these out rather than guessing.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

DEFAULT_ROCE_GID_INDEX = 3


def rail(fabric: dict[str, Any], wanted: Any = "auto") -> list[dict[str, Any]]:
    """The ACTIVE ports the instance uses: the named HCAs, or every ACTIVE port (InfiniBand before RoCE)."""
    ports = [dict(p, device=d["name"]) for d in fabric.get("devices") or [] for p in d.get("ports") or []
             if p.get("state") == "ACTIVE"]
    if wanted not in (None, "auto", ""):
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        return [p for p in ports if p["device"] in names]
    infiniband = [p for p in ports if p.get("link_layer") == "InfiniBand"]
    return infiniband or [p for p in ports if p.get("link_layer") == "Ethernet"]


def nccl_env(ports: list[dict[str, Any]], interface: str | None) -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    warnings: list[str] = []
    if interface:
        env["NCCL_SOCKET_IFNAME"] = interface
        env["GLOO_SOCKET_IFNAME"] = interface
    if not ports:
        warnings.append("no ACTIVE InfiniBand/RoCE port on the chosen rail: NCCL and Mooncake will use TCP")
        return env, warnings
    env["NCCL_IB_HCA"] = "=" + ",".join(f"{p['device']}:{p['port']}" for p in ports)
    roce = [p for p in ports if p.get("link_layer") == "Ethernet"]
    if roce:
        indexes = Counter(p.get("roce_v2_gid_index") for p in roce if p.get("roce_v2_gid_index") is not None)
        if not indexes:
            warnings.append(f"no RoCE v2 GID with an IPv4 address on {', '.join(p['device'] for p in roce)}; "
                            f"NCCL_IB_GID_INDEX={DEFAULT_ROCE_GID_INDEX} assumed")
            env["NCCL_IB_GID_INDEX"] = str(DEFAULT_ROCE_GID_INDEX)
        else:
            index, _count = indexes.most_common(1)[0]
            env["NCCL_IB_GID_INDEX"] = str(index)
            if len(indexes) > 1:
                warnings.append(f"RoCE v2 GID indexes differ between ports ({dict(indexes)}); NCCL_IB_GID_INDEX={index}")
    return env, warnings


def fabric_settings(fabric: dict[str, Any] | None, *, multi: bool, pd: bool, interface: str | None,
                    hcas: Any = "auto", ib_device_set: bool = False) -> dict[str, Any]:
    """{env, pd_ib_device, warnings} for one server of a multi-node or PD instance (else nothing).

    pd_ib_device is set only where auto-detection is ambiguous (several HCAs on the rail) or the
    operator named HCAs, and the operator did not give sglang_pd.ib_device themselves."""
    if not (multi or pd):
        return {"env": {}, "pd_ib_device": None, "warnings": []}
    if fabric is None:  # no facts (render.yml): only what the inventory says
        env = {"NCCL_SOCKET_IFNAME": interface, "GLOO_SOCKET_IFNAME": interface} if interface else {}
        return {"env": env, "pd_ib_device": None, "warnings": []}
    ports = rail(fabric, hcas)
    env, warnings = nccl_env(ports, interface)
    devices = sorted({p["device"] for p in ports})
    named = hcas not in (None, "auto", "")
    pd_ib_device = ",".join(devices) if pd and not ib_device_set and (len(devices) > 1 or (named and devices)) \
        else None
    if named:
        missing = sorted(set([hcas] if isinstance(hcas, str) else hcas) - set(devices))
        if missing:
            warnings.append(f"sglang_ib_hcas names {', '.join(missing)}, which have no ACTIVE port here")
    return {"env": env, "pd_ib_device": pd_ib_device, "warnings": warnings}
