# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How every action plugin of the collection reads its task's arguments.

The spec has one owner: ARGUMENT_SPEC in the plugin's module file (plugins/modules/<name>.py), which also documents
the options (ansible-test's validate-modules holds the two together). Ansible's own validator checks the task against
it before the plugin does anything, check mode included, and a wrong argument fails the task with the message the
module itself would give (tests/unit/test_action_arguments.py compares the two): "Unsupported parameters for
(metalserve.sglang.plan) module: ...", "missing required arguments: ...", "argument 'poll' is of type str ...".
Defaults come from the spec only.

This is ActionBase.validate_argument_spec with two differences, both for the message: it validates plain data (on
ansible-core 2.19 the task's values are tagged, and a type error would name the class
ansible.module_utils._internal._datatag._AnsibleTaggedStr instead of str), and it names the plugin by the task's
resolved name (ActionBase names a collection's action plugin by its Python module path,
ansible_collections.metalserve.sglang.plugins.action.plan).
"""
from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain


def validated(action: ActionBase, argument_spec: dict[str, Any]) -> dict[str, Any]:
    """The task's arguments checked against argument_spec, converted to its types, with its defaults, as plain data;
    AnsibleActionFail with Ansible's message when they do not fit."""
    args = to_plain(dict(action._task.args))
    result = ArgumentSpecValidator(argument_spec).validate(args)
    if result.error_messages:
        msg = result.errors.msg
        if isinstance(result.errors[0], UnsupportedError):
            msg = f"Unsupported parameters for ({action._task.resolved_action or action._task.action}) module: {msg}"
        raise AnsibleActionFail(msg)
    return {**args, **to_plain(result.validated_parameters)}
