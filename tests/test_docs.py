"""The documentation cannot rot: the README stays a short front door whose commands CI reads,
every relative link in README.md, docs/**/*.md and PLAN_FORMAT.md reaches a file (and a heading,
for a ``#anchor`` into Markdown), and the user guide's examples run: its Python blocks, its plans
(each prepared against the data it names, nothing drawn or charged), its lesson file (read by the
lesson reader) and its command lines (their output compared, ``...`` standing for any text). The
Python API page's doctests are run by tests/test_api_docs.py."""

from __future__ import annotations

import doctest
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"
API_PAGE = GUIDE / "api.md"  # its doctests: tests/test_api_docs.py
MARKDOWN = [
    README,
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "dpexplorer" / "release" / "PLAN_FORMAT.md",  # the guide's command line page links it
]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text(encoding="utf-8")) if lang == language]


def _prose(text: str) -> str:
    """The text without fenced blocks and inline code, where a link is not a link."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"#{1,6} (.*)", line):
            slug, n = _slug(match.group(1)), 1
            while slug in found:  # GitHub numbers repeated headings
                slug, n = f"{_slug(match.group(1))}-{n}", n + 1
            found.add(slug)
    return found


def _links(page: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8")))


def test_the_readme_is_a_short_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move the detail to docs/guide/"


@pytest.mark.parametrize("marker", ["run-command", "test-command"])
def test_the_readme_keeps_one_command_between_each_pair_of_markers(marker: str) -> None:
    """.ci/run reads the test command from between its markers (and the run command is shown the same way)."""
    text = README.read_text(encoding="utf-8")
    block = re.search(rf"^<!-- {marker} -->\n```sh\n(.*?)```\n<!-- /{marker} -->$", text, re.M | re.S)
    assert block is not None, f"the {marker} markers around one ```sh block are gone"
    assert len(block.group(1).strip().splitlines()) == 1


def test_every_guide_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / link.split("#")[0]).resolve() for link in _links(README)}
    assert {page.resolve() for page in GUIDE.glob("*.md")} <= linked
    assert (ROOT / "docs" / "ARCHITECTURE.md").resolve() in linked


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link} (no heading with that anchor)")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_anchor_rule_matches_github_s() -> None:
    assert _slug("Composing guarantees: `dpexplorer account`") == "composing-guarantees-dpexplorer-account"
    assert _slug("Sampling (a claim)") == "sampling-a-claim"
    assert _slug("A five-minute tour") == "a-five-minute-tour"


def test_the_guide_s_python_examples_run() -> None:
    """Every ```python block of the guide, apart from the API page's: doctests where they show a
    prompt, else run as a script."""
    for page in sorted(GUIDE.glob("*.md")):
        if page == API_PAGE:
            continue
        for number, block in enumerate(_blocks(page, "python"), start=1):
            name = f"{page.name}, python block {number}"
            if ">>>" in block:
                test = doctest.DocTestParser().get_doctest(block, {}, name, str(page), 0)
                runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
                runner.run(test)
                assert runner.failures == 0, name
            else:
                exec(compile(block, name, "exec"), {"__name__": "__docs__"})


def _plans() -> list[tuple[str, str]]:
    plans = []
    for page in sorted(GUIDE.glob("*.md")):
        for number, block in enumerate(_blocks(page, "json"), start=1):
            plans.append((f"{page.name}#{number}", block))
    return plans


@pytest.mark.parametrize(("name", "block"), _plans(), ids=[name for name, _ in _plans()])
def test_the_guide_s_plans_are_valid_against_the_data_they_name(name: str, block: str) -> None:
    """Each JSON plan is read as `dpexplorer release` reads it and every entry's exact release path
    is built on the data the page releases it on (visits.csv for a privacy unit of patients,
    Adult otherwise, with Adult's shipped codebook, as the release reads it); nothing is drawn
    or charged. A codebook (a JSON object with a "codebook" field) is read as a codebook."""
    from dpexplorer.data.codebook import codebook_from_dict, shipped_codebook
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.load import load_dataset
    from dpexplorer.release.plan_run import entry_query, plan_entries
    from dpexplorer.release.public_facts import declare_entry
    from dpexplorer.release.release import prepare

    value = json.loads(block)
    if isinstance(value, dict) and "codebook" in value:
        assert codebook_from_dict(value).columns
        return
    entries, _rate = plan_entries(value)
    data = ROOT / "tests" / "fixtures" / "visits.csv" if "patient_id" in block else default_dataset_path()
    dataset = load_dataset(data)
    for entry in entries:
        entry, _facts = declare_entry(entry, shipped_codebook(data))
        query, params = entry_query(entry)
        prepared = prepare(dataset, query, entry["mechanism"], params)
        assert prepared.exact.guarantee is not None


def test_the_guide_s_example_lesson_is_read_by_the_lesson_reader(tmp_path: Path) -> None:
    """The lesson page's TOML is a lesson the menu accepts, and its list of query keys and kinds
    is the reader's."""
    from dpexplorer.gui.lesson_files import QUERY_DEFAULTS, QUERY_KINDS, load_lesson

    page = GUIDE / "lessons.md"
    (example,) = _blocks(page, "toml")
    path = tmp_path / "example.toml"
    path.write_text(example, encoding="utf-8")
    lesson = load_lesson(path)
    assert len(lesson.steps) == 2 and lesson.steps[1].params == {"epsilon": 0.1}
    keys = page.read_text(encoding="utf-8").split("Query keys:", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)`", keys))
    assert set(QUERY_KINDS) <= named and set(QUERY_DEFAULTS) <= named


