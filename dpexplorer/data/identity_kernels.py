"""Compiled kernels of the ledger key ``content-v2`` (numba): the cell, row and lane-sum
arithmetic of :mod:`dpexplorer.data.identity`, defined there, in a loop per row instead of a
numpy pass per step, so that a table is hashed at about the speed polars reads it.

Imported only through :func:`dpexplorer.data.identity.kernels` (numba is a heavy import and the
first compile takes seconds): never at the package's import. Each kernel has one explicit
signature, so it is compiled (or loaded from numba's cache) once, when this module is imported,
and releases the GIL while it runs (``nogil``): :mod:`~dpexplorer.data.identity` runs them on
threads over ranges of rows. No kernel uses numba's own parallelism (its default threading layer
aborts the process when two Python threads enter parallel code at once, as the window's jobs
may).

A kernel adds, for the rows ``start .. stop`` of one column, ``K_L(c) * cell_L`` into the
block's accumulators ``acc[L, row - start]`` of both lanes (:func:`block`); :func:`finish`
mixes each row's accumulator, sums them per lane and resets them to ``ROW_L`` for the next
block. All arithmetic is on uint64 values (numba would turn a uint64 mixed with an int64 into a
float64). Text is read in place from the Arrow buffers, by address (the buffers stay referenced
by the caller's column for the call), with every read bounds-checked against its buffer.

The seeds and tables below come from :mod:`~dpexplorer.data.identity` and are frozen into the
compiled code, while numba's cache is keyed by this file alone: they define the key and never
change, but a change to them would have to touch this file too (or its cached code would keep
the old ones; the tests, which compare with numpy, would say so)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, types
from numba.extending import intrinsic

from dpexplorer.data.identity import (
    _MIX,
    CANONICAL_NAN,
    FLOAT,
    GOLDEN,
    INT,
    MISSING,
    ROWS,
    SEEDS,
    TEXT,
    tag_seed,
    text_start,
)

U64 = np.uint64
_SEED_TABLE = np.array([[tag_seed(lane, tag) for tag in range(9)] for lane in (0, 1)], dtype=U64)
_STARTS = np.array([[text_start(lane, n) for n in range(13)] for lane in (0, 1)], dtype=U64)
"""``start_L(n)`` of a text of at most 12 bytes (a value inline in its Arrow view)."""
_MISSING_A, _MISSING_B = U64(tag_seed(0, MISSING)), U64(tag_seed(1, MISSING))
_TEXT_A, _TEXT_B = U64(SEEDS[0] ^ (TEXT << 56)), U64(SEEDS[1] ^ (TEXT << 56))
_ROW_A, _ROW_B = U64(ROWS[0]), U64(ROWS[1])
_GOLDEN, _NAN, _BIG = U64(GOLDEN), U64(CANONICAL_NAN), U64(1 << 63)
_LOW32, _NA, _ONES = U64(0xFFFFFFFF), U64(0x414E), U64((1 << 64) - 1)  # _NA: "NA", little-endian
_MASKS = np.array([0, *((1 << (8 * i)) - 1 for i in range(1, 8)), (1 << 64) - 1], dtype=U64)
_S8, _S12, _S32 = U64(8), U64(12), U64(32)
_INT, _FLOAT = INT, FLOAT

NUMBERS, WORDS_INT, WORDS_UINT, WORDS_FLOAT = 0, 1, 2, 3
"""Modes of :func:`numbers`: a fixed tag for every value (booleans, dates, ...), int64 values,
uint64 values, float64 values (their bits)."""


# ---------------------------------------------------------------- raw reads (intrinsics)
def _loader(bits: int) -> Any:
    """An intrinsic reading the ``bits``-bit little-endian integer at an address (any
    alignment), as a uint64."""

    @intrinsic
    def load(typingctx: Any, address: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            value = builder.load(builder.inttoptr(args[0], ir.IntType(bits).as_pointer()), align=1)
            return value if bits == 64 else builder.zext(value, ir.IntType(64))

        return types.uint64(types.int64), codegen

    return load


def _reinterpret(source: Any, target: Any, llvm_type: Any) -> Any:
    """An intrinsic giving the bits of a ``source`` value as a ``target`` one (float64 and
    uint64, both ways)."""

    @intrinsic
    def cast(typingctx: Any, value: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], llvm_type)

        return target(source), codegen

    return cast


_load_word, _load_byte = _loader(64), _loader(8)
_float_bits = _reinterpret(types.float64, types.uint64, ir.IntType(64))
_as_float = _reinterpret(types.uint64, types.float64, ir.DoubleType())


# ---------------------------------------------------------------- the hash's pieces
def _mixer(lane: int) -> Any:
    """``mix_L`` of :mod:`~dpexplorer.data.identity` (its shifts and multipliers, ``_MIX``)."""
    (s1, m1), (s2, m2), (s3, _) = ((U64(shift), U64(mult)) for shift, mult in _MIX[lane])

    @njit(inline="always")
    def mix(x: Any) -> Any:
        x ^= x >> s1
        x *= m1
        x ^= x >> s2
        x *= m2
        return x ^ (x >> s3)

    return mix


_mix_a, _mix_b = _mixer(0), _mixer(1)  # MurmurHash3's fmix64, SplitMix64's finaliser


@njit(inline="always")
def _float_word(x: Any) -> Any:
    """(tag, word) of a float64: an integral value of magnitude below 2^63 as an integer."""
    if x != x:
        return _FLOAT, _NAN
    if np.trunc(x) == x and abs(x) < 9.223372036854775808e18:
        return _INT, U64(np.int64(x))
    return _FLOAT, _float_bits(x)


@njit(inline="always")
def _word_at(address: Any, end: Any, remaining: Any) -> Any:
    """The next word of a text at ``address`` with ``remaining`` bytes to go (zero-padded),
    never reading at or past ``end``."""
    if address + 8 <= end:
        word = _load_word(address)
    else:
        word = U64(0)
        for i in range(min(remaining, 8)):
            word |= _load_byte(address + i) << (_S8 * U64(i))
    return word & _MASKS[min(remaining, 8)]


@njit(inline="always")
def _text_start(n: Any) -> Any:
    length = U64(n) * _GOLDEN
    return _mix_a(_TEXT_A ^ length), _mix_b(_TEXT_B ^ length)


@njit(inline="always")
def _text_at(address: Any, end: Any, n: Any) -> Any:
    """Both lanes' hashes of the ``n`` bytes at ``address`` (the buffer ends at ``end``)."""
    h0, h1 = _text_start(n)
    done = 0
    while done < n:
        word = _word_at(address + done, end, n - done)
        h0 = _mix_a(h0 ^ word)
        h1 = _mix_b(h1 ^ word)
        done += 8
    return h0, h1


