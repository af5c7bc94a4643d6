"""The dataset's identity in the ledger (``content-v2``): a fingerprint of the parsed table,
computed vectorised (numpy on the columns' Arrow buffers), the same on every engine, file format
and library version.

Canonical form. The table is its column names with their kinds (``numeric``, ``categorical``,
``boolean``, ``date``: :func:`kind`), sorted by name, and the
multiset of its rows. A row is the canonical encoding of its cells, in the columns' name order;
a cell is encoded by the family of its column's type, not by the type itself:

* missing (null, and text that is empty or exactly ``NA``: how CSV writers spell a missing
  value, quoted or not) -> MISSING;
* a number -> its exact value: an integral value of magnitude below 2^63 (39, 39.0, -0.0 -> 0)
  as the 64-bit two's complement integer (tag INT), any other value as the IEEE-754 binary64
  bits of its float64 (tag FLOAT; one NaN; an unsigned integer of 2^63 or more and a decimal go
  through their float64 value);
* a boolean -> 0 or 1 (tag BOOL); a date -> days since 1970-01-01 (tag DATE); a date-time ->
  microseconds since the epoch (tag DATETIME; the stored instant, time zone ignored); a duration
  -> microseconds (tag DURATION); a time of day -> nanoseconds since midnight (tag TIME);
* text and bytes -> the UTF-8 bytes (tag TEXT), read as little-endian 64-bit words, the last
  zero-padded (a string of 0 to 8 bytes is one word); any other type -> its text (polars' cast).

Hash. Two independent 64-bit lanes, L in (A, B), each with its own seed and bijective finaliser
``mix_L`` (A: MurmurHash3's fmix64; B: SplitMix64's). All arithmetic is modulo 2^64.

* a tagged 64-bit word ``x``: ``cell = mix_L(seed_L(tag) ^ x)``, where ``seed_L(tag) =
  mix_L(SEED_L ^ (tag << 56))``;
* text of ``n`` bytes in words ``w_0..w_k``: ``h = mix_L(start_L(n) ^ w_0)``, then ``h =
  mix_L(h ^ w_i)``, where ``start_L(n) = mix_L(SEED_L ^ (TEXT << 56) ^ (n * GOLDEN))`` (the
  length is hashed, so padding cannot be confused with zero bytes);
* missing: ``mix_L(SEED_L ^ (MISSING << 56))``;
* a row: ``mix_L(ROW_L + sum_c K_L(c) * cell_c)`` with the odd multiplier ``K_L(c) =
  mix_L(SEED_L ^ (c + 1)) | 1`` of the c-th column in name order (so a value moved to another
  column changes the row);
* the table: per lane the SUM of its rows' hashes modulo 2^64, a multiset hash: independent of
  row order, partitioning and batching, and of how many workers computed which part (the Spark
  engine adds its partitions' sums), while a changed, added or removed row changes each sum
  unless two different row multisets happen to give equal sums.

The fingerprint is the first 128 bits (32 hex digits) of SHA-256 over ``content-v2``, the header
(``len:name:kind`` per column, joined by 0x1E), the row count and the two lane sums (8 bytes
each, big-endian). Older keys are 64 hex digits (content-v1, one Python SHA-256 per row, and the
file's SHA-256), which is how the ledger tells them apart.

Why two lanes (128 bits). The sum is linear: it only resists accidental collisions, which is
what a ledger key needs (two different tables sharing a budget is the only harm, and it can
only make the ledger refuse early; a steward who wants a fresh budget can change a cell
anyway). With one 64-bit lane, two given different tables collide with probability about
2^-64, but a cell's hash is only 64 bits too, so among the U distinct values of a column the
chance that two collide (and a one-cell change from one to the other goes unseen) is about
U^2 / 2^65: 3e-6 for ten million values, too close for a key meant to last. Two independent
lanes square both: about 2^-128 per pair of tables and U^2 / 2^129 per column (1e-25).

Speed. The arithmetic above is implemented twice, and the tests hold the two to the same sums
on tables of every type and edge value: in numpy here (a few operations per step on a batch of
:data:`BATCH_ROWS` rows, kept in cache) and, where llvmlite is installed, in compiled kernels
(:mod:`~dpexplorer.data.identity_llvm`: one loop per column over a block of rows, reading
text in place from the Arrow buffers), which serve when they load. Both read a text value of
at most 12 bytes from its Arrow view without touching the data buffer. Neither depends on
polars' own ``hash()`` (it may change between releases), so the key is stable across polars,
pyarrow and Spark versions. Measured on 10M rows of three columns (an integer, short text, a
float; 2026-11-26): numpy 1.2 s of CPU (0.9 s on two threads); the kernels 0.055 s of CPU
(0.035 s on two threads), after their load, 0.03 s a process from their cached machine code
(about 0.3 s to compile it the first time on a machine): the fingerprint loads them for a
table of a few million cells, or :func:`preload` does ahead of it."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import polars as pl

from dpexplorer.data.identity_scheme import (
    BOOL,
    CANONICAL_NAN,
    DATE,
    DATETIME,
    DURATION,
    FLOAT,
    GOLDEN,
    INT,
    MASK64,
    MISSING,
    MIX_STEPS,
    ROWS,
    SEEDS,
    TEXT,
    TIME,
    mix_int,
    tag_seed,
)

SCHEME = "content-v2"
KEY_HEX = 32
"""Hex digits of a content-v2 key (128 bits); older keys have 64."""
BATCH_ROWS = 8192
"""Rows hashed per step: its arrays (64 KB) stay in the processor's cache and below glibc's
mmap threshold, so each step reuses heap memory instead of faulting in fresh pages (64K rows
took 1.5-2x the CPU time; 16,000 rows measured slower too, on the loaded machine)."""

U64 = np.uint64
_MIX = MIX_STEPS
_WORD_MASKS = np.array([0, *((1 << (8 * i)) - 1 for i in range(1, 8)), MASK64], dtype=U64)


def mix(lane: int, x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """``mix_L`` on a uint64 array, in place (returned); ``tmp``: scratch of the same shape."""
    tmp = np.empty_like(x) if tmp is None else tmp
    for shift, mult in _MIX[lane]:
        np.right_shift(x, U64(shift), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        if mult:
            np.multiply(x, U64(mult), out=x)
    return x


@functools.lru_cache(maxsize=64)
def missing_hash(lane: int) -> int:
    return tag_seed(lane, MISSING)


def text_start(lane: int, n: int) -> int:
    return mix_int(lane, SEEDS[lane] ^ (TEXT << 56) ^ ((n * GOLDEN) & MASK64))


@functools.lru_cache(maxsize=4096)
def column_multiplier(lane: int, position: int) -> int:
    return mix_int(lane, SEEDS[lane] ^ (position + 1)) | 1


def kind(dtype: pl.DataType) -> str:
    """A column's kind in the header: numeric (integers, floats, decimals), boolean, date, or
    categorical (anything else). Defined here, not borrowed from the loader, so that the key
    cannot change with how the app treats a type."""
    if dtype.is_numeric():
        return "numeric"
    if dtype == pl.Date:
        return "date"
    return "boolean" if dtype == pl.Boolean else "categorical"


def header(schema: pl.Schema) -> str:
    """The names and kinds part of the key (columns sorted by name)."""
    return "\x1e".join(f"{len(c)}:{c}:{kind(schema[c])}" for c in sorted(schema.names()))


def digest(schema: pl.Schema, n_rows: int, sums: tuple[int, int]) -> str:
    """The content-v2 key from the header, the row count and the two lane sums."""
    h = hashlib.sha256(f"{SCHEME}\x1d{header(schema)}\x1d".encode())
    h.update((n_rows & MASK64).to_bytes(8, "big"))
    for s in sums:
        h.update((s & MASK64).to_bytes(8, "big"))
    return h.hexdigest()[:KEY_HEX]


@dataclass
class Sums:
    """Running lane sums and row count of a table's batches (add them in any order)."""

    n: int = 0
    a: int = 0
    b: int = 0

    def add(self, other: Sums) -> None:
        self.n += other.n
        self.a = (self.a + other.a) & MASK64
        self.b = (self.b + other.b) & MASK64