def _command_lines() -> list[tuple[str, str, str]]:
    found = []
    for page in sorted(GUIDE.glob("*.md")):
        for block in _blocks(page, ""):
            first, _, output = block.partition("\n")
            if first.startswith("$ dpexplorer "):
                found.append((page.name, first[len("$ dpexplorer ") :], output))
    return found


@pytest.mark.parametrize(
    ("page", "command", "output"), _command_lines(), ids=[c for _, c, _ in _command_lines()]
)
def test_the_guide_s_command_lines_print_what_it_shows(page: str, command: str, output: str) -> None:
    from dpexplorer.cli import main

    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(command.split()) == 0
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(output, printed.getvalue(), flags), (
        f"{page}: `dpexplorer {command}` printed\n{printed.getvalue()}"
    )


def test_the_command_line_page_names_every_tool() -> None:
    from dpexplorer.cli import COMMANDS

    synopsis = _blocks(GUIDE / "cli.md", "")[0]
    assert all(f"dpexplorer {name} " in synopsis for name in COMMANDS), synopsis


def test_the_guide_names_every_mechanism_and_exit_code_the_release_knows() -> None:
    """A mechanism or exit code added to the code and not to the guide fails here:
    the command line page lists them, and the privacy page's table says what each mechanism's
    release assumes public."""
    from dpexplorer.commands.errors import DOCUMENTED
    from dpexplorer.release.plans import PATHS

    cli = (GUIDE / "cli.md").read_text(encoding="utf-8")
    privacy = (GUIDE / "privacy.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(\w+)`", cli))
    missing = set(PATHS) - named
    assert not missing, f"mechanisms not on the command line page: {sorted(missing)}"
    missing = set(PATHS) - set(re.findall(r"`(\w+)`", privacy.split("| mechanism |", 1)[1]))
    assert not missing, f"mechanisms not in the privacy page's table: {sorted(missing)}"
    table = cli.split("| code | meaning |", 1)[1]
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)} == set(DOCUMENTED)


def test_the_guide_shows_command_lines() -> None:
    assert {command.split()[0] for _, command, _ in _command_lines()} >= {"calibrate", "account"}
