"""The project's error types. Every error a user can cause is one of these, with a message
that says what is wrong and what to do."""


class DPExplorerError(Exception):
    """Base of every error dpexplorer raises on purpose; its message is shown to the user as is."""


class InvalidParameterError(DPExplorerError, ValueError):
    """A parameter is outside its declared range (epsilon <= 0, delta >= 1, inverted bounds, ...)."""


class ParameterTypeError(InvalidParameterError, TypeError):
    """A parameter of the wrong type (text or None for a number, a number for a name): an
    InvalidParameterError that is also a TypeError, as Python's own wrong-type errors are."""


class NotApplicableError(DPExplorerError):
    """A method does not apply to these inputs (e.g. optimal composition of a heterogeneous list)."""


class CancelledError(DPExplorerError):
    """A long computation was cancelled through its CancelToken."""
