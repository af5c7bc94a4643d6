"""Apache Spark through pyspark's DataFrame API (an extra: ``pip install "dpexplorer[spark]"``,
with a Java runtime). Data that lives on a cluster stays there: every request is one Spark
aggregation (``agg`` or ``groupBy().count()`` over the declared cells) and only the aggregate
comes back to the app, which computes D', noise, accounting, ledger and export itself. The one
exception is :class:`SortedClipped` (order statistics): the clipped column comes back (as Arrow)
and is sorted here, since the mechanisms need all of it.

Semantics are those of the polars engine (tests/data/test_engine_parity.py): predicates and
axes are translated from the query values, not from polars expressions; NaN and infinities in
float columns are made missing when the table is opened, as :mod:`dpexplorer.data.load` does."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window as SparkWindow

from dpexplorer.core.mechanisms.base import CentredMoments
from dpexplorer.data.days import DECLARED_DAY
from dpexplorer.data.engine.base import (
    BoundContributions,
    CellCounts,
    CentredSums,
    ClippedMoments,
    DatasetSummary,
    DistinctCount,
    DistinctValues,
    Engine,
    Filter,
    GroupedCentredSums,
    GroupedSortedClipped,
    MeanParts,
    Moments,
    OrderWindow,
    PersonContributions,
    RowCount,
    RowStep,
    SortedClipped,
    Window,
    by_cell,
    window_answer,
)
from dpexplorer.data.engine.polars_engine import centred_moments, empty_moments, moments_from
from dpexplorer.data.engine.spark_columns import (
    centred_columns,
    clipped_column,
    literal_col,
    moment_columns,
    polars_schema,
    predicate_column,
    text_day,
    text_number,
    text_value,
    with_cell,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import (
    KEPT,
    MISSING_TEXT,
    ColumnInfo,
    Dataset,
    Declared,
    TextLayout,
    fingerprint_file,
    kind_of_dtype,
    load_dataset,
    span,
    text_layout,
)
from dpexplorer.data.queries import date_columns
from dpexplorer.data.sniff import WHITESPACE

LOCAL_MASTER = "local[*]"


def spark_log_path() -> Path:
    """Where Spark's own output goes (its log4j lines, progress bars, the launcher's notes):
    ``$XDG_STATE_HOME/dpexplorer/spark.log`` (``~/.local/state/...``), appended to, never the
    CLI's or the window's stderr."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "dpexplorer" / "spark.log"


def _java_major(java: str) -> int | None:
    """The major version of the Java at ``java`` (``java -version``), None if it cannot say."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def required_java() -> int:
    """The oldest Java the installed pyspark runs on (17 for Spark 4, 8 before)."""
    import pyspark

    return 17 if int(pyspark.__version__.split(".")[0]) >= 4 else 8


def check_java() -> None:
    """DataError, in words, unless a Java new enough for pyspark is found as Spark looks for
    it (``$JAVA_HOME/bin/java``, else ``java`` on PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    need = required_java()
    if not java or not os.access(java, os.X_OK):
        where = (
            f"JAVA_HOME ({home}) holds no bin/java" if home else "no java on PATH and JAVA_HOME is not set"
        )
        raise DataError(
            f"the Spark engine needs Java {need} or newer, and none was found ({where}): install a "
            f"JDK {need}+ and put it on PATH or set JAVA_HOME, or use --engine polars"
        )
    major = _java_major(java)
    if major is not None and major < need:
        raise DataError(
            f"the Spark engine needs Java {need} or newer, and {java} is Java {major}: install a "
            f"JDK {need}+ and point JAVA_HOME at it, or use --engine polars"
        )


def spark_session(master: str | None = None) -> SparkSession:
    """The process's Spark session (created on first use; ``master`` as in spark-submit:
    ``local[*]`` by default, ``spark://host:7077`` for a cluster). The web UI and the console
    progress bar are off; Spark's own output (the JVM's stderr: log4j lines, the launcher's
    notes) goes to :func:`spark_log_path`, not to this process's stderr. Local Python workers
    run this interpreter (the content fingerprint runs polars in them); a cluster's need polars
    installed, or PYSPARK_PYTHON naming a Python that has it. DataError, in words, when Java is
    missing or too old (:func:`check_java`) or the session cannot start."""
    if (master or LOCAL_MASTER).startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # pyspark reads it, not a conf
    builder = (
        SparkSession.builder.master(master or LOCAL_MASTER)
        .appName("dpexplorer")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
    )
    if SparkContext._active_spark_context is not None:  # started: the JVM's stderr is the log
        return builder.getOrCreate()
    check_java()
    log = spark_log_path()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        log_fd = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    try:
        sys.stderr.flush()
        os.dup2(log_fd, 2)  # the JVM (and the workers it starts) inherit this stderr for good
        session = builder.getOrCreate()
    except Exception as exc:  # pyspark raises PySparkRuntimeError, py4j errors, RuntimeError
        raise DataError(
            f"Spark could not start a session at {master or LOCAL_MASTER}: {_first_line(exc)}; "
            f"Spark's own log is {log}"
        ) from exc
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log_fd)
    return session


