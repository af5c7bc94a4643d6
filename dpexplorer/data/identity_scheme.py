"""The content key's scheme: the tags, seeds and mixing steps that every implementation of the
key shares (numpy in :mod:`dpexplorer.data.identity`, LLVM in
:mod:`dpexplorer.data.identity_llvm`, Spark's executors through the former). Constants and the
Python-int reference only, so that both implementations import it and neither imports the other
for it."""

from __future__ import annotations

import functools

MISSING, TEXT, INT, FLOAT, BOOL, DATE, DATETIME, DURATION, TIME = range(9)
"""Tags of the canonical cells (the top byte of a seed)."""
GOLDEN = 0x9E3779B97F4A7C15
CANONICAL_NAN = 0x7FF8000000000000
SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344)
"""Lane seeds (digits of pi)."""
ROWS = (0xA4093822299F31D0, 0x082EFA98EC4E6C89)
MASK64 = (1 << 64) - 1


def mix_int(lane: int, x: int) -> int:
    """``mix_L`` on a Python int (the reference the numpy version must equal)."""
    x &= MASK64
    if lane == 0:  # MurmurHash3 fmix64
        x ^= x >> 33
        x = (x * 0xFF51AFD7ED558CCD) & MASK64
        x ^= x >> 33
        x = (x * 0xC4CEB9FE1A85EC53) & MASK64
        return x ^ (x >> 33)
    x ^= x >> 30  # SplitMix64's finaliser
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


MIX_STEPS = (
    ((33, 0xFF51AFD7ED558CCD), (33, 0xC4CEB9FE1A85EC53), (33, 0)),
    ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, 0)),
)
"""``mix_L`` as (shift, multiplier) steps per lane: x ^= x >> shift, then x *= multiplier."""


@functools.lru_cache(maxsize=64)
def tag_seed(lane: int, tag: int) -> int:
    return mix_int(lane, SEEDS[lane] ^ (tag << 56))