@njit(inline="always")
def _add(acc: Any, j: Any, k0: Any, k1: Any, missing: Any, h0: Any, h1: Any) -> None:
    """Add a cell's two lanes (or the missing cell's, when ``missing``) to row ``j``."""
    acc[0, j] += k0 * (_MISSING_A if missing else h0)
    acc[1, j] += k1 * (_MISSING_B if missing else h1)


# ---------------------------------------------------------------- the kernels
def _compiled(signature: Any) -> Callable[[Callable[..., Any]], Any]:
    """``njit(signature, nogil=True, cache=True)``, compiled now; without the cache when numba
    cannot keep one (no writable cache directory, a damaged cache file): a missing cache costs
    the compile time of each process, never the kernel."""

    def decorate(function: Callable[..., Any]) -> Any:
        try:
            return njit(signature, nogil=True, cache=True)(function)
        except Exception:  # any caching failure: compile without it
            return njit(signature, nogil=True, cache=False)(function)

    return decorate


def _readonly(dtype: Any, ndim: int = 1) -> Any:
    return types.Array(dtype, ndim, "C", readonly=True)


_ACC = types.Array(types.uint64, 2, "C")
_WORDS = _readonly(types.uint64)
_MISSING = _readonly(types.boolean)
_BLOCK = types.Tuple((types.int64, types.int64, _ACC, _ACC))
"""A block of rows: ``(start, stop, acc, scratch)``, the rows and the arrays of :func:`block`."""
_COLUMN = (types.uint64, types.uint64, _BLOCK)  # k0, k1, block


