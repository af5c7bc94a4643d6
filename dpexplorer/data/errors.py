"""The data layer's error type: the only exception that may escape loading a file."""

from __future__ import annotations

from dpexplorer.core.errors import DPExplorerError


class DataError(DPExplorerError):
    """A file, column or query the data layer cannot use. The message says what is wrong, where
    (file, line, column) and what to do; it is shown to the user as is."""

    def __init__(self, message: str) -> None:
        if not message:
            raise ValueError("a DataError needs a message")
        super().__init__(message)


class DataTypeError(DataError, TypeError):
    """A query's setting of the wrong type (a number for a column name, text for a bound): a
    DataError that is also a TypeError, as Python's own wrong-type errors are."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