# ---------------------------------------------------------------- the dataset reference
@dataclass(frozen=True, eq=False)
class SparkDataset:
    """A Spark table or a Parquet/CSV path read by Spark: the same surface the data layer and
    the release path read from a :class:`~dpexplorer.data.load.Dataset` (``schema``,
    ``n_rows``, ``columns``, ``fingerprint``, ``preview``), evaluated by :attr:`engine`."""

    source: str
    frame: DataFrame
    engine: SparkEngine
    warnings: tuple[str, ...] = ()
    format: str = "spark"
    reference: Dataset | None = None
    """A CSV file's reading by the polars loader, whose schema Spark reads it with."""
    plain: DataFrame | None = None
    """A Parquet file's or table's frame read without its declared day formats, when they
    changed a column: its content keys the ledger (a declaration never gives a second budget)."""

    @property
    def written_text(self) -> frozenset[str]:
        """As :attr:`dpexplorer.data.load.Dataset.written_text`: a CSV file's declared text
        columns (the loader's), a Parquet file's or table's text columns."""
        if self.reference is not None:
            return self.reference.written_text
        return frozenset(c for c, t in self.schema.items() if t == pl.String)

    @property
    def types_declared(self) -> bool:
        """As :attr:`dpexplorer.data.load.Dataset.types_declared`: a Parquet file or a table."""
        return self.reference is None

    @property
    def path(self) -> Path:
        return Path(self.source)

    @cached_property
    def schema(self) -> pl.Schema:
        """Column names and the polars type each Spark type is read as (queries check these);
        the hidden kept-text columns (:data:`~dpexplorer.data.load.KEPT`) left out."""
        return pl.Schema({n: t for n, t in polars_schema(self.frame).items() if not n.startswith(KEPT)})

    @property
    def kept_text(self) -> tuple[str, ...]:
        """As :attr:`dpexplorer.data.load.Dataset.kept_text`: the columns whose words keep their
        text in a hidden column."""
        return tuple(n[len(KEPT) :] for n in self.frame.columns if n.startswith(KEPT))

    def with_text(self, columns: list[str]) -> SparkDataset:
        """As :meth:`dpexplorer.data.load.Dataset.with_text`: each of ``columns`` with kept text
        read as text again (a number cell as its number's text, any other as the text it held)."""
        frame = self.frame
        for c in (c for c in columns if KEPT + c in frame.columns):
            frame = frame.withColumn(c, F.coalesce(literal_col(c).cast("string"), literal_col(KEPT + c)))
        return dataclasses.replace(self, frame=frame)

    def with_keys(self, columns: list[str]) -> SparkDataset:
        """As :meth:`dpexplorer.data.load.Dataset.with_keys` (:func:`dpexplorer.data.cells.text_key`)."""
        frame = self.with_text(columns).frame
        for c in (c for c in dict.fromkeys(columns) if c in self.schema):
            text = literal_col(c).cast("string")
            number = text_number(text)
            whole = (number == F.floor(number)) & (F.abs(number) < F.lit(2.0**53))
            key = (
                F.when(whole, number.cast("long").cast("string"))
                .when(number.isNotNull(), number.cast("string"))
                .when(text_value(text).isNull(), text)
            )
            frame = frame.withColumn(c, key)
        return dataclasses.replace(self, frame=frame)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(self.schema.names())

    @cached_property
    def n_rows(self) -> int:
        return int(self.engine.aggregate(self, RowCount()))

    @cached_property
    def columns(self) -> tuple[ColumnInfo, ...]:
        return self.engine.column_infos(self)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the file's bytes; of a Parquet directory, of its data files' names and
        bytes in name order; of a table, of its name (the ledger then charges the name)."""
        return fingerprint_source(self.source)

    @cached_property
    def content_fingerprint(self) -> str:
        """The dataset's identity in the ledger: the same content fingerprint as polars gives
        the same data (:mod:`dpexplorer.data.engine.spark_fingerprint`), by one aggregation."""
        from dpexplorer.data.engine.spark_fingerprint import spark_content_fingerprint

        if self.reference is not None and self.reference.reading.retyped:
            return self.reference.content_fingerprint  # the file read without its declarations
        frame = self.frame if self.plain is None else self.plain
        schema = pl.Schema({n: t for n, t in polars_schema(frame).items() if not n.startswith(KEPT)})
        try:
            return spark_content_fingerprint(frame.select(*map(literal_col, schema)), schema)
        except Exception as exc:  # py4j and the Python workers raise many types
            raise _failure("fingerprint", self.source, exc) from exc

    def earlier_content_fingerprints(self) -> tuple[str, ...]:
        """As :meth:`dpexplorer.data.load.Dataset.earlier_content_fingerprints` (both engines
        give one key for one table): the keys a CSV file had when fewer spellings of a missing
        value were read as missing, or by the type rules of before, where they differ."""
        return () if self.reference is None else self.reference.earlier_content_fingerprints()

    def preview(self, n: int = 200) -> pl.DataFrame:
        return self.engine.preview(self, n)


def fingerprint_source(source: str) -> str:
    path = Path(source)
    if path.is_file():
        return fingerprint_file(path)
    digest = hashlib.sha256()
    if path.is_dir():
        for part in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))):
            digest.update(str(part.relative_to(path)).encode())
            digest.update(bytes.fromhex(fingerprint_file(part)))
    else:
        digest.update(f"spark table {source}".encode())
    return digest.hexdigest()


def open_spark(
    source: str | os.PathLike[str], master: str | None = None, declared: Declared | None = None
) -> SparkDataset:
    """Open ``source`` on Spark: a Parquet file or directory, a CSV/TSV file (read with the
    polars loader's schema, :func:`_read_text`), or else the name of a table in the session's
    catalog. NaN and infinities in float columns become missing (counted in ``warnings``).
    ``declared``: as :func:`dpexplorer.data.load.load_dataset`'s (a Parquet file or a table
    declares its own types: only its day formats are read). DataError if Spark cannot read it."""
    engine = SparkEngine(spark_session(master))
    text = os.fspath(source)
    declared = declared or Declared()
    try:
        frame, notes, reference, plain = _read(engine.session, text, declared)
    except DataError:
        raise
    except Exception as exc:  # py4j and Spark raise many types; each becomes one DataError
        raise _failure("read", text, exc) from exc
    if not frame.columns:
        raise DataError(f"{text} has no columns")
    return SparkDataset(text, frame, engine, tuple(notes), reference=reference, plain=plain)


def _read(
    session: SparkSession, source: str, declared: Declared
) -> tuple[DataFrame, list[str], Dataset | None, DataFrame | None]:
    path = Path(source)
    layout = text_layout(path) if path.is_file() else None
    if layout is not None and layout.fmt != "parquet":
        return (*_read_text(session, path, layout, declared), None)
    exists = path.is_dir() or path.is_file()
    frame = session.read.parquet(str(path)) if exists else session.table(source)
    frame, notes = _finite(frame)
    frame, plain = _days(frame, dict(declared.formats))
    return frame, notes, None, plain


def _read_text(
    session: SparkSession, path: Path, layout: TextLayout, declared: Declared
) -> tuple[DataFrame, list[str], Dataset]:
    """A CSV/TSV file as :func:`dpexplorer.data.load.load_dataset` reads it, so that both
    engines see one table (issue 17): the same separator, the polars loader's column names and
    types (its inference, text that turns up late, mostly-numeric text, ISO dates only: Spark's
    own inference would make 2021-3-1 a timestamp and "inf" text), the same rows (a row with
    the wrong number of fields is dropped, as the loader sets it aside) and the same notes.
    The schema costs the loader's streaming passes over the file (about what Spark's own
    inference, a full pass, cost); Spark then reads every field as text and casts it."""
    fmt, sep = layout.fmt, layout.sep
    if sep == WHITESPACE or not layout.utf8:
        raise DataError(
            f"{path.name}: Spark reads UTF-8 text delimited by commas, tabs, semicolons or pipes; "
            "re-save it as UTF-8 CSV, or as Parquet"
        )
    # gzip cannot be scanned lazily, nor lines ending with CR alone (the loader converts them)
    reference = load_dataset(path, lazy=fmt == "csv" and not layout.cr, layout=layout, declared=declared)
    formats = reference.day_formats
    schema = reference.schema
    texts = [c for c, t in schema.items() if t == pl.String]
    # on the frame itself: Dataset.select makes an eager frame's text Categorical, which has no
    # str.contains (a .csv.gz or CR-only file, read eagerly, failed here)
    has_break = [pl.col(c).str.contains("\n", literal=True).any() for c in texts]
    breaks = texts and any(reference.frame.lazy().select(has_break).collect().row(0))
    # without this, a count reads no field, so it counts the rows DROPMALFORMED drops
    session.conf.set("spark.sql.csv.parser.columnPruning.enabled", "false")
    raw = session.read.csv(
        str(path),
        header=True,
        sep=sep,
        escape='"',  # "" inside quotes is one quote (RFC 4180), as polars reads it
        mode="DROPMALFORMED",
        # a quoted line break: slower (one task reads the whole file), only when the file has one
        multiLine=bool(breaks),
        schema=T.StructType([T.StructField(f"_{i}", T.StringType()) for i in range(len(schema))]),
    )
    frame = raw.select(
        *(
            _as_read(F.col(f"_{i}"), dtype, formats.get(name)).alias(name)
            for i, (name, dtype) in enumerate(schema.items())
        ),
        *(_kept(F.col(f"_{list(schema).index(name)}")).alias(KEPT + name) for name in reference.kept_text),
    )
    frame, _ = _finite(frame)  # the loader's notes already count these
    return frame, list(reference.warnings), reference


def _kept(text: Column) -> Column:
    """The text of a cell the loader made missing in a column it read as numbers (not a number,
    true or false; :data:`~dpexplorer.data.load.KEPT`), null for any other cell."""
    text = F.when(~text.isin(*MISSING_TEXT), text)
    return F.when(text_value(text).isNull(), text)


def _as_read(text: Column, dtype: pl.DataType, day_format: str | None = None) -> Column:
    """A text field as the polars loader types it: a value that is not a number is missing in a
    numeric column (the loader counted it), and NaN and infinities are made missing later; a day
    in an unambiguous spelling, or in the column's declared format (``day_format``), a day. A
    field that spells a missing value (empty, ``NA``, ``null``, ``N/A``, ...: the loader's
    :data:`~dpexplorer.data.load.MISSING_TEXT`) is missing, quoted or not."""
    text = F.when(~text.isin(*MISSING_TEXT), text)
    if dtype == pl.Int64:
        return text.try_cast("long")
    if dtype == pl.Float64:
        return text_number(text)
    if dtype == pl.Boolean:
        return F.when(F.lower(text) == "true", F.lit(True)).when(F.lower(text) == "false", F.lit(False))
    if dtype == pl.Date:
        return text_day(text, day_format)
    if dtype == pl.String:
        return text
    raise DataError(f"the CSV loader typed a column as {dtype}, which the Spark reader does not know")


def _days(frame: DataFrame, formats: dict[str, str]) -> tuple[DataFrame, DataFrame | None]:
    """Text columns of days become dates, the rule of :func:`dpexplorer.data.load._days` (one
    aggregation over the text columns): a column whose every value is a day in an unambiguous
    spelling, or one with a declared format (``formats``) whose values are days in it (the
    others missing). Returns the frame and, when a declared format changed a column, the frame
    read without the declarations (its content keys the ledger), else None."""
    texts = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.StringType)]
    if not texts:
        return frame, None
    day = {c: text_day(literal_col(c)) for c in texts}
    declared = {c: text_day(literal_col(c), formats[c]) for c in texts if c in formats}
    row = frame.agg(
        *(
            F.min((literal_col(c).isNull() | day[c].isNotNull()).cast("int")).alias(f"ok{i}")
            for i, c in enumerate(texts)
        ),
        *(F.count(literal_col(c)).alias(f"n{i}") for i, c in enumerate(texts)),
        *(F.count(d).alias(f"d{texts.index(c)}") for c, d in declared.items()),
    ).collect()[0]
    dates = [c for i, c in enumerate(texts) if row[f"ok{i}"] == 1 and row[f"n{i}"]]  # all missing: text
    formatted = [c for c in declared if row[f"d{texts.index(c)}"] or formats[c] == DECLARED_DAY]

    def read(with_formats: bool) -> DataFrame:
        use = formatted if with_formats else []
        return frame.select(
            *(
                declared[c].alias(c) if c in use else day[c].alias(c) if c in dates else literal_col(c)
                for c in frame.columns
            )
        )

    if not formatted:
        return (read(False) if dates else frame), None
    return read(True), read(False)


def _finite(frame: DataFrame) -> tuple[DataFrame, list[str]]:
    floats = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.FloatType | T.DoubleType)]
    if not floats:
        return frame, []
    bad = {c: F.isnan(literal_col(c)) | literal_col(c).isin(float("inf"), float("-inf")) for c in floats}
    row = frame.agg(*(F.sum(F.when(b, 1).otherwise(0)).alias(c) for c, b in bad.items())).collect()[0]
    notes = [
        f"column {c!r}: NaN or infinity in {int(row[c]):,} rows; those values are treated as missing"
        for c in floats
        if row[c]
    ]
    fixed = [
        F.when(bad[c], F.lit(None)).otherwise(literal_col(c)).alias(c) if c in bad else literal_col(c)
        for c in frame.columns
    ]
    return (frame.select(*fixed) if notes else frame), notes


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_GONE = ("FileNotFoundException", "PATH_NOT_FOUND", "FILE_NOT_EXIST")
"""What Spark's errors say when a file it was reading is no longer there."""


