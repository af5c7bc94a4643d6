"""dpexplorer: explore differential privacy on your own data."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpexplorer")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
