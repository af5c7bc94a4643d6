"""Mechanisms, one module per family, each declaring its parameters (see :mod:`.params`).

Import :mod:`dpexplorer.core.mechanisms.registry` to get every mechanism that has landed."""
