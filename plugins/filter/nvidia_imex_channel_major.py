# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_imex_channel_major: a thin plugin over plugins/plugin_utils/drivers/imex.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_imex_channel_major
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The major number of nvidia-caps-imex-channels in /proc/devices
description:
  - The major a task of your own needs to make C(/dev/nvidia-caps-imex-channels/channel0) on a running module (NVIDIA's
    IMEX guide, manual channel creation); logic in plugins/plugin_utils/drivers/imex.py. The nvidia_driver role itself
    makes the channel with the plan's C(metalserve-imex-channel0) program, which reads the same major.
positional: _input
options:
  _input:
    description: The text of /proc/devices.
    type: str
    required: true
"""

RETURN = r"""
_value:
  description: The major number, or none when the driver has not registered the device.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as im  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_imex_channel_major(proc_devices: str) -> int | None:
    return im.channel_major(proc_devices or "")


class FilterModule:
    """The filter metalserve.sglang.nvidia_imex_channel_major."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_imex_channel_major": wrap(nvidia_imex_channel_major)}
