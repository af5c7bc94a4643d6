"""dpexplorer: explore differential privacy on your own data.

`import dpexplorer as dpx` gives the public API (:mod:`dpexplorer.api`, its names in
``dpexplorer.api.__all__``): open a dataset, build queries, explore a mechanism, plan a budget
and release through the ledger, without Qt. The API's names are loaded on first use (module
``__getattr__``), so that ``import dpexplorer`` stays cheap: ``dpexplorer --version`` and the
window's start imports neither polars nor the API. ``__all__`` (``__version__`` and the API's
names, for ``from dpexplorer import *``) is computed the same way, when first asked for."""

from pathlib import Path
from typing import Any

__version__ = "0.1.0"
"""pyproject.toml's version (tests/test_cli_startup.py checks the installed metadata agrees):
written here, since reading it through importlib.metadata took 0.1 s of every start."""

_HERE = Path(__file__).parent


def __getattr__(name: str) -> Any:
    """A public API name (``dpexplorer.api.__all__``), imported on first use and kept; and
    ``__all__``: ``__version__`` and the API's names (so ``from dpexplorer import *`` brings
    the API), read from the API when first asked for."""
    if name == "__all__":
        from dpexplorer import api

        names = ["__version__", *api.__all__]
        globals()["__all__"] = names
        return names
    if name.startswith("_") or (_HERE / name).is_dir() or (_HERE / f"{name}.py").is_file():
        # private, or a submodule not imported yet: the import system handles it
        raise AttributeError(f"module 'dpexplorer' has no attribute {name!r}")
    from dpexplorer import api

    if name not in api.__all__:
        raise AttributeError(f"module 'dpexplorer' has no attribute {name!r}")
    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    from dpexplorer import api

    return sorted({*globals(), *api.__all__})
