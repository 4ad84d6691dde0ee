# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception the recipe engine raises, and how several mistakes of one input travel together."""
from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")


class RecipeError(ValueError):
    """A selection the engine cannot render.

    The message names the variable to change, what was asked and what would work; the filter and
    action plugins pass it on unchanged as AnsibleFilterError / a failed task.
    """

    @property
    def messages(self) -> list[str]:
        """Each mistake on its own (one here; several in RecipeErrors)."""
        return [str(self)]


class RecipeErrors(RecipeError):
    """Every mistake one input holds, found in one pass (the plan lists each on its own line)."""

    def __init__(self, messages: Iterable[str]) -> None:
        self._messages = list(dict.fromkeys(messages))
        super().__init__("\n".join(self._messages))

    @property
    def messages(self) -> list[str]:
        return list(self._messages)


def messages_of(exc: BaseException) -> list[str]:
    """The mistakes an exception carries, one per entry."""
    return exc.messages if isinstance(exc, RecipeError) else [str(exc)]


class Mistakes:
    """Collects the mistakes of independent checks instead of stopping at the first: each check runs through
    attempt(); raise_any() raises them all at once."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def attempt(self, check: Callable[..., T], *args: Any, fallback: Any = None) -> T:
        try:
            return check(*args)
        except RecipeError as exc:
            self.found.extend(exc.messages)
            return fallback

    def add(self, message: str) -> None:
        self.found.append(message)

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise RecipeError(self.found[0])
        if self.found:
            raise RecipeErrors(self.found)
