"""Checks of the values a caller passes in (the API's boundary, the queries' fields): each says
what the parameter accepts and what it got, as one of the project's errors (issue 43). A value
of the wrong type (text or None for a number, a number for a name) raises the TypeError
flavour of the error (:class:`~dpexplorer.core.errors.ParameterTypeError`, or the data layer's
``DataTypeError``); a value of the right type out of range the plain one. No check calls a
method of the value it is given, so an object of any kind is refused, never followed."""

from __future__ import annotations

import math
import numbers
import os
import reprlib
from collections.abc import Iterable, Mapping, Set
from typing import Any, NamedTuple

from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, ParameterTypeError

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxlong = 40


def shown(value: Any, limit: int = 60) -> str:
    """``value`` as a message shows it: a short repr, safe on any value (a list nested ten
    thousand deep, a 400-digit number, an object whose repr fails)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a caller's __repr__ may raise anything
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def described(value: Any) -> str:
    """``value``'s type and value, for "must be X, not <described>": ``str '1'``, ``None``."""
    return "None" if value is None else f"{type(value).__name__} {shown(value)}"


class Errors(NamedTuple):
    """The errors a check raises: ``wrong`` for a value out of range, ``wrong_type`` (also a
    TypeError) for a value of the wrong type."""

    wrong: type[DPExplorerError]
    wrong_type: type[DPExplorerError]


PARAMETER = Errors(InvalidParameterError, ParameterTypeError)
"""The API's parameters and the mechanisms' (core's errors)."""


def is_real(value: Any) -> bool:
    """True for a real number that is not a boolean (``True`` is not the number 1 here)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)  # numpy's bool_ is no Real


def check_real(value: Any, what: str, errors: Errors = PARAMETER) -> float:
    """``value`` as a finite float; raises unless it is a real number (not a boolean, not text)
    that is finite, also as a float (an int of 400 digits is not)."""
    if not is_real(value):
        raise errors.wrong_type(f"{what} must be a finite number, not {described(value)}")
    try:
        number = float(value)
    except (OverflowError, ValueError):
        number = math.inf
    if not math.isfinite(number):
        raise errors.wrong(f"{what} must be a finite number, not {shown(value)}")
    return number


def check_whole(value: Any, what: str, low: int, high: int, errors: Errors = PARAMETER) -> int:
    """``value`` if it is a whole number (an int, not a boolean) in [low, high]."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise errors.wrong_type(
            f"{what} must be a whole number from {low:,} to {high:,}, not {described(value)}"
        )
    number = int(value)
    if not low <= number <= high:
        raise errors.wrong(f"{what} must be a whole number from {low:,} to {high:,}, not {shown(value)}")
    return number


def check_text(value: Any, what: str, errors: Errors = PARAMETER) -> str:
    """``value`` if it is text (a str)."""
    if not isinstance(value, str):
        raise errors.wrong_type(f"{what} must be text, not {described(value)}")
    return value


def check_path(value: Any, what: str, errors: Errors = PARAMETER) -> str:
    """``value`` as a path's text (``os.fspath``), if it is a str or an ``os.PathLike`` of
    text, non-empty and without a NUL (which no file system takes). Nothing is read or made."""
    if not isinstance(value, str | os.PathLike):
        raise errors.wrong_type(f"{what} must be a path (str or os.PathLike), not {described(value)}")
    try:
        path = os.fspath(value)
    except Exception:  # a caller's __fspath__ may raise anything
        path = None
    if not isinstance(path, str):
        raise errors.wrong_type(f"{what} must be a path of text, not {described(value)}")
    if not path or "\0" in path:
        raise errors.wrong(f"{what} must be a non-empty path without NUL, not {shown(value)}")
    return path


def check_flag(value: Any, what: str, errors: Errors = PARAMETER) -> bool:
    """``value`` if it is True or False (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise errors.wrong_type(f"{what} must be True or False, not {described(value)}")
    return value


def check_choice(value: Any, what: str, choices: Iterable[str], errors: Errors = PARAMETER) -> str:
    """``value`` if it is one of ``choices`` (text)."""
    options = tuple(choices)
    check_text(value, what, errors)
    if value not in options:
        raise errors.wrong(f"{what} must be one of {', '.join(options)}, not {shown(value)}")
    return value


def items(value: Any, what: str, errors: Errors = PARAMETER) -> tuple[Any, ...]:
    """The items of ``value``, a list, tuple or other ordered collection (not text, bytes, a
    mapping or a set, whose order is not the caller's)."""
    if isinstance(value, str | bytes | bytearray | Mapping | Set) or not isinstance(value, Iterable):
        raise errors.wrong_type(f"{what} must be a list or tuple, not {described(value)}")
    return tuple(value)


def instances(value: Any, kind: type, what: str, errors: Errors = PARAMETER) -> tuple[Any, ...]:
    """The items of ``value`` (:func:`items`), each a ``kind``."""
    found = items(value, what, errors)
    for item in found:
        if not isinstance(item, kind):
            raise errors.wrong_type(f"{what} must be {kind.__name__} values, not {described(item)}")
    return found


def check_mapping(value: Any, what: str, errors: Errors = PARAMETER) -> Mapping[str, Any]:
    """``value`` if it is a mapping whose keys are text."""
    if not isinstance(value, Mapping):
        raise errors.wrong_type(f"{what} must be a mapping of names to values, not {described(value)}")
    for key in value:
        check_text(key, f"a name in {what}", errors)
    return value
