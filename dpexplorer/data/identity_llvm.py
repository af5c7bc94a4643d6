"""Compiled kernels of the ledger key ``content-v2``: the cell, row and lane-sum arithmetic of
:mod:`dpexplorer.data.identity`, defined there, as loops over rows in LLVM IR, built with
llvmlite's IR builder and compiled by its JIT when this module is imported (about 0.05 s of
CPU: the import of ``llvmlite.binding``, then the IR's optimisation and machine code), so
that a table is hashed at about the speed polars reads it.

Why not numba, which compiled the same loops before: a process paid 0.44-0.6 s of CPU to
import numba and load its cached kernels (0.19 s of it scipy.linalg, imported by numba's BLAS
check), more than a 10M-row Parquet file takes to read; these kernels need only llvmlite
(numba's own code generator) and load in a tenth of that (measured in BENCHMARKS.md).

Imported only through :func:`dpexplorer.data.identity.kernels`, never at the package's import.
The functions follow the C calling convention and are called through :mod:`ctypes`, which
releases the GIL while they run: :mod:`~dpexplorer.data.identity` runs them on threads over
ranges of rows.

A kernel adds, for the rows ``start .. stop`` of one column, ``K_L(c) * cell_L`` into the
block's accumulators ``acc[L, row - start]`` of both lanes (:func:`block`); :func:`finish`
mixes each row's accumulator, sums them per lane and resets them to ``ROW_L`` for the next
block. Text is read in place from the Arrow buffers, by address (the caller's column keeps the
buffers referenced for the call), every read bounds-checked against its buffer: a text kernel
returns 1 (and the wrapper raises :class:`IndexError`) where a view or offset points outside
its buffers. The tests hold every kernel to numpy's sums on tables of every type and edge value."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from dpexplorer.data.identity_scheme import (
    CANONICAL_NAN,
    FLOAT,
    GOLDEN,
    INT,
    MISSING,
    MIX_STEPS,
    ROWS,
    SEEDS,
    TEXT,
    tag_seed,
)

U64 = np.uint64
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F64, PTR = ir.DoubleType(), ir.PointerType()
NUMBERS, WORDS_INT, WORDS_UINT, WORDS_FLOAT = 0, 1, 2, 3
"""Modes of :func:`numbers`: a fixed tag for every value (booleans, dates, ...), int64 values,
uint64 values, float64 values (their bits)."""
KernelCall = Callable[[int, int, np.ndarray], None]
"""A column's kernel bound to its buffers: ``call(start, stop, acc)`` adds the cells of rows
``start .. stop`` to the block's accumulators ``acc`` (:func:`block`)."""


def _c(value: int) -> ir.Constant:
    """A 64-bit constant (the value modulo 2^64)."""
    return ir.Constant(I64, value & ((1 << 64) - 1))