@_compiled(types.none(types.int64, types.int64, _WORDS, _MISSING, *_COLUMN))
def numbers(mode: Any, tag: Any, words: Any, missing: Any, k0: Any, k1: Any, block: Any) -> None:
    """Cells of a column of 64-bit values (``words``: their bits; ``mode``: :data:`NUMBERS`
    with ``tag``, or :data:`WORDS_INT`, :data:`WORDS_UINT`, :data:`WORDS_FLOAT`); ``missing``:
    one flag per row, or empty when no cell is missing. Each mode has its own loop without
    branches (selects) over slices indexed from 0, which the compiler vectorises."""
    start, stop, acc, _ = block
    has_missing = missing.size > 0
    values = words[start:stop]
    gone = missing[start:stop] if has_missing else missing
    if mode == WORDS_FLOAT:
        int0, int1 = _SEED_TABLE[0, _INT], _SEED_TABLE[1, _INT]
        float0, float1 = _SEED_TABLE[0, _FLOAT], _SEED_TABLE[1, _FLOAT]
        for j in range(stop - start):
            word = values[j]
            x = _as_float(word)
            integral = (np.trunc(x) == x) & (abs(x) < 9.223372036854775808e18)
            as_int = U64(np.int64(x if integral else 0.0))
            word = as_int if integral else (_NAN if x != x else word)
            h0 = _mix_a((int0 if integral else float0) ^ word)
            h1 = _mix_b((int1 if integral else float1) ^ word)
            _add(acc, j, k0, k1, has_missing and gone[j], h0, h1)
        return
    if mode == WORDS_UINT:
        for j in range(stop - start):
            word, t = values[j], _INT
            if word >= _BIG:
                t, word = _float_word(np.float64(word))
            h0, h1 = _mix_a(_SEED_TABLE[0, t] ^ word), _mix_b(_SEED_TABLE[1, t] ^ word)
            _add(acc, j, k0, k1, has_missing and gone[j], h0, h1)
        return
    t = _INT if mode == WORDS_INT else tag
    seed0, seed1 = _SEED_TABLE[0, t], _SEED_TABLE[1, t]
    for j in range(stop - start):
        word = values[j]
        _add(acc, j, k0, k1, has_missing and gone[j], _mix_a(seed0 ^ word), _mix_b(seed1 ^ word))


_ADDRESSES = _readonly(types.int64)


@njit(inline="always")
def _mask(n: Any) -> Any:
    """The low ``n`` bytes of a word (``n`` from 0 to 8), without a shift by 64."""
    shift = U64(4) * (_S8 - n)
    return (_ONES >> shift) >> shift


