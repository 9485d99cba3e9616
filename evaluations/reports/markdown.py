"""The Markdown report (GitHub-flavoured): the same page as the HTML, tables as pipe tables, charts as PNG files
beside ``report.md`` referenced by relative paths, the worst cases in ``<details>`` blocks."""

from __future__ import annotations

from evaluations.reports.page import CaseCard, Page, Table


def _cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def _table(table: Table) -> list[str]:
    numeric = [all(row[i].value is None or isinstance(row[i].value, float) for row in table.rows)
               and any(isinstance(row[i].value, float) for row in table.rows) for i in range(len(table.columns))]
    lines = ["| " + " | ".join(_cell(c) for c in table.columns) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for row in table.rows:
        texts = []
        for cell in row:
            text = _cell(cell.text)
            texts.append(f"**{text}**" if cell.css in ("better", "worse", "frontier") else text)
        lines.append("| " + " | ".join(texts) + " |")
    if table.caption:
        lines += ["", f"_{_cell(table.caption)}_"]
    return lines + [""]


def _case(case: CaseCard) -> list[str]:
    flags = "".join(f" [{_html(flag)}]" for flag in case.flags)
    lines = ["<details>", f"<summary><b>{_html(case.name)}</b>{flags}: {_html(case.why)}</summary>", "",
             f"**query**: {_cell(case.query)}", ""]
    lines += [f"- **{label}**: {_cell(text)}" for label, text in case.fields]
    expected = ", ".join(f"{d} (grade {g})" for d, g in case.expected) or "none"
    retrieved = ", ".join(f"**{d} ✓**" if rel else d for d, rel in case.retrieved) or "nothing"
    lines += [f"- **expected documents**: {_cell(expected)}", f"- **retrieved (top {len(case.retrieved)})**: "
              f"{_cell(retrieved)}"]
    lines += [f"- **{name}**: {verdict}" + (f" — {_cell(reason)}" if reason else "")
              for name, verdict, _, reason in case.judges]
    lines += [f"- **error**: {_cell(error)}" for error in case.errors]
    return lines + ["", "</details>", ""]


def _alt(text: str) -> str:
    """Image alt text: no brackets (they would end the alt) and no pipes."""
    return _cell(text).replace("[", "(").replace("]", ")")


def _html(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(page: Page) -> str:
    lines = [f"# {page.title}", ""]
    lines += [f"- **{key}**: {_cell(value)}" for key, value in page.facts]
    lines.append("")
    for section in page.sections:
        lines += [f"## {section.title}", ""]
        lines += [f"**{_cell(line)}**\n" for line in section.lead]
        for table in section.tables:
            lines += _table(table)
        lines += [f"{note}\n" for note in section.notes]
        lines += [f"![{_alt(chart.alt)}]({chart.png_name})\n" for chart in section.charts]
        for case in section.cases:
            lines += _case(case)
    return "\n".join(lines).rstrip() + "\n"
