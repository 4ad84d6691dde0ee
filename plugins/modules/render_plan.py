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
  - Plans the site from the inventory with the same planner as M(metalserve.sglang.plan) (the plan, then the site
    checker over every host's files), and fails with one message naming every host when it refuses; nothing is
    written then.
  - Writes, for each planned host, every file a stage puts on the node under C(<host>/files/), each stage's view
    (C(<host>/<stage>.yml)), C(serve.args) and C(serve.sh) (or C(router.args) and C(router.sh) for routers),
    C(PLAN.md), the monitoring configuration, and the site's plan artifact (C(plan.json), see O(artifact)).
  - Writes only files whose content or mode changed, atomically. Nothing is written in check mode.
options:
  dest:
    description: Directory to write into.
    type: path
    required: true
  variable_errors:
    description:
      - The C(errors) of M(metalserve.sglang.check_variables) run with C(fail_on_error=false); a site with any is
        refused with them and the plan's own problems in one message, and nothing is written.
    type: dict
  check_variables:
    description:
      - Judge every host's variables against every role's argument specs here, as M(metalserve.sglang.check_variables)
        does, from the values the plan reads (each host's variables are templated once); its refusals join the plan's
        in one message. V(false) leaves it to O(variable_errors).
    type: bool
    default: true
    version_added: 0.2.0
  template_dir:
    description: Directory with the templates, to replace the collection's own.
    type: path
  artifact:
    description:
      - Where to write the site's plan artifact (every host's plan with the digests of its inputs, which runs over
        part of the site apply; see M(metalserve.sglang.plan)), relative to the working directory. Defaults to
        C(plan.json) in O(dest).
    type: path
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  diff_mode: {support: full}
notes:
  - It writes on the controller only.
"""

EXAMPLES = r"""
- name: Render the site
  metalserve.sglang.render_plan:
    dest: "{{ sglang_render_dir | default('') | metalserve.sglang.output_path }}"
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
timings:
  description:
    - Wall seconds per step of this render, where a big site's render spends its time
    - C(inputs) (reading every host's variables from Ansible), C(plan) (plan_site with the site checker),
      C(preflight) (only with cached facts), C(render) (the files' text), C(artifact) (the plan artifact's text),
      C(write) (compare and write),
      C(stale) (find and remove files no longer rendered). Steps that did not run are absent.
  returned: always
  type: dict
  sample: {inputs: 1.2, plan: 2.9, preflight: 0.0, render: 0.7, write: 1.1, stale: 0.6}
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"dest": {"type": "path", "required": True},
                 "template_dir": {"type": "path"},
                 "variable_errors": {"type": "dict"},
                 "check_variables": {"type": "bool", "default": True},
                 "artifact": {"type": "path"}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.render_plan runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
