"""Typed access to the tables of a raw scenario, and the range checks its numbers go through."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .model import ScenarioError


def type_name(value: Any) -> str:
    return type(value).__name__


class Table:
    """Typed access to one table of the raw scenario; every getter names the key on error."""

    def __init__(self, data: Any, where: str, allowed: set[str]) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where or 'scenario'}: expected a table, got {type_name(data)}")
        for key in data:
            if key not in allowed:
                raise ScenarioError(f"{self._key(where, key)}: unknown key")
        self.data = data
        self.where = where

    @staticmethod
    def _key(where: str, key: str) -> str:
        return f"{where}.{key}" if where else key

    def key(self, key: str) -> str:
        return self._key(self.where, key)

    def has(self, key: str) -> bool:
        return key in self.data

    def number(self, key: str, default: float | None, check: Callable[[float], str | None]) -> float:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f"{self.key(key)}: expected a number, got {type_name(value)}")
        if not math.isfinite(value):
            raise ScenarioError(f"{self.key(key)}: must be finite")
        problem = check(float(value))
        if problem:
            raise ScenarioError(f"{self.key(key)}: {problem} (got {value})")
        return float(value)

    def integer(self, key: str, default: int | None, check: Callable[[float], str | None]) -> int:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.key(key)}: expected an integer, got {type_name(value)}")
        problem = check(float(value))
        if problem:
            raise ScenarioError(f"{self.key(key)}: {problem} (got {value})")
        return value

    def string(self, key: str, default: str | None, choices: tuple[str, ...] | None = None) -> str:
        value = self.data.get(key, default)
        if value is None:
            raise ScenarioError(f"{self.key(key)}: required")
        if not isinstance(value, str):
            raise ScenarioError(f"{self.key(key)}: expected a string, got {type_name(value)}")
        if choices is not None and value not in choices:
            raise ScenarioError(f"{self.key(key)}: must be one of {', '.join(choices)} (got {value!r})")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.key(key)}: expected true or false, got {type_name(value)}")
        return value

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise ScenarioError(f"{self.key(key)}: expected a table, got {type_name(value)}")
        return value

    def array(self, key: str) -> list[Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ScenarioError(f"{self.key(key)}: expected an array, got {type_name(value)}")
        return value


def positive(v: float) -> str | None:
    return None if v > 0 else "must be > 0"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else "must be >= 0"


def at_least(low: float) -> Callable[[float], str | None]:
    return lambda v: None if v >= low else f"must be >= {low:g}"


def between(low: float, high: float) -> Callable[[float], str | None]:
    return lambda v: None if low <= v <= high else f"must be between {low:g} and {high:g}"


def exclusive(table: Table, keys: tuple[str, ...]) -> str | None:
    given = [k for k in keys if table.has(k)]
    if len(given) > 1:
        raise ScenarioError(f"{table.key(given[1])}: conflicts with {table.key(given[0])} (give only one)")
    return given[0] if given else None