# ---------------------------------------------------------------- the compiled kernels
KERNEL_BLOCK = 32_768
"""Rows per block of the compiled kernels: the two lanes' accumulators (512 KB) stay in a
core's 1 MB L2 cache between the columns' passes."""
_log = logging.getLogger(__name__)
_NO_MISSING = np.zeros(0, dtype=bool)
_kernel_lock = threading.Lock()
_kernel_state: dict[str, ModuleType | None] = {}  # "module": loaded, or None if unavailable
_preloading = threading.Event()


def kernels(wait: bool = True) -> ModuleType | None:
    """The compiled kernels (:mod:`~dpexplorer.data.identity_llvm`), or None without llvmlite
    or if they fail to import or compile (then numpy computes the same sums): tried once per
    process. ``wait`` False: only if they are loaded already, never waiting for a load (nor
    for :func:`preload`'s)."""
    if "module" in _kernel_state or not wait:
        return _kernel_state.get("module")
    with _kernel_lock:
        if "module" not in _kernel_state:
            _kernel_state["module"] = _import_kernels()
    return _kernel_state["module"]


def _import_kernels() -> ModuleType | None:
    try:
        return importlib.import_module("dpexplorer.data.identity_llvm")
    except Exception:  # no llvmlite, or it cannot compile here: numpy instead
        _log.info("the compiled identity kernels are unavailable; hashing with numpy", exc_info=True)
        return None


