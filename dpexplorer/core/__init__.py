"""The privacy math: pure numpy/scipy, no Qt, no files, no global state.

Nothing here imports another part of dpexplorer (a test enforces it)."""