@_compiled(types.none(_readonly(types.uint64, 2), _ADDRESSES, _ADDRESSES, _MISSING, *_COLUMN))
def view_text(views: Any, addresses: Any, sizes: Any, missing: Any, k0: Any, k1: Any, block: Any) -> None:
    """Cells of a text column in Arrow's view layout: per row a 16-byte view (length, then the
    bytes when at most 12, else a prefix, the buffer's index and the offset in it); the data
    buffers at ``addresses`` of ``sizes`` bytes. Empty text and ``NA`` are missing. A first
    loop without branches (vectorised) hashes the values of at most 12 bytes from their views
    (a longer value adds nothing there); a second one, only if there are longer values, reads
    those from the data buffers."""
    start, stop, acc, scratch = block
    has_missing = missing.size > 0
    absent = missing[start:stop] if has_missing else missing
    los, his = scratch[0], scratch[1]
    for j in range(stop - start):  # the views' halves apart: a vectorised loop reads them in turn
        los[j], his[j] = views[start + j, 0], views[start + j, 1]
    longer = np.int64(0)
    for j in range(stop - start):
        lo, hi = los[j], his[j]
        n = lo & _LOW32
        short = n <= _S12
        first = ((lo >> _S32) | (hi << _S32)) & _mask(min(n, _S8))
        second = (hi >> _S32) & _mask(min(n, _S12) - min(n, _S8))
        h0, h1 = _mix_a(_STARTS[0, min(n, _S12)] ^ first), _mix_b(_STARTS[1, min(n, _S12)] ^ first)
        g0, g1 = _mix_a(h0 ^ second), _mix_b(h1 ^ second)
        two = n > _S8
        gone = (n == U64(0)) | ((n == U64(2)) & (first == _NA)) | (has_missing and absent[j])
        longer += np.int64(n > _S12)
        acc[0, j] += k0 * (_MISSING_A if gone else ((g0 if two else h0) if short else U64(0)))
        acc[1, j] += k1 * (_MISSING_B if gone else ((g1 if two else h1) if short else U64(0)))
    if longer == 0:
        return
    for j in range(stop - start):
        lo, hi = los[j], his[j]
        n = np.int64(lo & _LOW32)
        if n <= 12 or (has_missing and absent[j]):
            continue
        buffer, offset = np.int64(hi & _LOW32), np.int64(hi >> _S32)
        if buffer >= addresses.size or offset + n > sizes[buffer]:
            raise IndexError("a text view points outside its data buffers")
        h0, h1 = _text_at(addresses[buffer] + offset, addresses[buffer] + sizes[buffer], n)
        _add(acc, j, k0, k1, False, h0, h1)


@_compiled(types.none(_ADDRESSES, types.int64, types.int64, _MISSING, *_COLUMN))
def offset_text(offsets: Any, address: Any, size: Any, missing: Any, k0: Any, k1: Any, block: Any) -> None:
    """Cells of a text column in Arrow's offsets layout: row ``i`` is the bytes ``offsets[i] ..
    offsets[i + 1]`` of the data buffer at ``address`` (``size`` bytes). Empty text and ``NA``
    are missing."""
    start, stop, acc, _ = block
    has_missing = missing.size > 0
    end = address + size
    for i in range(start, stop):
        begin, n = offsets[i], offsets[i + 1] - offsets[i]
        if n == 0 or (has_missing and missing[i]):
            _add(acc, i - start, k0, k1, True, U64(0), U64(0))
            continue
        if begin < 0 or n < 0 or begin + n > size:
            raise IndexError("a text offset points outside its data buffer")
        if (
            n == 2
            and _load_byte(address + begin) == U64(0x4E)
            and _load_byte(address + begin + 1) == U64(0x41)
        ):
            _add(acc, i - start, k0, k1, True, U64(0), U64(0))
            continue
        h0, h1 = _text_at(address + begin, end, n)
        _add(acc, i - start, k0, k1, False, h0, h1)


@_compiled(types.UniTuple(types.uint64, 2)(_ACC, types.int64))
def finish(acc: Any, n: Any) -> tuple[Any, Any]:
    """The lane sums of the block's first ``n`` rows (each accumulator mixed), the accumulators
    reset to ``ROW_L`` for the next block."""
    s0, s1 = U64(0), U64(0)
    for j in range(n):
        s0 += _mix_a(acc[0, j])
        s1 += _mix_b(acc[1, j])
        acc[0, j] = _ROW_A
        acc[1, j] = _ROW_B
    return s0, s1


def block(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A block's accumulators, ready for its first column (``ROW_L`` in every row), and the
    kernels' scratch space: with the rows, the ``block`` every column's kernel takes."""
    acc = np.empty((2, rows), dtype=U64)
    acc[0], acc[1] = _ROW_A, _ROW_B
    return acc, np.empty((2, rows), dtype=U64)