def _disable_kernels() -> None:
    with _kernel_lock:
        _kernel_state["module"] = None


PRELOAD_BYTES = {".parquet": 3 << 20, ".pq": 3 << 20}
"""Per file type, the size from which a file may hold enough cells for the kernels to pay
their load (:func:`preload`; ``KERNEL_CELLS`` in :mod:`~dpexplorer.data.fingerprints`: about
1.5 bytes a cell in a Parquet file, 6 in a CSV one)."""
PRELOAD_TEXT_BYTES = 12 << 20
"""The same for a text file (CSV, TSV)."""


def preload(path: str | os.PathLike[str] | None = None) -> None:
    """Start loading the compiled kernels (and pyarrow) in a daemon thread: their load (0.03 s of
    CPU from the cached machine code, about 0.3 s the first time) then overlaps what the caller does
    meanwhile (reading the data, during which polars releases the GIL). With ``path``, only for
    a file of :data:`PRELOAD_BYTES` or more: a small table is hashed by numpy sooner than the
    kernels load. Safe to call many times; nothing without llvmlite."""
    if path is not None:
        threshold = PRELOAD_BYTES.get(os.path.splitext(os.fspath(path))[1].lower(), PRELOAD_TEXT_BYTES)
        try:
            if os.path.getsize(path) < threshold:
                return
        except OSError:  # a directory, a table name, a missing file: its reader says why
            return
    with _kernel_lock:
        if _preloading.is_set() or "module" in _kernel_state:
            return
        if importlib.util.find_spec("llvmlite") is None:
            _kernel_state["module"] = None
            return
        _preloading.set()
    threading.Thread(target=_load_for_hashing, name="identity-kernels", daemon=True).start()


def _load_for_hashing() -> None:
    """The kernels, then pyarrow (text columns reach the kernels through it: 0.02 s to import,
    else paid by the first batch hashed)."""
    kernels()
    with contextlib.suppress(ImportError):  # the fingerprint says so where it needs it
        import pyarrow  # noqa: F401


# ---------------------------------------------------------------- per-column canonical words
@dataclass(frozen=True)
class _Words:
    """A column batch's canonical form: per row a tag (or one tag for every row) and a word
    (tagged kinds), or the text's lengths and words (text); ``missing`` marks missing cells
    (None: none is)."""

    missing: np.ndarray | None
    tags: np.ndarray | int | None = None
    words: np.ndarray | None = None
    text: _Text | None = None


