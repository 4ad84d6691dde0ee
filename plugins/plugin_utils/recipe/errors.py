# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception the recipe engine raises."""
from __future__ import annotations


class RecipeError(ValueError):
    """A selection the engine cannot render.

    The message names the variable to change, what was asked and what would work; the filter and
    action plugins pass it on unchanged as AnsibleFilterError / a failed task.
    """
