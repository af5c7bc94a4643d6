"""Release the user guide's example plan (docs/guide/cli.md) on the default dataset with
`--report` into docs/report/ (a throw-away ledger), as report.html and report.pdf, and render
the PDF's first page (the summary, shown in the README) to docs/report/report-page1.png; with
--all-pages every page, report-page<N>.png, to look at them (only page 1 is kept in the repository).

    python docs/make_report.py [OUT_DIR] [--all-pages]

The values differ at every run: they are drawn from the OS CSPRNG like any release."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pypdfium2 as pdfium
from PySide6.QtGui import QGuiApplication, QImage

from dpexplorer.cli import main as cli
from dpexplorer.data.default import default_dataset_path

ROOT = Path(__file__).resolve().parents[1]
GUIDE_PAGE = ROOT / "docs" / "guide" / "cli.md"


def readme_plan() -> list[dict]:
    """The JSON plan shown under "A **plan** is a JSON list" in the user guide's command line page."""
    text = GUIDE_PAGE.read_text(encoding="utf-8")
    match = re.search(r"A \*\*plan\*\* is a JSON list.*?```json\n(.*?)```", text, re.S)
    if match is None:
        raise SystemExit(f"no example plan found in {GUIDE_PAGE}")
    return json.loads(match.group(1))


def render_page(pdf_path: Path, png_path: Path, index: int = 0, scale: float = 1.5) -> None:
    """Page ``index`` of the PDF as a PNG (PDFium renders, Qt writes the PNG)."""
    bitmap = pdfium.PdfDocument(str(pdf_path))[index].render(scale=scale, rev_byteorder=True)
    pixels = np.ascontiguousarray(bitmap.to_numpy())
    height, width = pixels.shape[:2]
    fmt = QImage.Format.Format_RGB888 if pixels.shape[2] == 3 else QImage.Format.Format_RGBX8888
    QImage(pixels.data, width, height, pixels.strides[0], fmt).save(str(png_path))


def main() -> None:
    given = [a for a in sys.argv[1:] if a != "--all-pages"]
    out = Path(given[0]) if given else ROOT / "docs" / "report"
    with tempfile.TemporaryDirectory() as scratch:
        plan = Path(scratch) / "plan.json"
        plan.write_text(json.dumps(readme_plan()), encoding="utf-8")
        released = Path(scratch) / "released"
        app = QGuiApplication.instance() or QGuiApplication([])
        code = cli(
            [
                "release", str(plan), "--data", str(default_dataset_path()), "--out", str(released),
                "--ledger", str(Path(scratch) / "ledger.sqlite"), "--budget-epsilon", "2",
                "--budget-delta", "1e-6", "--accountant", "basic", "--report",
            ]
        )  # fmt: skip
        if code:
            raise SystemExit(code)
        out.mkdir(parents=True, exist_ok=True)
        for suffix in ("html", "pdf"):  # the run's report is named after its token
            (written,) = released.glob(f"report-*.{suffix}")
            (out / f"report.{suffix}").write_bytes(written.read_bytes())
        for stale in out.glob("report-page*.png"):
            stale.unlink()
        pages = len(pdfium.PdfDocument(str(out / "report.pdf"))) if "--all-pages" in sys.argv else 1
        for index in range(pages):
            render_page(out / "report.pdf", out / f"report-page{index + 1}.png", index)
        del app
    print(out)


if __name__ == "__main__":
    main()
