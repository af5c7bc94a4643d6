"""Sub-commands of the `dpexplorer` CLI, one module each, exposing
``add_arguments(parser)`` and ``run(args) -> int`` (exit code)."""
