"""`dpexplorer [FILE]` opens the window; `dpexplorer account|attack|audit|calibrate|release|report`
are tools.

Each tool lives in ``dpexplorer.commands.<name>`` and is imported only when asked for, so that
opening the window never pays for them (and the window's code is never imported by a tool).

One error path: whatever a tool is given, it ends with a code of
:data:`dpexplorer.commands.errors.DOCUMENTED` and at most one line on stderr. A usage error is
one line (exit 2), Ctrl+C exits 130, and an exception no tool anticipated (a bug) is one line
saying so (exit 70), never a traceback."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from dpexplorer import __version__

COMMANDS: dict[str, str] = {
    "account": "compose privacy guarantees under every accounting method",
    "attack": "why DP: differencing, reconstruction and membership attacks (nothing released)",
    "audit": "replay a plan on your data and its neighbours with the same random bits (nothing charged)",
    "calibrate": "calibrate a mechanism's noise to (epsilon, delta)",
    "release": "release statistics from a plan through the exact samplers and the ledger",
    "report": "write again the report of a past release, from the ledger and its files",
}


def _app_parser() -> argparse.ArgumentParser:
    tools = "\n".join(f"  dpexplorer {name:<10} {text}" for name, text in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="dpexplorer",
        description="Explore differential privacy on your own data. With no FILE, opens the "
        "bundled UCI Adult dataset.",
        epilog=f"tools (each has --help):\n{tools}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", nargs="?", help="CSV, TSV, .csv.gz or Parquet file to open")
    parser.add_argument(
        "--screenshot",
        metavar="OUT.png",
        help="open the window offscreen, wait for every view, save it to OUT.png and exit",
    )
    parser.add_argument("--version", action="version", version=f"dpexplorer {__version__}")
    return parser


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit 2), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        from dpexplorer.commands.errors import EXIT_BAD_INPUT, one_line

        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {one_line(message)} (see --help)\n")


def _run_command(name: str, argv: Sequence[str]) -> int:
    from dpexplorer.commands.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, fail

    try:
        module = importlib.import_module(f"dpexplorer.commands.{name}")
        parser = _OneLineParser(prog=f"dpexplorer {name}", description=COMMANDS[name])
        module.add_arguments(parser)
        args = parser.parse_args(list(argv))
        return int(module.run(args))
    except KeyboardInterrupt:
        return fail(name, "interrupted", EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except Exception as exc:  # a bug: still one line and a documented code, never a traceback
        return fail(name, f"internal error ({type(exc).__name__}: {exc}); please report it", EXIT_INTERNAL)


def _exit_now(code: int) -> None:
    """End the process with ``code`` once a tool is done, as the interpreter's exit does (threads
    joined, :mod:`atexit` handlers run, stdout and stderr flushed) less its teardown of every
    module and object: 0.12 s of a release's process (a count on
    10M rows, 2026-11-26), for nothing a finished tool needs (its files and ledger are closed
    and synced before it returns). Returns, for the ordinary exit, while a thread that is not a
    daemon runs, when Spark is loaded (its own shutdown then runs as always) or when the output
    cannot be flushed (a closed pipe is reported as the interpreter always reports it)."""
    import atexit
    import os
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others or "pyspark" in sys.modules:
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dpexplorer` console script; returns the exit code. Called without
    ``argv`` (as the process's entry point: the console script, ``python -m dpexplorer``), a
    tool's process ends as soon as the tool is done (:func:`_exit_now`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in COMMANDS:
        try:
            code = _run_command(args_list[0], args_list[1:])
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            return int(exc.code or 0)
        if argv is None:
            _exit_now(code)
        return code
    try:
        args = _app_parser().parse_args(args_list)
    except SystemExit as exc:
        return int(exc.code or 0)
    from dpexplorer.gui.app import run_app  # Qt is imported only when a window is wanted

    return run_app(args.file, screenshot=args.screenshot)


if __name__ == "__main__":
    raise SystemExit(main())
