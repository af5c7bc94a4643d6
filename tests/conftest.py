"""Test configuration: GUI tests run offscreen by themselves, never touch the user's settings or
ledger, and fail if they leave worker threads or timers running."""

from __future__ import annotations

import gc
import os
import tempfile
import threading
import time
import weakref

# Set here, by the configuration, not by whoever calls pytest.
os.environ["QT_QPA_PLATFORM"] = "offscreen"
_SANDBOX = tempfile.mkdtemp(prefix="dpexplorer-tests-")
os.environ["XDG_CONFIG_HOME"] = os.path.join(_SANDBOX, "config")
os.environ["XDG_DATA_HOME"] = os.path.join(_SANDBOX, "data")
os.environ.setdefault("MPLBACKEND", "Agg")
# The command line's progress (dpexplorer/commands/progress.py) shows a stage that runs over 2 s:
# on a loaded machine any could, and the tests that read stderr line by line would see it. Off
# here and in the CLI's child processes; tests/test_cli_progress.py turns it on.
os.environ["DPEXPLORER_PROGRESS_DELAY"] = "inf"

import pytest  # noqa: E402

_LIVE_TIMERS: weakref.WeakSet = weakref.WeakSet()


def _track_timers() -> None:
    """Record every QTimer started, so a test that leaves one running can be failed."""
    from PySide6.QtCore import QTimer

    if getattr(QTimer, "_dpx_tracked", False):
        return
    original_start = QTimer.start

    def start(self: QTimer, *args: object) -> None:
        _LIVE_TIMERS.add(self)
        original_start(self, *args)

    QTimer.start = start  # type: ignore[method-assign]
    QTimer._dpx_tracked = True  # type: ignore[attr-defined]


TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Options of the Spark driver JVMs the tests start (the session fixture's, and the CLI's in
test_spark_errors' child processes, which inherit the environment): C1 only (no C2 compiler
threads) and the serial garbage collector, for JVMs that live seconds to minutes and run small
jobs. pyspark starts the JVM with spark-submit and PYSPARK_SUBMIT_ARGS (unless the caller set it)."""
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f'--driver-java-options "{TEST_JVM_OPTIONS}" pyspark-shell')


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (``local[2]``, as CI) for every test that needs one: starting it
    takes seconds. Started before any GUI test's thread check, so its gateway threads are not
    counted as left running. Skipped without pyspark, except in CI (where it must run).

    The driver JVM compiles with the client compiler only and collects with the serial
    collector (:data:`TEST_JVM_OPTIONS`): the tests' Spark jobs are small and short, and the
    JVM's own CPU for six of them fell from 39-42 s to 21-23 s (-n0, load 2-4), wall 36-48 s
    to 30-38 s. Same answers: neither option changes what the JVM computes."""
    if not os.environ.get("CI"):
        pytest.importorskip("pyspark")
    from dpexplorer.data.engine.spark_engine import spark_session

    session = spark_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _leftover_threads(before: set[int]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]


