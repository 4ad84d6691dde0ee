# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.router_args: a thin plugin over plugins/plugin_utils/recipe/engine.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: router_args
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The argv after C(python3 -m sglang_router.launch_router)
description:
  - PD mode gives C(--pd-disaggregation), one C(--prefill URL [BOOTSTRAP_PORT]) per prefill worker and one C(--decode
    URL) per decode worker; plain mode gives C(--worker-urls).
  - Refuses a PD router without both a prefill and a decode worker, and a plain router without workers.
positional: _input
options:
  _input:
    description:
      - C({mode, prefill, decode, workers, host, port, policy, extra_args}); C(prefill) items are URLs or C({url,
        bootstrap_port}).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Router in front of one prefill and one decode worker
  ansible.builtin.debug:
    msg: "{{ {'prefill': ['http://10.0.0.1:30000'], 'decode': ['http://10.0.0.2:30100']} | metalserve.sglang.router_args }}"
"""

RETURN = r"""
_value:
  description: argv tokens.
  type: list
  elements: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine  # noqa: E402


def router_args(spec: dict[str, Any]) -> list[str]:
    return recipe_engine.router_args(spec)


class FilterModule:
    """The filter metalserve.sglang.router_args."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"router_args": wrap(router_args)}