@dataclass(frozen=True)
class _Text:
    lengths: np.ndarray  # int64 byte lengths
    first: np.ndarray  # uint64 first word (zero-padded)
    more: list[tuple[np.ndarray, np.ndarray]]  # (row indices, word) for words 1, 2, ...


def _integers(values: np.ndarray) -> tuple[np.ndarray | int, np.ndarray]:
    """Tags (one for all when every value is an integer below 2^63) and words of integers
    (int64 or uint64 arrays)."""
    if values.dtype == np.uint64:
        big = values >= U64(1 << 63)
        if big.any():
            as_float = _floats(values.astype(np.float64))
            tags = np.where(big, as_float[0], np.uint8(INT))
            words = np.where(big, as_float[1], values)
            return tags, words
        return INT, values
    return INT, values.astype(np.int64, copy=False).view(U64)


def _floats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tags and words of float64 values: integral ones of magnitude < 2^63 as integers."""
    with np.errstate(invalid="ignore"):
        integral = (np.trunc(values) == values) & (np.abs(values) < 2.0**63)
    ints = np.where(integral, values, 0.0).astype(np.int64).view(U64)
    words = np.where(integral, ints, values.view(U64))
    words[np.isnan(values)] = U64(CANONICAL_NAN)
    return np.where(integral, np.uint8(INT), np.uint8(FLOAT)), words


class _Column:
    """One column of a table, converted once (zero-copy where the engine allows), whose
    canonical words are produced a batch of rows at a time (:meth:`words`)."""

    def __init__(self, series: pl.Series, views: bool = True) -> None:
        dtype = series.dtype
        self.missing = series.is_null().to_numpy() if series.null_count() else None
        self.values: np.ndarray | None = None
        self.tag = -1  # a fixed tag; -1: numbers (per value), -2: text
        self.views: np.ndarray | None = None
        if dtype == pl.Null:
            self.tag, self.values = MISSING, np.zeros(series.len(), np.int64)
            self.missing = np.ones(series.len(), bool)
            return
        if dtype.is_numeric():
            raw = series.fill_null(0) if self.missing is not None else series
            if dtype.is_integer() and dtype != pl.UInt64:
                raw = raw.cast(pl.Int64)
            elif not dtype.is_integer():
                raw = raw.cast(pl.Float64)
            self.values = raw.to_numpy()
            return
        fixed: dict[type, tuple[int, pl.Expr]] = {
            pl.Boolean: (BOOL, pl.first().cast(pl.Int64)),
            pl.Date: (DATE, pl.first().cast(pl.Int64)),
            pl.Datetime: (DATETIME, pl.first().dt.epoch("us")),
            pl.Duration: (DURATION, pl.first().dt.total_microseconds()),
            pl.Time: (TIME, pl.first().cast(pl.Int64)),
        }
        for base, (tag, expr) in fixed.items():
            if isinstance(dtype, base) or dtype == base:
                self.tag = tag
                self.values = series.to_frame().select(expr.fill_null(0)).to_series().to_numpy()
                return
        self.tag = -2
        if dtype not in (pl.String, pl.Binary):
            series = series.cast(pl.String)
        self._arrow(series, views)

    def _arrow(self, series: pl.Series, views: bool) -> None:
        """The text's Arrow buffers: views (zero-copy from polars) or offsets and data (an older
        layout, or ``views`` False: the same words either way). The array is kept: the kernels
        read its buffers by address."""
        import pyarrow as pa

        array = series.to_arrow(compat_level=pl.CompatLevel.newest() if views else pl.CompatLevel.oldest())
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        n = len(array)
        if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
            self.array, buffers = array, array.buffers()
            self.views = np.frombuffer(buffers[1], U64, 2 * n, array.offset * 16).reshape(n, 2)
            self.buffers = buffers[2:]
            return
        if not (pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)):
            array = array.cast(pa.large_binary() if pa.types.is_binary(array.type) else pa.large_string())
        self.array, buffers = array, array.buffers()
        self.offsets = np.frombuffer(buffers[1], np.int64, n + 1, array.offset * 8)
        self.buffers = buffers[2:3]

    @functools.cached_property
    def data(self) -> np.ndarray:
        """The data buffers, concatenated and padded (:func:`_padded`), for the numpy path."""
        parts = [_bytes(b) for b in self.buffers]
        return _padded(np.concatenate(parts) if parts else np.zeros(0, np.uint8))

    @functools.cached_property
    def bases(self) -> np.ndarray:
        """Where each data buffer starts in :attr:`data` (views layout)."""
        return np.cumsum([0, *(b.size if b is not None else 0 for b in self.buffers)])[:-1].astype(np.int64)

    def kernel(self, kernels: ModuleType, position: int) -> Callable[..., None]:
        """The compiled kernel adding this column's cells (the ``position``-th in name order) to
        a block's accumulators: ``kernel(start, stop, acc)``
        (:func:`~dpexplorer.data.identity_llvm.block`)."""
        k0, k1 = column_multiplier(0, position), column_multiplier(1, position)
        missing = self.missing if self.missing is not None else _NO_MISSING
        if self.tag == -2:
            addresses = np.array([b.address if b is not None else 0 for b in self.buffers], np.int64)
            sizes = np.array([b.size if b is not None else 0 for b in self.buffers], np.int64)
            if self.views is not None:
                return kernels.view_text(self.views, addresses, sizes, missing, k0, k1)
            return kernels.offset_text(self.offsets, int(addresses[0]), int(sizes[0]), missing, k0, k1)
        assert self.values is not None
        values = np.ascontiguousarray(self.values)
        if self.tag >= 0:
            mode, words = kernels.NUMBERS, values.astype(np.int64, copy=False).view(U64)
        elif values.dtype.kind == "f":
            mode, words = kernels.WORDS_FLOAT, values.view(U64)
        elif values.dtype == np.uint64:
            mode, words = kernels.WORDS_UINT, values
        else:
            mode, words = kernels.WORDS_INT, values.astype(np.int64, copy=False).view(U64)
        return kernels.numbers(mode, max(self.tag, 0), words, missing, k0, k1)

    def words(self, start: int, stop: int) -> _Words:
        missing = self.missing[start:stop] if self.missing is not None else None
        if self.tag >= 0:
            assert self.values is not None
            values = self.values[start:stop].astype(np.int64, copy=False).view(U64)
            return _Words(missing, self.tag, values)
        if self.tag == -1:
            assert self.values is not None
            values = self.values[start:stop]
            tags, words = _floats(values) if values.dtype.kind == "f" else _integers(values)
            return _Words(missing, tags, words)
        if missing is None:
            missing = np.zeros(stop - start, bool)
        if self.views is not None:
            text = self._view_text(start, stop, missing)
        else:
            text = self._offset_text(start, stop, missing)
        na = (text.lengths == 0) | ((text.lengths == 2) & (text.first == U64(0x414E)))  # "", "NA"
        return _Words(missing | na, text=text)

    def _offset_text(self, start: int, stop: int, missing: np.ndarray) -> _Text:
        starts = self.offsets[start:stop]
        lengths = np.where(missing, 0, self.offsets[start + 1 : stop + 1] - starts)
        return _gathered(starts, lengths, self.data)

    def _view_text(self, start: int, stop: int, missing: np.ndarray) -> _Text:
        """A value of at most 12 bytes is inline in its 16-byte view (length, then the bytes);
        a longer one is in a data buffer (index and offset in the view's second half)."""
        assert self.views is not None
        lo, hi = self.views[start:stop, 0], self.views[start:stop, 1]
        lengths = np.where(missing, 0, (lo & U64(0xFFFFFFFF)).astype(np.int64))
        first = (lo >> U64(32)) | (hi << U64(32))
        first &= _WORD_MASKS[np.minimum(lengths, 8)]
        more: list[tuple[np.ndarray, np.ndarray]] = []
        short = np.flatnonzero((lengths > 8) & (lengths <= 12))
        if short.size:
            more.append((short, (hi[short] >> U64(32)) & _WORD_MASKS[lengths[short] - 8]))
        long = np.flatnonzero(lengths > 12)
        if long.size:
            index = (hi[long] & U64(0xFFFFFFFF)).astype(np.int64)
            starts = self.bases[index] + (hi[long] >> U64(32)).astype(np.int64)
            gathered = _gathered(starts, lengths[long], self.data)
            first[long] = gathered.first
            more = _merge_more(more, [(long[i], w) for i, w in gathered.more])
        return _Text(lengths, first, more)


def _bytes(buffer: object) -> np.ndarray:
    return np.frombuffer(buffer, np.uint8) if buffer is not None else np.zeros(0, np.uint8)  # type: ignore[call-overload]


def _padded(data: np.ndarray) -> np.ndarray:
    """``data`` as aligned 64-bit words with a zero word after its end (for :func:`_gathered`)."""
    padded = np.zeros(data.size // 8 + 2, U64)
    padded.view(np.uint8)[: data.size] = data
    return padded


def _merge_more(
    a: list[tuple[np.ndarray, np.ndarray]], b: list[tuple[np.ndarray, np.ndarray]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Words 1, 2, ... of two disjoint sets of rows, merged per word index."""
    out = []
    for k in range(max(len(a), len(b))):
        parts = [p[k] for p in (a, b) if k < len(p)]
        out.append((np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])))
    return out


def _gathered(starts: np.ndarray, lengths: np.ndarray, padded: np.ndarray) -> _Text:
    """Words of byte strings at ``starts`` of ``lengths`` in ``padded`` (:func:`_padded`; any
    alignment): each word is two aligned 64-bit reads shifted together, masked to the end."""

    def word_at(pos: np.ndarray, rem: np.ndarray) -> np.ndarray:
        q, r = pos >> 3, (pos & 7).astype(U64) * U64(8)
        w = padded[q] >> r
        w |= np.where(r == 0, U64(0), padded[q + 1] << ((U64(64) - r) & U64(63)))
        return w & _WORD_MASKS[np.clip(rem, 0, 8)]

    first = word_at(starts, lengths)
    more = []
    k = 1
    while True:
        rows = np.flatnonzero(lengths > 8 * k)
        if rows.size == 0:
            break
        more.append((rows, word_at(starts[rows] + 8 * k, lengths[rows] - 8 * k)))
        k += 1
    return _Text(lengths, first, more)


@functools.lru_cache(maxsize=8)
def _seed_table(lane: int) -> np.ndarray:
    return np.array([tag_seed(lane, tag) for tag in range(9)], dtype=U64)


@functools.lru_cache(maxsize=32)
def _start_table(lane: int, size: int) -> np.ndarray:
    return np.array([text_start(lane, n) for n in range(size)], dtype=U64)


def _cell_hashes(
    words: _Words, lane: int, out: np.ndarray | None = None, tmp: np.ndarray | None = None
) -> np.ndarray:
    """Each cell's 64-bit hash in ``lane`` (module docstring), into ``out`` when given (``tmp``:
    scratch; both of the batch's length: no array is allocated per step)."""
    n = words.text.lengths.size if words.text is not None else words.words.size  # type: ignore[union-attr]
    h = np.empty(n, U64) if out is None else out
    if words.text is not None:
        t = words.text
        longest = int(t.lengths.max()) if t.lengths.size else 0
        if longest < 1 << 16:
            np.take(_start_table(lane, 1 << max(longest, 1).bit_length()), t.lengths, out=h, mode="clip")
        else:
            h[:] = [text_start(lane, int(n)) for n in t.lengths]
        h ^= t.first
        mix(lane, h, tmp)
        for rows, w in t.more:
            part = h[rows] ^ w
            h[rows] = mix(lane, part)
    else:
        assert words.tags is not None and words.words is not None
        if isinstance(words.tags, int):
            np.bitwise_xor(words.words, U64(tag_seed(lane, words.tags)), out=h)
        else:
            np.take(_seed_table(lane), words.tags, out=h, mode="clip")
            h ^= words.words
        mix(lane, h, tmp)
    if words.missing is not None:
        np.putmask(h, words.missing, U64(missing_hash(lane)))
    return h


def batch_sums(frame: pl.DataFrame, threads: int = 1, load: bool = False) -> Sums:
    """The lane sums and row count of ``frame``'s rows (columns in name order); add the sums of
    a table's batches to get the table's (:class:`Sums`). ``threads`` > 1 hashes ranges of rows
    in parallel (numpy and the kernels release the GIL); the sums do not depend on it. The
    compiled kernels serve when they are loaded, or ``load`` asks to load them
    (:func:`kernels`); else numpy, with the same sums."""
    columns = [_Column(frame[c]) for c in sorted(frame.columns)]
    return column_sums(columns, frame.height, threads, kernels(wait=load))


def column_sums(columns: list[_Column], n: int, threads: int = 1, compiled: ModuleType | None = None) -> Sums:
    """:func:`batch_sums` of ``n`` rows of these columns (in name order), with the kernels of
    ``compiled`` (:func:`kernels`) or numpy (None, or if the kernels fail: logged, and the
    kernels are not used again in this process)."""
    if compiled is not None:
        try:
            return _kernel_sums(compiled, columns, n, threads)
        except Exception:  # any failure of the kernels: numpy gives the same sums
            _log.exception("the compiled identity kernels failed; hashing with numpy instead")
            _disable_kernels()
    ranges = [(i, min(i + BATCH_ROWS, n)) for i in range(0, n, BATCH_ROWS)]
    return _parallel(ranges, threads, lambda r: _range_sums(columns, *r))


def _parallel(ranges: list[tuple[int, int]], threads: int, sums: Callable[[tuple[int, int]], Sums]) -> Sums:
    """The total of ``sums`` over ``ranges``, on ``threads`` threads when there are several."""
    out = Sums()
    if threads > 1 and len(ranges) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            for part in pool.map(sums, ranges):
                out.add(part)
        return out
    for r in ranges:
        out.add(sums(r))
    return out


def _kernel_sums(compiled: ModuleType, columns: list[_Column], n: int, threads: int) -> Sums:
    """:func:`column_sums` by the compiled kernels: each thread takes a range of rows, hashed
    :data:`KERNEL_BLOCK` rows at a time (the block's accumulators stay in cache), every
    column's kernel adding its cells, then :func:`~dpexplorer.data.identity_llvm.finish`."""
    bound = [c.kernel(compiled, position) for position, c in enumerate(columns)]
    parts = threads * 4 if threads > 1 else 1  # smaller parts even out a busy core
    step = max(KERNEL_BLOCK, -(-n // parts))

    def part(r: tuple[int, int]) -> Sums:
        acc = compiled.block(min(KERNEL_BLOCK, r[1] - r[0]))
        a = b = 0
        for start in range(r[0], r[1], KERNEL_BLOCK):
            stop = min(start + KERNEL_BLOCK, r[1])
            for kernel in bound:
                kernel(start, stop, acc)
            sa, sb = compiled.finish(acc, stop - start)
            a, b = a + int(sa), b + int(sb)
        return Sums(r[1] - r[0], a & MASK64, b & MASK64)

    return _parallel([(i, min(i + step, n)) for i in range(0, n, step)], threads, part)


def _range_sums(columns: list[_Column], start: int, stop: int) -> Sums:
    words = [c.words(start, stop) for c in columns]
    acc, h, tmp = (np.empty(stop - start, U64) for _ in range(3))
    sums = []
    for lane in (0, 1):
        acc.fill(U64(ROWS[lane]))
        for position, w in enumerate(words):
            _cell_hashes(w, lane, h, tmp)
            np.multiply(h, U64(column_multiplier(lane, position)), out=h)
            np.add(acc, h, out=acc)
        sums.append(int(mix(lane, acc, tmp).sum(dtype=U64)))
    return Sums(stop - start, sums[0], sums[1])


def fingerprint_batches(schema: pl.Schema, batches: Iterable[pl.DataFrame], threads: int = 1) -> str:
    """The content-v2 key of the table whose batches these are (``schema``: the table's)."""
    total = Sums()
    for batch in batches:
        total.add(batch_sums(batch, threads))
    return digest(schema, total.n, (total.a, total.b))


# ---------------------------------------------------------------- per-column multisets
COLUMN_SCHEME = "column-v1"
"""The scheme of a column's fingerprint (:func:`column_print`)."""


@dataclass(frozen=True)
class ColumnPrint:
    """One column's fingerprint: the multiset of its cells, whatever the column is called, where
    it stands and how the rows are ordered (32 hex digits), and whether every cell is the same
    (a constant column says nothing about the people in the rows)."""

    fingerprint: str
    constant: bool


@dataclass
class CellSums:
    """Running per-lane sums of one column's cell hashes (the module docstring's cells, with no
    column multiplier), its number of cells, and the hashes of its first cell."""

    sums: Sums
    first: tuple[int, int] | None = None

    def add(self, other: CellSums) -> None:
        self.sums.add(other.sums)
        self.first = self.first if self.first is not None else other.first


def cell_sums(frame: pl.DataFrame, compiled: ModuleType | None = None) -> dict[str, CellSums]:
    """Per column of ``frame``, the sums of its cells' hashes (add a table's batches in any
    order): the same cell hashes as the content fingerprint's, by the compiled kernels
    (``compiled``: :func:`kernels`; their sums are K_L * the cells', K_L odd, so multiplied back by
    its inverse modulo 2^64) or numpy."""
    out = {}
    for name in frame.columns:
        column = _Column(frame[name])
        n = frame.height
        first = tuple(int(_cell_hashes(column.words(0, 1), lane)[0]) for lane in (0, 1)) if n else None
        lanes = _kernel_cells(compiled, column, n) if compiled is not None else _numpy_cells(column, n)
        out[name] = CellSums(Sums(n, lanes[0], lanes[1]), first)  # type: ignore[arg-type]
    return out


def _numpy_cells(column: _Column, n: int) -> tuple[int, int]:
    total = [0, 0]
    for start in range(0, n, BATCH_ROWS):
        words = column.words(start, min(start + BATCH_ROWS, n))
        for lane in (0, 1):
            total[lane] += int(_cell_hashes(words, lane).sum(dtype=U64))
    return total[0] & MASK64, total[1] & MASK64


def _kernel_cells(compiled: ModuleType, column: _Column, n: int) -> tuple[int, int]:
    kernel = column.kernel(compiled, 0)
    acc = np.zeros((2, min(KERNEL_BLOCK, max(n, 1))), dtype=U64)
    total = [0, 0]
    for start in range(0, n, KERNEL_BLOCK):
        stop = min(start + KERNEL_BLOCK, n)
        acc.fill(U64(0))
        kernel(start, stop, acc)
        for lane in (0, 1):
            total[lane] += int(acc[lane, : stop - start].sum(dtype=U64))
    return tuple(  # type: ignore[return-value]
        (total[lane] * pow(column_multiplier(lane, 0), -1, 1 << 64)) & MASK64 for lane in (0, 1)
    )


def column_print(cells: CellSums) -> ColumnPrint:
    """A column's fingerprint from its :func:`cell_sums`: SHA-256 over ``column-v1``, the number
    of cells and the two lane sums (first 32 hex digits); constant when both sums are n times
    the first cell's hashes (a column of different cells gives that only by a 2^-128 accident)."""
    sums = cells.sums
    h = hashlib.sha256(f"{COLUMN_SCHEME}\x1d".encode())
    for value in (sums.n, sums.a, sums.b):
        h.update((value & MASK64).to_bytes(8, "big"))
    first = cells.first
    constant = first is None or all(
        (sums.n * first[lane]) & MASK64 == total for lane, total in enumerate((sums.a, sums.b))
    )
    return ColumnPrint(h.hexdigest()[:KEY_HEX], constant)
