# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attribute support values the collection's modules and action plugins share, one set per way of running.

ansible.builtin.action_common_attributes holds the attributes' descriptions; these fragments hold only the support
values. A plugin takes the one set that says where it runs and states in its own DOCUMENTATION only what sets it
apart (render_plan's diff, weights_wait's missing check mode, the facts modules' facts): a module's own key always
wins over a fragment's.

Between fragments, the first one listed that sets a key keeps its value, and the builtin fragment sets the platform's
support to N/A: list these before ansible.builtin.action_common_attributes, as the modules do
(tests/unit/test_plugin_docs.py reads every module's merged attributes back through ansible-doc).
"""
from __future__ import annotations


class ModuleDocFragment:
    # Action plugins that run on the controller only: they read the inventory, facts already gathered and the
    # collection's data/, never connect to a host (_requires_connection = False, so any target platform will do),
    # and support check mode.
    CONTROLLER = r"""
attributes:
  check_mode: {support: full}
  diff_mode: {support: none}
  platform: {support: full, platforms: all}
  action: {support: full}
  async: {support: none}
  bypass_host_loop: {support: none}
notes:
  - This is an action plugin; it runs on the controller and never connects to the hosts.
"""

    # Action plugins that run modules on the node (POSIX) from the controller; check and diff support are their own.
    NODE_ACTION = r"""
attributes:
  platform: {support: full, platforms: posix}
  action: {support: full}
  async: {support: none}
  bypass_host_loop: {support: none}
"""

    # Modules that run on the node (POSIX), with no action plugin, and only read it (full check mode, no diff).
    NODE = r"""
attributes:
  check_mode: {support: full}
  diff_mode: {support: none}
  platform: {support: full, platforms: posix}
"""