def _failure(doing: str, source: str, exc: BaseException) -> DataError:
    """One line for a Spark error while it was ``doing`` something with ``source``: in words
    when the file or directory is gone (deleted or moved while Spark read it), else Spark's first
    line and where its own log is."""
    text = str(exc)
    path = Path(source)
    path_like = os.sep in source or bool(path.suffix)
    if not path.exists() and (path_like or any(marker in text for marker in _GONE)):
        return DataError(
            f"{source} is gone: it was deleted or moved while Spark was reading it; put it back and run again"
        )
    return DataError(
        f"Spark could not {doing} {source}: {_first_line(exc)} (Spark's log: {spark_log_path()})"
    )


# ---------------------------------------------------------------- the engine
class SparkEngine(Engine):
    """pyspark DataFrame API on a :class:`SparkDataset`."""

    def __init__(self, session: SparkSession) -> None:
        self.session = session

    def as_numbers(self, dataset: SparkDataset, column: str) -> SparkDataset:
        """As the polars engine's (:meth:`Engine.as_numbers`), by the rule of
        :mod:`dpexplorer.data.cells` (:func:`.spark_columns.text_number` for text)."""
        import dataclasses

        dtype = dataset.schema.get(column)
        if dtype == pl.String:
            number = text_number(literal_col(column))
        elif dtype == pl.Boolean or (dtype is not None and dtype.is_numeric()):
            number = literal_col(column).cast("double")
        else:
            number = F.lit(None).cast("double")
        return dataclasses.replace(dataset, frame=dataset.frame.withColumn(column, number))

    def label(self, dataset: SparkDataset) -> str:
        return f"Spark, {self.session.sparkContext.master}"

    def aggregate(self, dataset: SparkDataset, request: Any, steps: tuple[RowStep, ...] = ()) -> Any:
        try:
            return super().aggregate(dataset, request, steps)
        except (TypeError, DataError):
            raise
        except Exception as exc:  # an AnalysisException or a Py4JJavaError: one line for the user
            raise _failure("evaluate the query on", dataset.source, exc) from exc

    def _frame(self, dataset: SparkDataset, steps: tuple[RowStep, ...]) -> DataFrame:
        frame = dataset.frame
        for step in steps:
            frame = getattr(self, self.STEPS[type(step)])(frame, step)
        return frame

    @staticmethod
    def _filter(frame: DataFrame, step: Filter) -> DataFrame:
        return frame.filter(predicate_column(step.predicate, polars_schema(frame)))

    @staticmethod
    def _bound(frame: DataFrame, step: BoundContributions) -> DataFrame:
        """Contribution bounding (:class:`BoundContributions`), the polars engine's rule: the
        ``max_groups`` groups of smallest pair key within the person (ties by cell), then the
        ``max_rows`` rows of smallest row key within (person, group). Spark's ``rand()`` depends
        on the partition a row lands in, so the keys are seeded ``xxhash64`` content hashes: of
        (person, cell) for a pair, and of the whole row with its occurrence among identical rows
        for a row (without the occurrence, k identical rows would share one key and be kept or
        dropped together: not a uniform choice). Identical rows are interchangeable, so which
        of them gets which occurrence number changes no aggregate."""
        pair_seed, row_seed = step.hash_seeds()
        columns = [literal_col(c) for c in frame.columns]
        unit = literal_col(step.unit)
        frame = with_cell(frame.where(unit.isNotNull()), step.keys, "__cell")
        pair_key = F.xxhash64(F.lit(pair_seed), unit, F.col("__cell"))
        by_person = SparkWindow.partitionBy(unit).orderBy(pair_key, F.col("__cell"))
        frame = frame.withColumn("__g", F.dense_rank().over(by_person)).where(F.col("__g") <= step.max_groups)
        occurrence = F.row_number().over(SparkWindow.partitionBy(*columns).orderBy(F.col("__cell")))
        frame = frame.withColumn("__o", occurrence)
        row_key = F.xxhash64(F.lit(row_seed), F.col("__o"), *columns)
        by_pair = SparkWindow.partitionBy(unit, F.col("__cell")).orderBy(row_key)
        frame = frame.withColumn("__r", F.row_number().over(by_pair)).where(F.col("__r") <= step.max_rows)
        return frame.drop("__cell", "__g", "__o", "__r")

    def _row_count(self, dataset: SparkDataset, request: RowCount, steps: tuple[RowStep, ...]) -> int:
        frame = self._frame(dataset, steps)
        if request.where is None:
            return int(frame.count())
        hit = F.sum(F.when(predicate_column(request.where, dataset.schema), 1).otherwise(0))
        return int(frame.agg(hit.alias("n")).collect()[0]["n"] or 0)

    def _moments(self, dataset: SparkDataset, request: ClippedMoments, steps: tuple[RowStep, ...]) -> Moments:
        columns = (F.count(F.lit(1)).alias("n"), *moment_columns(request))
        return moments_from(self._frame(dataset, steps).agg(*columns).collect()[0].asDict(), request)

    def _centred(
        self, dataset: SparkDataset, request: CentredSums, steps: tuple[RowStep, ...]
    ) -> CentredMoments:
        row = self._frame(dataset, steps).agg(*centred_columns(request)).collect()[0]
        return centred_moments(row.asDict(), request)

    def _mean_parts(
        self, dataset: SparkDataset, request: MeanParts, steps: tuple[RowStep, ...]
    ) -> tuple[Moments, CentredMoments]:
        """One aggregation of both requests' columns (one scan, as on polars)."""
        moments, centred = request.parts
        columns = (*centred_columns(centred), *moment_columns(moments))
        row = self._frame(dataset, steps).agg(*columns).collect()[0].asDict()
        return moments_from(row, moments), centred_moments(row, centred)

    def _grouped_centred(
        self, dataset: SparkDataset, request: GroupedCentredSums, steps: tuple[RowStep, ...]
    ) -> tuple[CentredMoments, ...]:
        frame = self._frame(dataset, steps)
        rows = with_cell(frame, request.axes, "cell").groupBy("cell").agg(*centred_columns(request)).collect()
        answers = [centred_moments(r.asDict(), request) for r in rows]
        return by_cell(request, [int(r["cell"]) for r in rows], answers, empty_moments(request))

    def _grouped_sorted(
        self, dataset: SparkDataset, request: GroupedSortedClipped, steps: tuple[RowStep, ...]
    ) -> tuple[np.ndarray, ...]:
        """Each cell's clipped values come back (as :class:`SortedClipped`'s column does) and are
        sorted here."""
        frame = self._frame(dataset, steps)
        grouped = (
            with_cell(frame, request.axes, "cell")
            .groupBy("cell")
            .agg(F.collect_list(clipped_column(request)).alias("v"))
        )
        rows = grouped.collect()
        answers = [np.sort(np.asarray(r["v"], dtype=float)) for r in rows]
        return by_cell(request, [int(r["cell"]) for r in rows], answers, np.zeros(0))

    def _distinct(self, dataset: SparkDataset, request: DistinctCount, steps: tuple[RowStep, ...]) -> int:
        frame = self._frame(dataset, steps)
        return int(frame.agg(F.countDistinct(literal_col(request.column)).alias("n")).collect()[0]["n"])

    def _values(
        self, dataset: SparkDataset, request: DistinctValues, steps: tuple[RowStep, ...]
    ) -> tuple[str, ...]:
        """As the polars engine: the distinct non-missing values as text, sorted."""
        column = literal_col(request.column)
        rows = self._frame(dataset, steps).where(column.isNotNull()).select(column.cast("string").alias("v"))
        return tuple(sorted(r["v"] for r in rows.distinct().collect()))

    def _persons(
        self, dataset: SparkDataset, request: PersonContributions, steps: tuple[RowStep, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """As the polars engine: one row per (person, cell) comes back (the mechanism's D'
        removes the person contributing most, so it needs every person's totals)."""
        y = clipped_column(request) - F.lit(request.midpoint) if request.column else F.lit(0.0)
        grouped = (
            self._frame(dataset, steps)
            .where(literal_col(request.unit).isNotNull())
            .transform(lambda rows: with_cell(rows, request.axes, "cell"))
            .groupBy(literal_col(request.unit).cast("string").alias("__id"), F.col("cell"))
            .agg(F.count(F.lit(1)).alias("n"), F.sum(y).alias("s"))
        )
        rows = _to_polars(grouped)
        ids = rows["__id"]
        codes = (ids.rank("dense").to_numpy() - 1).astype(np.int64)
        names = ids.unique().sort().to_list()
        sums = rows["s"].cast(pl.Float64).to_numpy()
        return codes, rows["cell"].to_numpy(), rows["n"].to_numpy().astype(float), sums, names

    def _sorted(
        self, dataset: SparkDataset, request: SortedClipped, steps: tuple[RowStep, ...]
    ) -> np.ndarray:
        frame = self._frame(dataset, steps).select(clipped_column(request).alias("v"))
        return np.sort(_to_polars(frame)["v"].to_numpy().astype(float))

    def _window(self, dataset: SparkDataset, request: OrderWindow, steps: tuple[RowStep, ...]) -> Window:
        """From the whole sorted column (no selection on Spark yet: the same slice, slower)."""
        sorted_request = SortedClipped(request.column, request.lower, request.upper)
        return window_answer(self._sorted(dataset, sorted_request, steps), request)

    def _cells(self, dataset: SparkDataset, request: CellCounts, steps: tuple[RowStep, ...]) -> np.ndarray:
        frame = with_cell(self._frame(dataset, steps), request.axes, "cell")
        rows = frame.groupBy("cell").count().collect()
        return by_cell(request, [int(r["cell"]) for r in rows], [float(r["count"]) for r in rows], 0.0)

    # ------------------------------------------------------------ the steward's view
    def preview(self, dataset: SparkDataset, rows: int) -> pl.DataFrame:
        return _to_polars(dataset.frame.select(*map(literal_col, dataset.schema)).limit(rows))

    def column_infos(self, dataset: SparkDataset) -> tuple[ColumnInfo, ...]:
        """Exact missing counts; distinct counts estimated (HyperLogLog++), as on a streamed
        polars file: exact ones would need every column's distinct values at once."""
        names = dataset.column_names
        schema = dataset.schema
        dates = date_columns(schema)
        row = dataset.frame.agg(
            *(F.sum(literal_col(c).isNull().cast("long")).alias(f"m{i}") for i, c in enumerate(names)),
            *(F.approx_count_distinct(literal_col(c)).alias(f"d{i}") for i, c in enumerate(names)),
            *(F.min(literal_col(c)).alias(f"\x1f<{c}") for c in dates),
            *(F.max(literal_col(c)).alias(f"\x1f>{c}") for c in dates),
        ).collect()[0]
        found = row.asDict()
        return tuple(
            ColumnInfo(
                c,
                kind_of_dtype(schema[c]),
                str(schema[c]),
                int(row[f"m{i}"] or 0),
                int(row[f"d{i}"]),
                span(found, c),
            )
            for i, c in enumerate(names)
        )

    def summary(self, dataset: SparkDataset, top: int = 16) -> DatasetSummary:
        columns = dataset.columns
        numeric = [c.name for c in columns if c.kind == "numeric"]
        ranges: dict[str, tuple[float, float]] = {}
        if numeric:
            row = dataset.frame.agg(
                *(F.min(literal_col(c)).alias(f"lo{i}") for i, c in enumerate(numeric)),
                *(F.max(literal_col(c)).alias(f"hi{i}") for i, c in enumerate(numeric)),
            ).collect()[0]
            for i, c in enumerate(numeric):
                low, high = row[f"lo{i}"], row[f"hi{i}"]
                if low is not None and high is not None and low < high:
                    ranges[c] = (float(low), float(high))
        top_values: dict[str, list[str]] = {}
        for c in (c.name for c in columns if c.kind != "numeric"):
            counts = (
                dataset.frame.where(literal_col(c).isNotNull()).groupBy(literal_col(c).alias("v")).count()
            )
            # the values as Python objects, shown as the polars engine shows them (True, not true)
            top_values[c] = [str(r["v"]) for r in counts.orderBy(F.desc("count"), "v").limit(top).collect()]
        return DatasetSummary(dataset.n_rows, columns, ranges, top_values)


def _to_polars(frame: DataFrame) -> pl.DataFrame:
    """A Spark DataFrame's rows as polars, through Arrow where pyspark has it (>= 4.0)."""
    if hasattr(frame, "toArrow"):
        return pl.from_arrow(frame.toArrow())  # type: ignore[return-value]
    rows = frame.collect()
    return pl.DataFrame([r.asDict() for r in rows], schema=frame.columns, orient="row")
