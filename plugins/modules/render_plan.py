# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.render_plan action plugin (it runs on the controller)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: render_plan
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Write the rendered/ folder of a site plan on the controller
description:
  - Renders, for each planned host, C(serve.args), C(serve.env) (secrets masked) and C(serve.sh), or
    C(router.args) and C(router.sh) for routers, plus C(PLAN.md), from the templates in
    C(playbooks/templates/render/).
  - Writes only files whose content or mode changed, atomically. Nothing is written in check mode.
options:
  dest:
    description: Directory to write into.
    type: path
    required: true
  plans:
    description: The C(plans) returned by M(metalserve.sglang.plan).
    type: dict
    required: true
  template_dir:
    description: Directory with the templates, to replace the collection's own.
    type: path
  preflight:
    description: The C(report) of M(metalserve.sglang.preflight); adds a Preflight column to PLAN.md.
    type: dict
  artifact:
    description:
      - Where to write the site's plan artifact (every host's plan with the digests of its inputs, which runs over
        part of the site apply; see M(metalserve.sglang.plan)), relative to the working directory. Defaults to
        C(plan.json) in O(dest). Written only when the action plans the site itself (without O(plans)).
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    support: full
    platforms: all
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
notes:
  - This is an action plugin; it writes on the controller and never connects to the hosts.
"""

EXAMPLES = r"""
- name: Render the site
  metalserve.sglang.render_plan:
    dest: "{{ playbook_dir }}/../rendered"
    plans: "{{ site_plan.plans }}"
  run_once: true
"""

RETURN = r"""
files:
  description: Every file the plan renders, relative to dest.
  returned: always
  type: list
  elements: str
changed_files:
  description: The files written (or that would be written in check mode).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def main() -> None:
    module = AnsibleModule(argument_spec={"dest": {"type": "path", "required": True},
                                          "plans": {"type": "dict", "required": True},
                                          "template_dir": {"type": "path"}, "preflight": {"type": "dict"},
                                          "artifact": {"type": "path"}},
                           supports_check_mode=True)
    module.fail_json(msg="metalserve.sglang.render_plan runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