@pytest.fixture(autouse=True)
def _no_leaks_in_gui_tests(request: pytest.FixtureRequest):
    """For tests that use qtbot: after the widgets are closed, no new thread, no thread-pool job
    and no active QTimer may remain."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    _track_timers()
    before = {t.ident for t in threading.enumerate()}
    # As in the app (gui.app.main_thread_garbage_collection): Qt objects must only ever be
    # collected in the main thread, never by a collection a worker thread happens to trigger.
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.enable()
    from PySide6.QtCore import QCoreApplication, QThreadPool

    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        QCoreApplication.processEvents()
        threads = _leftover_threads(before)
        pool = QThreadPool.globalInstance().activeThreadCount()
        timers = [t for t in list(_LIVE_TIMERS) if _alive_and_active(t)]
        if not threads and not pool and not timers:
            return
        time.sleep(0.02)
    names = [t.name for t in threads]
    pytest.fail(f"GUI test left running: threads {names}, {pool} thread-pool jobs, {len(timers)} timers")


def _alive_and_active(timer: object) -> bool:
    try:
        return bool(timer.isActive())  # type: ignore[attr-defined]
    except RuntimeError:  # the C++ object was deleted: not running
        return False


SPARK_TESTS = (
    "tests/data/test_engine_parity.py",
    "tests/data/test_spark_errors.py::test_a_file_gone_mid_run_says_so",
    "tests/data/test_spark_errors.py::test_spark_measures_a_text_column_as_polars_does",
    "tests/data/test_conditions.py::test_spark_holds_each_condition_on_the_same_rows",
    "tests/data/test_conditions.py::test_spark_evaluates_the_deepest_condition_as_polars",
    "tests/data/test_conditions.py::test_private_keys_stand_for_the_cells_alone",
    "tests/data/test_identity.py::test_spark_gives_the_polars_key_however_the_file_is_written",
    "tests/data/test_types.py",
    "tests/gui/test_large_files.py::test_a_parquet_directory_opens_on_spark_from_the_window",
    "tests/test_api_spark.py",
)
"""Tests (node-id prefixes) that all run on one pytest-xdist worker: they share one Spark session
(the ``spark`` session fixture), which takes tens of seconds to start. Every test that uses the
fixture must be here (checked at collection: :func:`_check_spark_tests`); one left out started a
second JVM on another worker (test_conditions' 3 s test took 49 s there, its setup 13 s). The
other tests of test_spark_errors.py run the CLI in child processes, each with its own JVM, so
they are not tied to this worker."""


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called only when it distributes
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Spread single tests over the workers (as ``--dist load``), except that the
    :data:`SPARK_TESTS` are one unit of work. (``--dist loadgroup`` with an ``xdist_group`` mark
    would say the same, but with pytest 9 and xdist 3.8 it does not keep the group on one
    worker.)"""
    from xdist.scheduler import LoadScopeScheduling

    class OneSparkWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "spark" if nodeid.startswith(SPARK_TESTS) else nodeid

    return OneSparkWorker(config, log)


LONGEST_FIRST = (
    "tests/data/test_engine_parity.py",
    "tests/gui/test_lessons.py::test_every_step_of_every_lesson_in_teaching_mode[08_blr_to_aim.toml]",
    "tests/gui/test_render_audit.py",
    "tests/test_static_checks.py::test_the_project_passes",
    "tests/data/test_spark_errors.py::test_spark_s_own_logging_stays_out_of_stderr",
    "tests/release/test_kill_plan.py",
    "tests/gui/test_stress.py",
    "tests/release/test_audit_paths.py",
    "tests/gui/test_lessons.py",
    "tests/test_cli_fuzz.py",
    "tests/core/mechanisms/test_mst_aim.py",
)
"""Tests (node-id prefixes) that take 10-65 s each, longest first (a suite run at dd2a4d4, three
workers, load 5-7: the Spark unit of :data:`SPARK_TESTS` behind test_engine_parity 100-150 s,
lesson 08's walk 53 s, the render audit 4 x 47-60 s, the Spark logging test's own JVM 18-50 s,
the kill test 41 s, the stress test 30 s, the release audit 27 tests and 199 s, the other
lessons up to 10 s each, fuzz 15 + 12 s). mypy's check takes 4 s with its cache but 30 s in a
clean clone (a cold cache): started last, it left the other workers idle at the end. Under
pytest-xdist these start first, so that no worker is left with one of them while the others
have nothing to do (longest processing time first)."""


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, asked by ``-n auto``
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the cores: the GUI and Spark tests wait (paints, timers, the JVM),
    so two workers on two cores kept 1.37 cores busy (373 s for the suite at 486756b) and three
    kept 1.49 (330 s, same machine, minutes apart); ``--maxprocesses`` still caps it."""
    return (os.cpu_count() or 1) + 1


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, :data:`LONGEST_FIRST` first, in that order (a stable sort: the tests
    under one prefix stay in their order). Every worker collects the same order, which the
    scheduler follows (pytest-xdist's loadscope reorder then puts the Spark unit, its largest
    unit of work, first)."""
    _check_spark_tests(items)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=_longest_first_rank)


def _longest_first_rank(item: pytest.Item) -> int:
    """The index of the first :data:`LONGEST_FIRST` prefix of the item's node id (after all of
    them if none)."""
    return next(
        (i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST)
    )


def _check_spark_tests(items: list[pytest.Item]) -> None:
    """Every collected test that uses the ``spark`` fixture is one of :data:`SPARK_TESTS`."""
    outside = [
        item.nodeid
        for item in items
        if "spark" in getattr(item, "fixturenames", ()) and not item.nodeid.startswith(SPARK_TESTS)
    ]
    if outside:
        raise pytest.UsageError(
            "tests/conftest.py: add these tests to SPARK_TESTS (they use the spark session, which "
            f"would start a second JVM on another worker): {', '.join(outside)}"
        )