class _Emit:
    """An IR builder with the hash's pieces: ``mix_L``, a cell added to the accumulators, loops."""

    def __init__(self, function: ir.Function) -> None:
        self.function = function
        self.b = ir.IRBuilder(function.append_basic_block("entry"))

    def mix(self, lane: int, x: ir.Value) -> ir.Value:
        b = self.b
        for shift, mult in MIX_STEPS[lane]:
            x = b.xor(x, b.lshr(x, _c(shift)))
            if mult:
                x = b.mul(x, _c(mult))
        return x

    def at(self, base: ir.Value, index: ir.Value, kind: ir.Type = I64) -> ir.Value:
        return self.b.load(self.b.gep(base, [index], source_etype=kind), typ=kind)

    def add_cell(
        self,
        accs: tuple[ir.Value, ir.Value],
        j: ir.Value,
        ks: tuple[ir.Value, ir.Value],
        gone: ir.Value,
        hashes: tuple[ir.Value, ir.Value],
    ) -> None:
        """``acc[L][j] += K_L * (missing_L if gone else h_L)``."""
        b = self.b
        for lane in (0, 1):
            cell = b.select(gone, _c(tag_seed(lane, MISSING)), hashes[lane])
            slot = b.gep(accs[lane], [j], source_etype=I64)
            b.store(b.add(b.load(slot, typ=I64), b.mul(ks[lane], cell)), slot)

    def rows(
        self,
        start: ir.Value,
        stop: ir.Value,
        missing: ir.Value,
        has_missing: ir.Value,
        body: Callable[[ir.Value, ir.Value], None],
    ) -> None:
        """``body(i, absent)`` for each row ``i`` in ``start .. stop``, ``absent`` its missing flag
        (a byte per row in ``missing``): emitted twice, with the flags and (``has_missing`` 0)
        without, so that each loop is a plain one the optimiser can vectorise."""
        b = self.b
        with b.if_else(b.icmp_unsigned("!=", has_missing, _c(0))) as (flagged, plain):
            with flagged, self.loop(start, stop) as i:
                body(i, b.icmp_unsigned("!=", self.at(missing, i, I8), ir.Constant(I8, 0)))
            with plain, self.loop(start, stop) as i:
                body(i, ir.Constant(I1, 0))

    @contextmanager
    def loop(self, start: ir.Value, stop: ir.Value) -> Iterator[ir.Value]:
        """``for i in range(start, stop)``: the body is emitted inside the ``with``."""
        b = self.b
        before = b.block
        head, body, after = (self.function.append_basic_block(n) for n in ("head", "body", "after"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(start, before)
        b.cbranch(b.icmp_signed("<", i, stop), body, after)
        b.position_at_end(body)
        yield i
        i.add_incoming(b.add(i, _c(1)), b.block)
        b.branch(head)
        b.position_at_end(after)

    def slots(self, kind: ir.Type, count: int = 1) -> ir.Value:
        """``count`` stack slots of ``kind``, allocated once, at the function's entry."""
        entry = self.function.entry_basic_block
        with self.b.goto_block(entry):
            self.b.position_at_start(entry)
            return self.b.alloca(kind, count)

    def variable(self, initial: ir.Value) -> ir.Value:
        """A stack slot holding ``initial`` (promoted to registers by the optimiser)."""
        slot = self.slots(initial.type)
        self.b.store(initial, slot)
        return slot


VOID = ir.VoidType()


def _function(module: ir.Module, name: str, args: list[ir.Type], returns: ir.Type = VOID) -> _Emit:
    return _Emit(ir.Function(module, ir.FunctionType(returns, args), name))


# ---------------------------------------------------------------- numbers
_NUMBER_ARGS = [PTR, PTR, I64, I64, I64, PTR, PTR, I64, I64, I64, I64]
"""words, missing flags, has_missing (0/1), start, stop, acc_A, acc_B, K_A, K_B, and the tag's
seeds of both lanes (:func:`~dpexplorer.data.identity.tag_seed`; unused by floats and uints)."""


def _float_cell(e: _Emit, bits: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(integral, word) of float64 ``bits``: an integral value of magnitude below 2^63 as its
    int64, NaN as the canonical NaN, anything else as its bits; and the tag is INT if integral."""
    b = e.b
    x = b.bitcast(bits, F64)
    trunc = b.call(e.function.module.declare_intrinsic("llvm.trunc", [F64]), [x])
    fabs = b.call(e.function.module.declare_intrinsic("llvm.fabs", [F64]), [x])
    integral = b.and_(b.fcmp_ordered("==", trunc, x), b.fcmp_ordered("<", fabs, ir.Constant(F64, 2.0**63)))
    as_int = b.fptosi(b.select(integral, x, ir.Constant(F64, 0.0)), I64)
    is_nan = b.fcmp_unordered("uno", x, x)
    word = b.select(integral, as_int, b.select(is_nan, _c(CANONICAL_NAN), bits))
    return integral, word


def _numbers(module: ir.Module, name: str, mode: int) -> None:
    e = _function(module, name, _NUMBER_ARGS)
    words, missing, has_missing, start, stop, acc0, acc1, k0, k1, seed0, seed1 = e.function.args
    b = e.b

    def row(i: ir.Value, absent: ir.Value) -> None:
        word = e.at(words, i)
        seeds: tuple[ir.Value, ir.Value] = (seed0, seed1)
        if mode == WORDS_FLOAT:
            integral, word = _float_cell(e, word)
            seeds = _either(e, integral, INT, FLOAT)
        elif mode == WORDS_UINT:  # 2^63 and more: through the float64 value (never integral there)
            big = b.icmp_unsigned(">=", word, _c(1 << 63))
            word = b.select(big, b.bitcast(b.uitofp(word, F64), I64), word)
            seeds = _either(e, big, FLOAT, INT)
        hashes = (e.mix(0, b.xor(seeds[0], word)), e.mix(1, b.xor(seeds[1], word)))
        e.add_cell((acc0, acc1), b.sub(i, start), (k0, k1), absent, hashes)

    e.rows(start, stop, missing, has_missing, row)
    b.ret_void()


def _either(e: _Emit, condition: ir.Value, tag: int, otherwise: int) -> tuple[ir.Value, ir.Value]:
    """Both lanes' seeds of ``tag`` where ``condition`` holds, else of ``otherwise``."""
    return (
        e.b.select(condition, _c(tag_seed(0, tag)), _c(tag_seed(0, otherwise))),
        e.b.select(condition, _c(tag_seed(1, tag)), _c(tag_seed(1, otherwise))),
    )


# ---------------------------------------------------------------- text
def _mask(e: _Emit, n: ir.Value) -> ir.Value:
    """The low ``n`` bytes of a word (``n`` from 0 to 8), without a shift by 64."""
    b = e.b
    shift = b.mul(_c(4), b.sub(_c(8), n))
    return b.lshr(b.lshr(_c(-1), shift), shift)


def _umin(e: _Emit, a: ir.Value, c: int) -> ir.Value:
    return e.b.select(e.b.icmp_unsigned("<", a, _c(c)), a, _c(c))


def _text_start(e: _Emit, lane: int, n: ir.Value) -> ir.Value:
    seed = SEEDS[lane] ^ (TEXT << 56)
    return e.mix(lane, e.b.xor(_c(seed), e.b.mul(n, _c(GOLDEN))))


def _text_at(module: ir.Module) -> ir.Function:
    """``text_at(address, end, n, out)``: both lanes' hashes of the ``n`` bytes at ``address``
    (its buffer ends at ``end``; no byte at or past it is read) into ``out[0..1]``."""
    e = _function(module, "text_at", [I64, I64, I64, PTR])
    address, end, n, out = e.function.args
    b = e.b
    h0, h1 = e.variable(_text_start(e, 0, n)), e.variable(_text_start(e, 1, n))
    words = b.udiv(b.add(n, _c(7)), _c(8))
    with e.loop(_c(0), words) as k:
        at = b.add(address, b.mul(k, _c(8)))
        remaining = _umin(e, b.sub(n, b.mul(k, _c(8))), 8)
        word = e.variable(_c(0))
        whole = b.icmp_signed("<=", b.add(at, _c(8)), end)
        with b.if_else(whole) as (then, otherwise):
            with then:
                b.store(b.load(b.inttoptr(at, PTR), typ=I64, align=1), word)
            with otherwise, e.loop(_c(0), remaining) as i:
                byte = b.zext(b.load(b.inttoptr(b.add(at, i), PTR), typ=I8), I64)
                b.store(b.or_(b.load(word, typ=I64), b.shl(byte, b.mul(i, _c(8)))), word)
        value = b.and_(b.load(word, typ=I64), _mask(e, remaining))
        b.store(e.mix(0, b.xor(b.load(h0, typ=I64), value)), h0)
        b.store(e.mix(1, b.xor(b.load(h1, typ=I64), value)), h1)
    b.store(b.load(h0, typ=I64), out)
    b.store(b.load(h1, typ=I64), b.gep(out, [_c(1)], source_etype=I64))
    b.ret_void()
    e.function.linkage = "internal"
    return e.function


_VIEW_ARGS = [PTR, PTR, PTR, I64, PTR, I64, I64, I64, PTR, PTR, I64, I64]
"""views (two uint64 per row), buffer addresses, buffer sizes, buffer count, missing flags,
has_missing, start, stop, acc_A, acc_B, K_A, K_B."""


def _view_text(module: ir.Module, text_at: ir.Function) -> None:
    """Cells of a text column in Arrow's view layout: per row a 16-byte view (length, then the
    bytes when at most 12, else a prefix, the buffer's index and the offset in it). Empty text
    and ``NA`` are missing. A first loop without branches (vectorised) hashes the values of at
    most 12 bytes from their views (a longer value adds nothing there); a second one, only if
    there are longer values, reads those from the data buffers. Returns 1 where a view points
    outside its buffers, else 0."""
    e = _function(module, "view_text", _VIEW_ARGS, I32)
    views, addresses, sizes, buffers, missing, has_missing, start, stop, acc0, acc1, k0, k1 = e.function.args
    b = e.b
    longer = e.variable(_c(0))

    def view(i: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        lo, hi = e.at(views, b.mul(i, _c(2))), e.at(views, b.add(b.mul(i, _c(2)), _c(1)))
        return lo, hi, b.and_(lo, _c(0xFFFFFFFF))

    def inline(i: ir.Value, absent: ir.Value) -> None:
        lo, hi, n = view(i)
        first = b.and_(b.or_(b.lshr(lo, _c(32)), b.shl(hi, _c(32))), _mask(e, _umin(e, n, 8)))
        second = b.and_(b.lshr(hi, _c(32)), _mask(e, b.sub(_umin(e, n, 12), _umin(e, n, 8))))
        two, long = b.icmp_unsigned(">", n, _c(8)), b.icmp_unsigned(">", n, _c(12))
        hashes = []
        for lane in (0, 1):
            h = e.mix(lane, b.xor(_text_start(e, lane, n), first))
            hashes.append(b.select(long, _c(0), b.select(two, e.mix(lane, b.xor(h, second)), h)))
        na = b.and_(b.icmp_unsigned("==", n, _c(2)), b.icmp_unsigned("==", first, _c(0x414E)))  # "NA"
        gone = b.or_(b.or_(b.icmp_unsigned("==", n, _c(0)), na), absent)
        b.store(b.add(b.load(longer, typ=I64), b.zext(b.and_(long, b.not_(absent)), I64)), longer)
        e.add_cell((acc0, acc1), b.sub(i, start), (k0, k1), gone, (hashes[0], hashes[1]))

    e.rows(start, stop, missing, has_missing, inline)
    bad = e.variable(ir.Constant(I32, 0))
    out = e.slots(I64, 2)

    def stored(i: ir.Value, absent: ir.Value) -> None:
        _, hi, n = view(i)
        with b.if_then(b.and_(b.icmp_unsigned(">", n, _c(12)), b.not_(absent))):
            index, offset = b.and_(hi, _c(0xFFFFFFFF)), b.lshr(hi, _c(32))
            inside = b.icmp_unsigned("<", index, buffers)
            size = e.at(sizes, b.select(inside, index, _c(0)))  # read only where it exists
            fits = b.and_(inside, b.icmp_unsigned("<=", b.add(offset, n), size))
            with b.if_else(fits) as (ok, outside):
                with ok:
                    base = e.at(addresses, index)
                    b.call(text_at, [b.add(base, offset), b.add(base, size), n, out])
                    hashes = (e.at(out, _c(0)), e.at(out, _c(1)))
                    e.add_cell((acc0, acc1), b.sub(i, start), (k0, k1), ir.Constant(I1, 0), hashes)
                with outside:
                    b.store(ir.Constant(I32, 1), bad)

    with b.if_then(b.icmp_unsigned("!=", b.load(longer, typ=I64), _c(0))):
        e.rows(start, stop, missing, has_missing, stored)
    b.ret(b.load(bad, typ=I32))


_OFFSET_ARGS = [PTR, I64, I64, PTR, I64, I64, I64, PTR, PTR, I64, I64]
"""offsets (int64, one more than the rows), data address, data size, missing flags,
has_missing, start, stop, acc_A, acc_B, K_A, K_B."""


def _offset_text(module: ir.Module, text_at: ir.Function) -> None:
    """Cells of a text column in Arrow's offsets layout: row ``i`` is the bytes ``offsets[i] ..
    offsets[i + 1]`` of the data buffer. Empty text and ``NA`` are missing. Returns 1 where an
    offset points outside the buffer, else 0."""
    e = _function(module, "offset_text", _OFFSET_ARGS, I32)
    offsets, address, size, missing, has_missing, start, stop, acc0, acc1, k0, k1 = e.function.args
    b = e.b
    out = e.slots(I64, 2)
    bad = e.variable(ir.Constant(I32, 0))

    def cell(i: ir.Value, absent: ir.Value) -> None:
        begin = e.at(offsets, i)
        n = b.sub(e.at(offsets, b.add(i, _c(1))), begin)
        gone = e.variable(b.or_(absent, b.icmp_signed("==", n, _c(0))))
        b.store(_c(0), b.gep(out, [_c(0)], source_etype=I64))
        b.store(_c(0), b.gep(out, [_c(1)], source_etype=I64))
        with b.if_then(b.not_(b.load(gone, typ=I1))):
            fits = b.and_(
                b.and_(b.icmp_signed(">=", begin, _c(0)), b.icmp_signed(">=", n, _c(0))),
                b.icmp_signed("<=", b.add(begin, n), size),
            )
            with b.if_else(fits) as (ok, outside):
                with ok:
                    at = b.add(address, begin)
                    b.call(text_at, [at, b.add(address, size), n, out])
                    with b.if_then(b.icmp_signed("==", n, _c(2))):  # "NA" is missing
                        pair = b.load(b.inttoptr(at, PTR), typ=ir.IntType(16), align=1)
                        b.store(b.icmp_unsigned("==", pair, ir.Constant(ir.IntType(16), 0x414E)), gone)
                with outside:
                    b.store(ir.Constant(I32, 1), bad)
        hashes = (e.at(out, _c(0)), e.at(out, _c(1)))
        e.add_cell((acc0, acc1), b.sub(i, start), (k0, k1), b.load(gone, typ=I1), hashes)

    e.rows(start, stop, missing, has_missing, cell)
    b.ret(b.load(bad, typ=I32))


def _finish(module: ir.Module) -> None:
    """``finish(acc_A, acc_B, n, out)``: the lane sums of the block's first ``n`` rows (each
    accumulator mixed) into ``out[0..1]``, the accumulators reset to ``ROW_L``."""
    e = _function(module, "finish", [PTR, PTR, I64, PTR])
    acc0, acc1, n, out = e.function.args
    b = e.b
    sums = [e.variable(_c(0)), e.variable(_c(0))]
    with e.loop(_c(0), n) as j:
        for lane, acc in enumerate((acc0, acc1)):
            slot = b.gep(acc, [j], source_etype=I64)
            b.store(b.add(b.load(sums[lane], typ=I64), e.mix(lane, b.load(slot, typ=I64))), sums[lane])
            b.store(_c(ROWS[lane]), slot)
    b.store(b.load(sums[0], typ=I64), out)
    b.store(b.load(sums[1], typ=I64), b.gep(out, [_c(1)], source_etype=I64))
    b.ret_void()


# ---------------------------------------------------------------- compile
def _module() -> ir.Module:
    module = ir.Module(name="identity")
    for mode, name in ((NUMBERS, "tagged"), (WORDS_UINT, "uints"), (WORDS_FLOAT, "floats")):
        _numbers(module, name, mode)
    text_at = _text_at(module)
    _view_text(module, text_at)
    _offset_text(module, text_at)
    _finish(module)
    return module


def _machine() -> object:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


def _object_code(machine: object) -> bytes:
    """The kernels' machine code for this processor: read from a cache file an earlier process
    left (:func:`_cache_paths`), else the IR optimised (LLVM's O3 pipeline) and compiled, about
    0.3 s of CPU, and cached in the first place that can be written."""
    paths = _cache_paths(machine)
    for path in paths:
        try:
            stored = path.read_bytes()
        except OSError:
            continue
        code, check = stored[:-32], stored[-32:]
        if code and hashlib.sha256(code).digest() == check:  # a damaged file is compiled again
            return code
    module = llvm.parse_assembly(str(_module()))
    module.triple, module.data_layout = machine.triple, str(machine.target_data)  # type: ignore[attr-defined]
    module.verify()
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(module, builder)
    code = bytes(machine.emit_object(module))  # type: ignore[attr-defined]
    any(_write_cache(path, code) for path in paths)
    return code


def _cache_paths(machine: object) -> list[Path]:
    """Where the machine code is cached: beside this module's bytecode (``__pycache__``, or under
    ``PYTHONPYCACHEPREFIX``), else in the user's cache directory (an installation the user
    cannot write), the file named by what the code depends on: this file and the key's
    definition (identity.py, identity_scheme.py), the processor and its features, and
    llvmlite's version."""
    here = Path(__file__)
    digest = hashlib.sha256()
    for source in (here, here.with_name("identity.py"), here.with_name("identity_scheme.py")):
        digest.update(source.read_bytes())
    cpu = f"{machine.triple}|{llvm.get_host_cpu_name()}|{llvm.get_host_cpu_features().flatten()}"  # type: ignore[attr-defined]
    digest.update(f"{cpu}|{llvmlite.__version__}|{llvm.llvm_version_info}".encode())
    name = f"identity_llvm.{digest.hexdigest()[:20]}.o"
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dpexplorer"
    return [Path(importlib.util.cache_from_source(str(here))).with_name(name), user / name]


def _write_cache(path: Path, code: bytes) -> bool:
    """Write the cache file atomically, the code followed by its SHA-256 (checked when read);
    False where it cannot be written (the next process then compiles again: the same code)."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as fh:
            temporary = fh.name
            fh.write(code + hashlib.sha256(code).digest())
        os.replace(temporary, path)
        return True
    except OSError:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return False


def _compile() -> tuple[object, dict[str, int]]:
    """The JIT engine holding the kernels' code (kept alive for the process) and their
    addresses."""
    machine = _machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(_object_code(machine)))
    engine.finalize_object()
    names = ("tagged", "uints", "floats", "view_text", "offset_text", "finish")
    addresses = {name: engine.get_function_address(name) for name in names}
    if not all(addresses.values()):
        raise RuntimeError(f"the identity kernels' code lacks a function: {addresses}")
    return engine, addresses


_ENGINE, _ADDRESSES = _compile()
_P, _L, _U = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64
_NUMBER = ctypes.CFUNCTYPE(None, _P, _P, _L, _L, _L, _P, _P, _U, _U, _U, _U)
_tagged, _uints, _floats = (_NUMBER(_ADDRESSES[n]) for n in ("tagged", "uints", "floats"))
_view = ctypes.CFUNCTYPE(ctypes.c_int32, _P, _P, _P, _L, _P, _L, _L, _L, _P, _P, _U, _U)(
    _ADDRESSES["view_text"]
)
_offset = ctypes.CFUNCTYPE(ctypes.c_int32, _P, _L, _L, _P, _L, _L, _L, _P, _P, _U, _U)(
    _ADDRESSES["offset_text"]
)
_finish_c = ctypes.CFUNCTYPE(None, _P, _P, _L, _P)(_ADDRESSES["finish"])


# ---------------------------------------------------------------- the Python side
def _address(array: np.ndarray) -> int:
    return int(array.ctypes.data)


_NO_FLAGS = np.zeros(1, np.bool_)
"""The flags of a column without missing cells: one zero byte, read for every row."""


def _flags(missing: np.ndarray) -> tuple[int, int]:
    """(address, has_missing) of a column's missing flags (empty: none is missing)."""
    if missing.size == 0:
        return _address(_NO_FLAGS), 0
    assert missing.dtype == np.bool_ and missing.flags.c_contiguous
    return _address(missing), 1


def _accumulators(acc: np.ndarray) -> tuple[int, int]:
    assert acc.dtype == U64 and acc.flags.c_contiguous and acc.shape[0] == 2
    return _address(acc), _address(acc) + 8 * acc.shape[1]


def _bound(
    function: Callable[..., int | None], head: tuple, tail: tuple, rows: int, keep: tuple, error: str = ""
) -> KernelCall:
    """``function`` with its column's arguments bound (``head`` before the rows, ``tail`` after
    the accumulators): the call adds rows ``start .. stop`` (of ``rows``) to ``acc`` and raises
    IndexError(``error``) where the kernel returns non-zero. ``keep``: the arrays whose
    addresses are bound, held as long as the call."""

    def call(start: int, stop: int, acc: np.ndarray) -> None:
        assert 0 <= start <= stop <= rows
        if function(*head, start, stop, *_accumulators(acc), *tail):
            raise IndexError(error)

    call.keep = keep  # type: ignore[attr-defined]
    return call


def numbers(mode: int, tag: int, words: np.ndarray, missing: np.ndarray, k0: int, k1: int) -> KernelCall:
    """The kernel adding a block's cells of a column of 64-bit values (``words``: their bits as
    uint64; ``mode``: :data:`NUMBERS` with ``tag``, or :data:`WORDS_INT`, :data:`WORDS_UINT`,
    :data:`WORDS_FLOAT`) whose column multipliers are ``k0``, ``k1``; ``missing``: one flag per
    row, or empty when no cell is missing."""
    assert words.dtype == U64 and words.flags.c_contiguous
    kernel = {NUMBERS: _tagged, WORDS_INT: _tagged, WORDS_UINT: _uints, WORDS_FLOAT: _floats}[mode]
    t = INT if mode == WORDS_INT else tag
    head = (_address(words), *_flags(missing))
    return _bound(kernel, head, (k0, k1, tag_seed(0, t), tag_seed(1, t)), words.size, (words, missing))


def view_text(
    views: np.ndarray, addresses: np.ndarray, sizes: np.ndarray, missing: np.ndarray, k0: int, k1: int
) -> KernelCall:
    """The kernel adding a block's cells of a text column in Arrow's view layout (``views``: rows
    by two uint64), its data buffers at ``addresses`` of ``sizes`` bytes (the caller keeps
    them alive). The call raises IndexError where a view points outside them."""
    assert views.dtype == U64 and views.flags.c_contiguous and views.ndim == 2
    count = len(addresses)
    if count == 0:  # every value inline: the kernel still reads a (never used) first size
        addresses = sizes = np.zeros(1, np.int64)
    addresses, sizes = np.ascontiguousarray(addresses, np.int64), np.ascontiguousarray(sizes, np.int64)
    head = (_address(views), _address(addresses), _address(sizes), count, *_flags(missing))
    keep = (views, addresses, sizes, missing)
    return _bound(_view, head, (k0, k1), views.shape[0], keep, "a text view points outside its data buffers")


def offset_text(
    offsets: np.ndarray, address: int, size: int, missing: np.ndarray, k0: int, k1: int
) -> KernelCall:
    """The kernel adding a block's cells of a text column in Arrow's offsets layout
    (``offsets``: int64, rows + 1), its data buffer at ``address`` of ``size`` bytes (the caller
    keeps it alive). The call raises IndexError where an offset points outside it."""
    assert offsets.dtype == np.int64 and offsets.flags.c_contiguous
    head = (_address(offsets), address, size, *_flags(missing))
    error = "a text offset points outside its data buffer"
    return _bound(_offset, head, (k0, k1), offsets.size - 1, (offsets, missing), error)


def finish(acc: np.ndarray, n: int) -> tuple[int, int]:
    """The lane sums of the block's first ``n`` rows (each accumulator mixed); the accumulators
    are reset to ``ROW_L`` for the next block."""
    assert 0 <= n <= acc.shape[1]
    out = np.zeros(2, U64)
    _finish_c(*_accumulators(acc), n, _address(out))
    return int(out[0]), int(out[1])


def block(rows: int) -> np.ndarray:
    """A block's accumulators (both lanes by ``rows``), ready for its first column (``ROW_L`` in
    every row): what every column's kernel adds to."""
    acc = np.empty((2, rows), dtype=U64)
    acc[0], acc[1] = U64(ROWS[0]), U64(ROWS[1])
    return acc
