# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read YAML the way yaml.safe_load does, through libyaml's parser when PyYAML was built with it (the same safe
constructor and resolver; the pure-Python parser is ten times slower, which a site of thousands of hosts notices).
Pure; controller only."""
from __future__ import annotations

from typing import IO, Any, Union

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream: Union[str, bytes, IO[str]]) -> Any:
    """yaml.safe_load, with libyaml's parser when it is there."""
    return yaml.load(stream, Loader=LOADER)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
