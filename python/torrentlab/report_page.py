"""The HTML of a report (see :mod:`torrentlab.report`): escaping and
formatting of values, sortable tables, facts, collapsible sections, and the
page itself, assembled from ``report_assets/`` (style, script, template)
with the plots' data as JSON."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pandas as pd

#: The page's generator tag: a file that carries it may be replaced by a new report.
GENERATOR = "torrentlab report"


def _loads(text: Any) -> Any:
    """Decoded JSON text, or ``None`` if it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _fmt(v: Any) -> str:
    """A short text for a value: integers whole, other numbers to 4 significant
    digits (an exponent when far from 1), a missing value as a dash."""
    if v is None or (_is_num(v) and not math.isfinite(float(v))):
        return "–" if v is None or math.isnan(float(v)) else str(float(v))
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if _is_num(v):
        v = float(v)
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.3e}"
        return f"{v:.4g}"
    return str(v)


@dataclass
class _Html:
    """Markup that a table cell holds as it is (already escaped)."""

    text: str


def _cell(v: Any) -> str:
    if isinstance(v, _Html):
        return f"<td>{v.text}</td>"
    if _is_num(v):
        raw = "" if not math.isfinite(float(v)) else repr(int(v) if isinstance(v, (int, np.integer)) else float(v))
        return f'<td class="num" data-v="{raw}">{_esc(_fmt(v))}</td>'
    return f"<td>{_esc(_fmt(v))}</td>"


def _table(columns: Sequence[str], rows: Iterable[Sequence[Any]], *, groups: Sequence[tuple[str, int]] = (),
           titles: dict[str, str] | None = None, ident: str = "") -> str:
    """A sortable HTML table (with id `ident`); `groups` (label, columns
    spanned) adds a row of headers above; `titles` explain columns on hover."""
    titles = titles or {}
    head = ""
    if groups:
        head = "<tr>" + "".join(f'<th colspan="{n}" class="group">{_esc(g)}</th>' if g else "<th></th>" * n
                                for g, n in groups) + "</tr>"
    head += "<tr>" + "".join(f'<th data-col="{i}"' + (f' title="{_esc(titles[c])}"' if c in titles else "")
                             + f">{_esc(c)}</th>" for i, c in enumerate(columns)) + "</tr>"
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    ident = f' id="{_esc(ident)}"' if ident else ""
    return (f'<div class="tl-scroll"><table class="tl-sortable"{ident}><thead>{head}</thead>'
            f"<tbody>{body}</tbody></table></div>")


def _frame_table(df: pd.DataFrame) -> str:
    return _table([str(c) for c in df.columns], df.itertuples(index=False))


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(('no', 'yes')[v] if isinstance(v, bool) else _fmt(v))}</dd>"
                    for k, v in pairs if v is not None and v != "")
    return f'<dl class="facts">{items}</dl>'


def _details(summary: str, body_html: str, *, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{_esc(summary)}</summary>{body_html}</details>"


def _pre(doc: Any) -> str:
    """Text, or any other value as indented JSON, preformatted."""
    return f"<pre>{_esc(doc if isinstance(doc, str) else json.dumps(doc, indent=2, default=str))}</pre>"


def _pretty(text: Any) -> str:
    """A scenario's JSON text, indented (as it is if it is not JSON)."""
    doc = _loads(text)
    return str(text) if doc is None else json.dumps(doc, indent=2, ensure_ascii=False)


class _Page:
    """The page being built: its sections, plots (by id) and table of contents."""

    def __init__(self) -> None:
        self.title = "torrentlab report"
        self.header: list[str] = []
        self.body: list[str] = []
        self.plots: dict[str, dict[str, Any]] = {}
        self.toc: list[tuple[str, str]] = []
        self._ids = 0

    def add(self, *parts: str) -> None:
        self.body.extend(parts)

    def heading(self, level: int, title: str) -> None:
        """Adds a heading (level 2 ones to the contents)."""
        self._ids += 1
        anchor = f"s{self._ids}"
        if level == 2:
            self.toc.append((anchor, title))
        self.add(f'<h{level} id="{anchor}">{_esc(title)}</h{level}>')

    def plot(self, title: str, spec: dict[str, Any], note: str = "") -> None:
        """Adds a plot drawn by the page's script from `spec` (see report.js)."""
        pid = f"p{len(self.plots) + 1}"
        self.plots[pid] = spec
        self.add(f'<figure class="tl-card"><figcaption>{_esc(title)}</figcaption>'
                 f'<div class="tl-plot" data-spec="{pid}"></div>'
                 + (f'<p class="note">{_esc(note)}</p>' if note else "") + "</figure>")

    def html(self, d: Path) -> str:
        from torrentlab import __version__

        assets = files("torrentlab") / "report_assets"
        css = (assets / "report.css").read_text(encoding="utf-8")
        js = (assets / "report.js").read_text(encoding="utf-8")
        data = json.dumps({"plots": self.plots}, separators=(",", ":"), allow_nan=False)
        data = data.replace("<", "\\u003c")  # no "</script>" inside the script element
        toc = "".join(f'<a href="#{a}">{_esc(t)}</a>' for a, t in self.toc)
        page = Template((assets / "page.html").read_text(encoding="utf-8"))
        return page.substitute(
            generator=_esc(f"{GENERATOR} {__version__}"), title=_esc(self.title), css=css, js=js, data=data,
            header="\n".join(self.header), toc=toc, body="\n".join(self.body), version=_esc(__version__),
            now=datetime.now(timezone.utc).isoformat(timespec="seconds"), source=_esc(d.resolve()))
