# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the reboot decision both driver roles share (plugins/plugin_utils/drivers/reboot.py), as the
nvidia_reboot and rocm_reboot filters take them."""
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  container:
    description: Whether the node is a container; a pending reboot is then skipped (C(action=skip)).
    type: bool
    required: true
  control_node:
    description: Whether the node runs Ansible itself; a pending reboot is then refused, to be done by hand.
    type: bool
    required: true
"""
