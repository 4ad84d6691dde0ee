# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the collection's filter, test and lookup plugins once, in the controller's main process.

Ansible runs every task of every host in a worker process forked from its main process, and a worker that templates
one of the collection's filters loads them all: ansible-core's Jinja2 plugin loader imports every file of the
collection's plugins/filter to find the name (ansible/plugins/loader.py, Jinja2Loader.get_with_context), with the
planner modules they import - about 0.1-0.25 s of CPU, paid again by each task of each host, because a worker's
imports end with it. The strategy imports the class of each task's action plugin in the main process
(plugins/strategy/linear.py and free.py: action_loader.get(..., class_only=True)); the plan and node_probe actions
call load() when they are imported, so every worker forked after site.yml's first play finds the modules already
imported (the loader takes a module from sys.modules when it is there). `make bench` measures the difference.
"""
from __future__ import annotations

import importlib
import pkgutil

KINDS = ("filter", "test", "lookup")
PACKAGE = "ansible_collections.metalserve.sglang.plugins"


def load() -> list[str]:
    """Import every filter, test and lookup module of the collection, and read the data every role's probe reads
    (the roles' option types, data/node.yml); returns the modules' names. Idempotent."""
    loaded = []
    for kind in KINDS:
        try:
            package = importlib.import_module(f"{PACKAGE}.{kind}")
        except ImportError:  # a kind the collection does not have
            continue
        for info in pkgutil.iter_modules(package.__path__):
            if not info.ispkg:
                loaded.append(importlib.import_module(f"{package.__name__}.{info.name}").__name__)
    # cached once read (functools.lru_cache): a worker forked after this finds them read
    from ansible_collections.metalserve.sglang.plugins.plugin_utils import node  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime  # noqa: PLC0415

    runtime.option_types()
    node.table()
    loaded.extend(builtin_jinja_plugins())
    return loaded


def builtin_jinja_plugins() -> list[str]:
    """ansible-core's own filters and tests, wrapped for Jinja once: a worker templating `default` or `bool` otherwise
    imports and wraps every builtin filter and test module again (ansible/plugins/loader.py, Jinja2Loader.all)."""
    from ansible.plugins.loader import filter_loader, test_loader  # noqa: PLC0415

    names = []
    for loader in (filter_loader, test_loader):
        names.extend(str(getattr(plugin, "ansible_name", "") or plugin) for plugin in loader.all())
    return names
