#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""metalserve.sglang.node_state: read, in one module run, everything a role would otherwise check with a
dozen tasks, and say which of the wanted items differ from the node."""
from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type  # pylint: disable=invalid-name

DOCUMENTATION = r"""
---
module: node_state
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Compare the files, folders, links, accounts and units a role wants with the node, in one run
description:
  - Reads, without changing anything, the state of every item a role manages and returns the names of the
    items that differ from what the role wants (RV(differ)). A role then runs only the tasks for those items, so
    a run that has nothing to do costs one module execution per role instead of one per item.
  - Files are compared by SHA-256 of their content, and by mode, owner and group. The wanted content never
    travels to the node, only its hash (the role computes it on the controller), so secrets stay where they are.
options:
  files:
    description:
      - Files to compare. Each is C({name, path, sha256, mode, owner, group}); with C(absent=true) the file must
        not exist. Omitted keys are not compared.
      - The digests may be those of files holding secrets - run the task with C(no_log) (M(metalserve.sglang.node_probe)
        runs the module with logging off itself).
    type: list
    elements: dict
    default: []
  directories:
    description: Folders, C({name, path, mode, owner, group}).
    type: list
    elements: dict
    default: []
  links:
    description: Symbolic links, C({name, path, src}).
    type: list
    elements: dict
    default: []
  groups:
    description: System groups that must exist, C({name, group}).
    type: list
    elements: dict
    default: []
  users:
    description: Accounts that must exist, C({name, user, groups}) (C(groups) are supplementary groups it must be in).
    type: list
    elements: dict
    default: []
  units:
    description:
      - systemd units, C({name, unit, enabled, active}); C(enabled) and C(active) are the wanted states (omit one
        not to compare it). The unit's current C(ActiveState) and C(UnitFileState) are returned, and C(job), whether
        a start, stop or restart of it is still queued or running.
    type: list
    elements: dict
    default: []
  commands:
    description:
      - Read-only commands whose output a role compares itself, C({name, argv}); the output is returned under
        RV(state), the command is never run through a shell, and a missing program reads as C(rc=127).
    type: list
    elements: dict
    default: []
  listings:
    description:
      - Folders to list, C({name, path, pattern}) - the regular files (not links or folders, not hidden names)
        directly in C(path) whose names C(pattern), a Python regular expression, matches from their start, as
        M(ansible.builtin.find) with C(use_regex=true) and C(file_type=file) selects them; a missing folder lists
        nothing, one that cannot be read (or a pattern that does not compile) fails the module; returned under RV(state) as C(files) (sorted
        names). A role compares them itself (for example units of replicas the plan no longer has).
    type: list
    elements: dict
    default: []
    version_added: 0.4.0
  weights:
    description:
      - Checkpoint folders to check, C({name, path, source_path, hub}) - what is staged in C(path) against the
        manifest of its source (a copy source's folder, or C(hub) - C({endpoint, repo, revision, token_file}) - the
        Hub's repo info), as M(metalserve.sglang.weights_check) reads it - and C(after), names of other items of this
        request that must not differ for it to be read (the Hub token's file; the Hub is not asked meanwhile); returned
        under RV(state) as that module's
        answer (C(complete), C(manifest), C(missing), C(wrong_size), C(free_bytes), ...). The item differs when the copy
        is not complete, and when its manifest cannot be read (then its state holds only C(error), and the module
        does not fail - the role reads it again with M(metalserve.sglang.weights_check) after writing the token).
    type: list
    elements: dict
    default: []
    version_added: 0.4.0
extends_documentation_fragment:
  - metalserve.sglang.attributes.node
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Read what the server role manages
  metalserve.sglang.node_state:
    files:
      - {name: unit, path: /etc/systemd/system/sglang-glm-5.3.service, sha256: "{{ unit_text | hash('sha256') }}",
         mode: "0644", owner: root, group: root}
      - {name: token, path: /etc/sglang/glm-5.3.hf_token, absent: true}
    directories:
      - {name: config_dir, path: /etc/sglang, mode: "0755", owner: root, group: root}
    units:
      - {name: service, unit: sglang-glm-5.3.service, enabled: true}
  register: probe

- name: Write the unit only when it differs
  ansible.builtin.copy:
    dest: /etc/systemd/system/sglang-glm-5.3.service
    content: "{{ unit_text }}"
    mode: "0644"
  when: "'unit' in probe.differ"
"""

RETURN = r"""
differ:
  description: Names of the items that differ from what was asked (or cannot be read).
  returned: always
  type: list
  elements: str
  sample: [unit, service]
state:
  description:
    - What was found, per item name (files - exists, sha256, mode, owner, group; units - active, enabled, loaded,
      job; commands - rc, stdout; listings - exists, files; weights - the copy's check, or error).
  returned: always
  type: dict
"""

import grp  # noqa: E402
import hashlib  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.urls import open_url  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.module_utils import weights_manifest  # noqa: E402


def _owner(st):
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return owner, group


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _meta_differs(found, want):
    for key in ("mode", "owner", "group"):
        if want.get(key) is not None and str(want[key]) != str(found.get(key)):
            return True
    return False


def file_state(want):
    path = want["path"]
    absent = _truthy(want.get("absent", False))
    if not os.path.lexists(path):
        return {"exists": False}, not absent
    st = os.lstat(path)
    owner, group = _owner(st)
    found = {"exists": True, "mode": "%04o" % stat.S_IMODE(st.st_mode), "owner": owner, "group": group,
             "regular": stat.S_ISREG(st.st_mode)}
    if absent:
        return found, True
    if found["regular"] and want.get("sha256"):
        found["sha256"] = _sha256(path)
    differs = (not found["regular"] or (want.get("sha256") and found.get("sha256") != want["sha256"])
               or _meta_differs(found, want))
    return found, bool(differs)


def directory_state(want):
    path = want["path"]
    if not os.path.isdir(path) or os.path.islink(path):
        return {"exists": os.path.lexists(path), "directory": False}, True
    st = os.stat(path)
    owner, group = _owner(st)
    found = {"exists": True, "directory": True, "mode": "%04o" % stat.S_IMODE(st.st_mode), "owner": owner,
             "group": group}
    return found, _meta_differs(found, want)


def link_state(want):
    path = want["path"]
    if not os.path.islink(path):
        return {"exists": os.path.lexists(path), "link": False}, True
    target = os.readlink(path)
    return {"exists": True, "link": True, "src": target}, target != want.get("src")


def group_state(want):
    try:
        grp.getgrnam(want["group"])
        return {"exists": True}, False
    except KeyError:
        return {"exists": False}, True


def user_state(want):
    try:
        entry = pwd.getpwnam(want["user"])
    except KeyError:
        return {"exists": False}, True
    member_of = sorted(g.gr_name for g in grp.getgrall() if want["user"] in g.gr_mem)
    missing = sorted(set(want.get("groups") or []) - set(member_of))
    return {"exists": True, "uid": entry.pw_uid, "groups": member_of}, bool(missing)


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def unit_state(want, systemctl, run):
    if not systemctl:
        return {"known": False}, True
    _rc, stdout, _err = run([systemctl, "show", want["unit"], "--property", "ActiveState,UnitFileState,LoadState,Job"])
    props = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    found = {"active": props.get("ActiveState", ""), "enabled": props.get("UnitFileState", ""),
             "loaded": props.get("LoadState", ""), "job": props.get("Job", "") not in ("", "0")}
    differs = found["loaded"] != "loaded"
    if want.get("enabled") is not None:
        differs = differs or (found["enabled"] == "enabled") != _truthy(want["enabled"])
    if want.get("active") is not None:
        differs = differs or (found["active"] == "active") != _truthy(want["active"])
    return found, differs


def command_state(want, run):
    try:
        rc, stdout, _err = run(list(want["argv"]))
    except OSError:  # no such program: what a shell says
        return {"rc": 127, "stdout": ""}, False
    return {"rc": rc, "stdout": stdout.strip()}, False


class ListingError(Exception):
    """A folder a listing cannot read, or a pattern that is not a regular expression."""


def listing_state(want):
    path = want["path"]
    try:
        pattern = re.compile(want["pattern"])
        names = os.listdir(path)
    except FileNotFoundError:
        return {"exists": False, "files": []}, False
    except (OSError, re.error) as exc:
        raise ListingError("listing %s: cannot list %s with %r: %s" % (want["name"], path, want["pattern"], exc))
    files = []
    for entry in names:
        if entry.startswith(".") or not pattern.match(entry):  # find skips hidden names (hidden=false)
            continue
        try:
            regular = stat.S_ISREG(os.lstat(os.path.join(path, entry)).st_mode)
        except OSError:  # gone meanwhile
            regular = False
        if regular:
            files.append(entry)
    return {"exists": True, "files": sorted(files)}, False


def weights_state(want, fetch, differ=()):
    """What is staged in want['path'] against its source's manifest; a manifest that cannot be read is an answer
    (error), not a failure: a role that reuses this run's probe then checks again itself. Not read at all while an
    item named in want['after'] differs (the Hub token's file: the Hub is never asked without the token)."""
    waiting = [name for name in want.get("after") or [] if name in differ]
    if waiting:
        return {"error": "not read: %s not as wanted yet" % ", ".join(waiting)}, True
    try:
        found = weights_manifest.staged(want["path"], want.get("source_path"), want.get("hub"), fetch)
    # any failure to read is an answer here
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return {"error": str(exc)}, True
    return found, not found["complete"]


def probe(params, systemctl, run, fetch=None):
    """What the node has against what `params` want. `run(argv)` runs a read-only program and returns
    (rc, stdout, stderr), raising OSError when the program cannot be started (the module: run_command);
    `fetch(url, headers)` reads a URL as fetch_url does (the Hub's manifest of a weights item)."""
    state = {}
    differ = []
    checks = [("files", file_state), ("directories", directory_state), ("links", link_state),
              ("groups", group_state), ("users", user_state)]
    for key, check in checks:
        for want in params.get(key) or []:
            state[want["name"]], differs = check(want)
            if differs:
                differ.append(want["name"])
    for want in params.get("commands") or []:
        state[want["name"]], _differs = command_state(want, run)
    for want in params.get("listings") or []:
        state[want["name"]], _differs = listing_state(want)
    for want in params.get("units") or []:
        state[want["name"]], differs = unit_state(want, systemctl, run)
        if differs:
            differ.append(want["name"])
    for want in params.get("weights") or []:
        state[want["name"]], differs = weights_state(want, fetch, differ)
        if differs:
            differ.append(want["name"])
    return state, differ


def main():
    item = {"type": "list", "elements": "dict", "default": []}
    module = AnsibleModule(argument_spec={key: dict(item) for key in (
        "files", "directories", "links", "groups", "users", "units", "commands", "listings", "weights")},
        supports_check_mode=True)

    def run(argv):
        # the argv as given (no ~ or $VAR expansion); a program that cannot start raises OSError (rc 127 above)
        return module.run_command(argv, expand_user_and_vars=False, handle_exceptions=False)

    def fetch(url, headers):
        # open_url, not fetch_url: fetch_url ends the module on some failures (a certificate it cannot verify, a
        # proxy that refuses), and a manifest that cannot be read must be an answer here (weights_check fails on it)
        try:
            response = open_url(url, headers=headers, timeout=60)
        # urllib's, ssl's and socket's errors alike
        except Exception as exc:  # pylint: disable=broad-exception-caught
            return None, {"status": getattr(exc, "code", None), "msg": str(exc)}
        return response, {"status": response.getcode()}

    try:
        state, differ = probe(module.params, module.get_bin_path("systemctl"), run, fetch)
    except ListingError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, differ=differ, state=state)


if __name__ == "__main__":
    main()
