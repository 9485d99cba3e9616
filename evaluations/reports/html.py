"""The self-contained HTML page: jinja2 templates shipped as package data (``templates/``), charts as inline SVG,
style and the optional sorting/filtering script inline; nothing is fetched (a Content-Security-Policy of
``default-src 'none'`` says so to the browser too)."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from evaluations.reports.page import Page


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("evaluations.reports", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=False)


def render_html(page: Page) -> str:
    return _environment().get_template("page.html.j2").render(page=page)
