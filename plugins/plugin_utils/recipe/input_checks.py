# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks on operator input that no single knob owns: conflicting install methods, secrets put where
they would leak, paths and addresses that cannot work, releases too old for the model. Pure; each
error names the variable, what was given and what to do."""
from __future__ import annotations

import ipaddress
import re
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError, RecipeErrors
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import at_least
from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import secret_env_name

SECRET_HOME = {"HF_TOKEN": "sglang_hf_token", "HUGGING_FACE_HUB_TOKEN": "sglang_hf_token"}
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$")


def check_install_method(sel: dict[str, Any]) -> None:
    if sel.get("install_method") == "uv" and sel.get("image"):
        raise RecipeError(f"sglang_install_method is uv but sglang_image is set ({sel['image']}): a node runs SGLang "
                          "either from a uv venv or from an image. Drop sglang_image for uv nodes, or set "
                          "sglang_install_method: docker")


def check_env(sel: dict[str, Any]) -> None:
    """Every secret-named entry of sglang_env, each named once (knobs.check_env leaves their values to this)."""
    found = []
    for name in sel.get("env") or {}:
        if not secret_env_name(name):
            continue
        home = SECRET_HOME.get(str(name).upper())
        if home:
            found.append(f"sglang_env: {name} looks like a secret; sglang_env is rendered into the plan and shown in "
                         f"diffs. Put it in {home} (vault it), which reaches only the 0600 environment file")
        else:
            found.append(f"sglang_env: {name} looks like a secret; sglang_env is rendered into the plan and shown in "
                         "diffs. The collection carries two secrets itself, the Hugging Face token (sglang_hf_token) "
                         "and the server's API key (sglang_api_key); any other stays out of the inventory's plain "
                         "values: write it on the node in a 0600 file of your own and add it with a systemd drop-in "
                         "(EnvironmentFile=) for the serving unit")
    if found:
        raise RecipeErrors(found)


def _looks_relative(path: str) -> bool:
    """A hub id is org/name; anything else that is not absolute is a relative path."""
    return not path.startswith("/") and (path.startswith(".") or path.count("/") != 1)


def check_paths(sel: dict[str, Any]) -> None:
    for key, var in (("model_path", "sglang_model_path"), ("draft_model_path", "sglang_draft_model_path")):
        value = sel.get(key)
        if value and str(value).startswith("~"):
            raise RecipeError(f"{var}: {value!r} starts with ~, which neither systemd nor docker expands (and the "
                              "service user's home is not yours); give the absolute path on the node")
        if value and ":" in str(value):
            raise RecipeError(f"{var}: {value!r} holds a ':', which docker -v reads as the end of the path (the "
                              "weights are mounted at the same path in a container); rename the folder")
        if value and _looks_relative(str(value)):
            raise RecipeError(f"{var}: {value!r} is a relative path; systemd starts SGLang in /, so give an absolute "
                              "path on the node (or a hub id such as zai-org/GLM-5.3)")


def check_host(sel: dict[str, Any]) -> None:
    host = sel.get("host")
    if host:
        check_listen_address(host, "sglang_host", "sglang_port")


def check_listen_address(host: Any, variable: str, port_variable: str) -> None:
    """An address a server or router binds: an IP or a host name, without a port (that has a variable of its own)."""
    text = str(host)
    try:
        ipaddress.ip_address(text)
        return
    except ValueError:
        pass
    address, _sep, port = text.rpartition(":")
    if address and port.isdigit() and (HOSTNAME.match(address.strip("[]")) or _is_ip(address.strip("[]"))):
        raise RecipeError(f"{variable}: {text!r} holds a port; give the address alone ({variable}: {address}) and the "
                          f"port in {port_variable} ({port})")
    if not HOSTNAME.match(text):
        raise RecipeError(f"{variable}: {text!r} is neither an IP address nor a host name; use 0.0.0.0 (all), "
                          "127.0.0.1 (local only) or the address of one interface")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def check_release(sel: dict[str, Any], model_id: str, min_sglang: str) -> None:
    version = sel.get("sglang_version")
    if version and min_sglang and not at_least(str(version), min_sglang):
        raise RecipeError(f"sglang_version: {model_id} needs SGLang {min_sglang} or newer (the oldest release a "
                          f"cookbook image serves it with); {version} is older")


#: the checks that need nothing but the selection (the engine runs each, and names every mistake they find)
CHECKS = (check_install_method, check_env, check_paths, check_host)


def check_all(sel: dict[str, Any], model_id: str, min_sglang: str) -> None:
    for check in CHECKS:
        check(sel)
    check_release(sel, model_id, min_sglang)
