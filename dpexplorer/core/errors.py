"""The project's error types. Every error a user can cause is one of these, with a message
that says what is wrong and what to do."""


class DPExplorerError(Exception):
    """Base of every error dpexplorer raises on purpose; its message is shown to the user as is."""


class InvalidParameterError(DPExplorerError, ValueError):
    """A parameter is outside its declared range (epsilon <= 0, delta >= 1, inverted bounds, ...)."""


class NotApplicableError(DPExplorerError):
    """A method does not apply to these inputs (e.g. optimal composition of a heterogeneous list)."""


class CancelledError(DPExplorerError):
    """A long computation was cancelled through its CancelToken."""
