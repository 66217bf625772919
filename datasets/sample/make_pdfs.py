"""Render the sample papers in sources/*.md as PDFs in papers/.

Small pages make each paper run over several pages, so the bundled PDFs carry
the furniture real papers do: a running header, page numbers in the footer,
sentences broken across pages, and (for sample-ml, typeset like a preprint
under review) margin line numbers. Run it after editing a source:

    python datasets/sample/make_pdfs.py

Needs fpdf2 (in the ``test`` extra). Output is deterministic.
"""

from __future__ import annotations

import sys
from pathlib import Path

from datetime import datetime, timezone

from fpdf import FPDF

HERE = Path(__file__).resolve().parent
LINE_NUMBERED = {"sample-ml"}
LINE_HEIGHT = 4.2


class PaperPDF(FPDF):
    def __init__(self, running_title: str, numbered_lines: bool) -> None:
        super().__init__(format=(105, 148))  # A6, in mm
        self.running_title = running_title
        self.numbered_lines = numbered_lines
        self.line_number = 0
        self.set_margins(12, 14, 10)
        self.set_auto_page_break(True, margin=14)
        self.set_creation_date(datetime(2026, 1, 1, tzinfo=timezone.utc))  # reproducible bytes

    def header(self) -> None:
        self.set_font("Helvetica", "I", 6)
        self.set_xy(12, 6)
        self.cell(0, 4, self.running_title)
        self.set_xy(self.l_margin, self.t_margin)

    def footer(self) -> None:
        self.set_font("Helvetica", "", 7)
        self.set_y(-10)
        self.cell(0, 4, str(self.page_no()), align="C")

    def write_lines(self, text: str, style: str = "", size: float = 8.0) -> None:
        self.set_font("Helvetica", style, size)
        self.set_x(self.l_margin)
        lines = self.multi_cell(0, LINE_HEIGHT, text, dry_run=True, output="LINES")
        for line in lines:
            if self.will_page_break(LINE_HEIGHT):
                self.add_page()
            if self.numbered_lines:
                self.line_number += 1
                y = self.get_y()
                self.set_font("Helvetica", "", 5)
                self.set_xy(4, y)
                self.cell(7, LINE_HEIGHT, str(self.line_number))
                self.set_font("Helvetica", style, size)
                self.set_xy(12, y)
            self.cell(0, LINE_HEIGHT, line, new_x="LMARGIN", new_y="NEXT")
        self.ln(1.5)


def render(source: Path, target: Path) -> None:
    blocks = [b.strip() for b in source.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    title = blocks[0].lstrip("# ").strip()
    pdf = PaperPDF(title.split(":")[0][:60], source.stem in LINE_NUMBERED)
    pdf.set_title(title)
    pdf.add_page()
    for block in blocks:
        if block.startswith("## "):
            pdf.write_lines(block[3:], "B", 9)
        elif block.startswith("# "):
            pdf.write_lines(block[2:], "B", 11)
        else:
            pdf.write_lines(" ".join(block.split()))
    pdf.output(str(target))


def main() -> int:
    out = HERE / "papers"
    out.mkdir(exist_ok=True)
    for source in sorted((HERE / "sources").glob("*.md")):
        render(source, out / f"{source.stem}.pdf")
        print(f"wrote {out / source.stem}.pdf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
