"""The command line's exit codes and its one way of reporting a failure (docs/guide/cli.md, Exit codes).

| code | meaning |
| --- | --- |
| 0 | done |
| 2 | bad input: an option, a plan, a data file, a parameter, no budget set |
| 3 | refused by the budget (nothing charged; the message says what is left) |
| 4 | a release was charged but not released (the message says how much was spent for nothing) |
| 5 | ``dpexplorer audit`` found something (a field that depends on the data, a movement, a bound) |
| 70 | internal error: a bug in dpexplorer (please report it with the message) |
| 130 | interrupted (Ctrl+C); the message says what was released |

Every failure is ONE line on stderr, ``dpexplorer <command>: <message>``."""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
EXIT_NOT_RELEASED = 4
EXIT_FINDING = 5
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

DOCUMENTED = frozenset(
    {EXIT_OK, EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_NOT_RELEASED, EXIT_FINDING, EXIT_INTERNAL, EXIT_INTERRUPTED}
)
"""Every code the CLI may return (70 only for a bug: the fuzz tests fail on it)."""


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def fail(command: str, message: str, code: int) -> int:
    """Print ``dpexplorer <command>: <message>`` as one line on stderr; return ``code``."""
    print(f"dpexplorer {command}: {one_line(message)}", file=sys.stderr)
    return code
