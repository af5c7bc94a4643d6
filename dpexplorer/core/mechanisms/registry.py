"""The mechanism registry: every mechanism that has landed, by name, in menu order.

A mechanism module registers its class with :func:`register`. Every module of this package
other than the infrastructure below is imported on first use, so a mechanism is listed exactly
when its module exists (no hand-kept list to forget, no stub entries). Menu order is each
class's ``order`` attribute, then its name."""

from __future__ import annotations

import contextlib
import importlib
import pkgutil

import dpexplorer.core.mechanisms as _package
from dpexplorer.core.mechanisms.base import Mechanism

_MECHANISMS: dict[str, Mechanism] = {}
_INFRASTRUCTURE = frozenset({"base", "params", "registry"})
_loaded = False


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Class decorator: add one instance of ``cls`` under ``cls.name``."""
    if cls.name in _MECHANISMS:
        raise ValueError(f"mechanism {cls.name!r} registered twice")
    _MECHANISMS[cls.name] = cls()
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(_package.__path__):
        if info.name not in _INFRASTRUCTURE and not info.name.startswith("_"):
            importlib.import_module(f"{_package.__name__}.{info.name}")
    _loaded = True


def all_mechanisms() -> tuple[Mechanism, ...]:
    """Every registered mechanism, in menu order."""
    _load()
    return tuple(sorted(_MECHANISMS.values(), key=lambda m: (getattr(m, "order", 100), m.name)))


_MODULE_OF = {
    "smooth_cauchy": "smooth",
    "smooth_student_t": "smooth",
    "smooth_lln": "smooth",
    "dist2instability": "ptr",
    "dist2instability_mode": "ptr",
}
"""The module of a mechanism not defined in the module of its own name (a hint: a wrong or
missing one only costs loading every module)."""


def get(name: str) -> Mechanism:
    """The mechanism registered as ``name``; KeyError names the known ones. Only its module is
    imported when it is found there (a release of a count need not import scipy.stats through
    the smooth-sensitivity mechanisms); every module otherwise."""
    if name not in _MECHANISMS and not _loaded and name.isidentifier():
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(f"{_package.__name__}.{_MODULE_OF.get(name, name)}")
    if name in _MECHANISMS:
        return _MECHANISMS[name]
    _load()
    try:
        return _MECHANISMS[name]
    except KeyError:
        known = ", ".join(_MECHANISMS)
        raise KeyError(f"unknown mechanism {name!r}; known: {known}") from None
