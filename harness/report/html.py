"""index.html: one self-contained page (figures embedded as data URIs): the run's status, the
paper's claims with their verdicts, the manifest summary, every table and every figure. A small script marks on <body> how many images decoded and how
wide the widest table is, so a headless browser can check the page (data-images-loaded="N/M",
data-widest-table="PX SECTION", data-page-width="PX").
"""
from __future__ import annotations

import base64
import html
from collections import Counter
from pathlib import Path

from harness.report import authors, claim_files, versions
from harness.judging import claims
from harness.report.figures import Figure
from harness.analysis.tables import Table, row_notes
from harness.store.runs import Run
from harness.text import inline_html

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1500px;
       padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: .8rem; margin: .5rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
td { white-space: nowrap; } td.wrap { white-space: normal; } .id { white-space: nowrap; }
#authors td { overflow-wrap: anywhere; } p.part { font-size: .8rem; color: #444; margin: .8rem 0 0; }
table.kv td:last-child { white-space: normal; }
th { background: #f3f3f3; }
tr.failed td { background: #fde8e8; }
tr.absent td { color: #888; font-style: italic; }
.scroll { overflow-x: auto; }
.notes { font-size: .8rem; color: #444; }
.warn, .warning { color: #a15c00; } .error { color: #b00020; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .85rem; color: #444; }
code { font-size: .85em; }
.status { background: #fff4e0; border-left: 4px solid #a15c00; padding: .5rem 1rem; }
td.answer { min-width: 14em; } #versions th, #versions td { padding: .25rem .3rem; }
table.claims td { white-space: normal; min-width: 14em; } table.claims small { color: #555; }
td.v-reproduced b { color: #1b7f2a; } td.v-partly b { color: #a15c00; } td.v-not-reproduced b { color: #b00020; }
td.v-not-comparable b { color: #5a3e9b; } td.v-not-measurable-here b { color: #666; }
"""

CHECK_IMAGES = """
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var loaded = images.filter(function (img) { return img.complete && img.naturalWidth > 0; });
  document.body.setAttribute("data-images-loaded", loaded.length + "/" + images.length);
  // How wide the widest table is against the page: a headless browser reads it back (tests).
  var widths = Array.prototype.map.call(document.querySelectorAll("table"), function (t) {
    return Math.ceil(t.getBoundingClientRect().width) + " " + ((t.closest("[id]") || {}).id || "");
  }).sort(function (a, b) { return parseInt(b) - parseInt(a); });
  document.body.setAttribute("data-page-width", document.documentElement.clientWidth);
  document.body.setAttribute("data-widest-table", widths.length ? widths[0] : "0");
  document.body.setAttribute("data-table-widths", widths.join(", "));
});
"""

MACHINE_KEYS = ["cpu_model", "cpu_mhz", "logical_cores", "physical_cores", "governor", "turbo", "smt",
                "kernel", "os", "platform", "virtualized", "memory_total_bytes"]


def esc(value) -> str:
    return html.escape("" if value is None else str(value))


def key_value_table(pairs: list[tuple[str, object]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    return f"<table class='kv'>{rows}</table>"


def plain(key: str, value) -> str:
    """A manifest value as one line: bytes in GiB, dicts and lists flattened."""
    if key.endswith("_bytes") and isinstance(value, (int, float)):
        return f"{value / 2**30:.1f} GiB"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain(k, v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "n/a" if value is None else str(value)


def run_section(run: Run) -> str:
    m = run.manifest
    statuses = Counter(t.get("status") or "ok" for t in run.trials)
    pairs = [("run", run.run_id), ("status", m.get("status", "unknown")), ("profile", run.plan.profile),
             ("created", m.get("created_at")), ("finished", m.get("finished_at")),
             ("command", " ".join(m.get("argv") or [])), ("git commit", m.get("git_commit")),
             ("python", plain("python", m.get("python"))), ("native engine", plain("native", m.get("native"))),
             ("cores used" if len(m.get("cpus") or []) > 1 else "core used",
              ", ".join(map(str, m["cpus"])) if isinstance(m.get("cpus"), list) else m.get("cpu")),
             ("trials", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none")]
    unavailable = m.get("unavailable") or {}
    pairs += [(f"unavailable: {engine}", reason) for engine, reason in sorted(unavailable.items())]
    planned = set(run.plan.engines)
    without = sorted(planned - {t["engine"] for t in run.trials} - set(unavailable))
    if without:
        pairs.append(("planned engines with no trial", ", ".join(without)))
    shown = [(k, v) for k, v in pairs if v not in (None, "", "n/a")]
    return f"<section id='run'><h2>Run</h2>{key_value_table(shown)}</section>"


def machine_section(run: Run) -> str:
    machine = run.manifest.get("machine") or {}
    keys = [k for k in MACHINE_KEYS if k in machine]
    keys += sorted(k for k in machine if k not in MACHINE_KEYS and not k.endswith("_source"))
    pairs = []
    for key in keys:
        # A missing reading is shown with the reason the machine module recorded for it.
        source = machine.get(f"{key}_source") if machine[key] is None else None
        pairs.append((key, plain(key, machine[key]) + (f" ({source})" if source else "")))
    body = key_value_table(pairs) if pairs else "<p>The manifest records no machine.</p>"
    return f"<section id='machine'><h2>Machine</h2>{body}</section>"


def frameworks_section(run: Run) -> str:
    frameworks = run.manifest.get("frameworks") or {}
    pairs = [(name, version or "not installed") for name, version in sorted(frameworks.items())]
    body = key_value_table(pairs) if pairs else "<p>The manifest records no framework versions.</p>"
    return f"<section id='frameworks'><h2>Frameworks</h2>{body}</section>"


def doctor_section(run: Run) -> str:
    items = [d for d in run.manifest.get("doctor") or [] if isinstance(d, dict) and d.get("level") != "ok"]
    # Warnings and errors first: they say why numbers may be noisy.
    items.sort(key=lambda d: d.get("level") == "info")
    if not items:
        return "<section id='doctor'><h2>Warnings from doctor</h2><p>None recorded.</p></section>"
    lines = "".join(
        f"<li class='{esc(d.get('level'))}'><b>{esc(d.get('level'))}</b> {esc(d.get('topic'))}: "
        f"{esc(d.get('message'))}" + (f" <i>Fix: {esc(d.get('fix'))}</i>" if d.get("fix") else "") + "</li>"
        for d in items)
    return f"<section id='doctor'><h2>Warnings from doctor</h2><ul>{lines}</ul></section>"


def _row_class(row: dict) -> str:
    if row["check_ok"] is False:
        return " class='failed'"
    return "" if row["in_run"] else " class='absent'"


# Columns whose cells may wrap, at spaces: an engine id or a version in them is kept whole; a versions
# table's sentences too, its answer kept wide enough to read (td.answer) rather than squeezed to a word a line.
WRAPPED = ("Engine", "Version (ours / paper)", "Check", *versions.WORDS)


def _cell(column: str, text) -> str:
    if column not in WRAPPED and "CI]" not in column:  # a ratio's interval and verdict may wrap too
        return f"<td>{esc(text)}</td>"
    words = [f"<span class='id'>{esc(w)}</span>" if "/" in w or "-" in w else esc(w) for w in str(text).split(" ")]
    return f"<td class='wrap{' answer' if column == versions.ANSWER else ''}'>{' '.join(words)}</td>"


# The measures of one part of a split table: ours and the paper's of two measures fit 1,400 px.
PART_COLUMNS = 4


def parts(columns: list[str]) -> tuple[list[str], list[list[str]]]:
    """(the columns every part repeats, the parts' measure columns): measures of time and clocks
    apart from those of memory, each kind in parts of at most PART_COLUMNS, a measure's ours and
    paper's columns together."""
    lead = [c for c in columns if not c.endswith((", ours", ", paper")) and c != "Notes"]
    families: dict[str, list[str]] = {}
    for c in columns:
        if c.endswith((", ours", ", paper")):
            families.setdefault(c.rsplit(", ", 1)[0], []).append(c)
    split = []
    for memory in (False, True):
        part: list[str] = []
        for family, members in families.items():
            if ("(MiB)" in family) != memory:
                continue
            if part and len(part) + len(members) > PART_COLUMNS:
                split.append(part)
                part = []
            part += members
        if part:
            split.append(part)
    return lead, split or [[]]


def footnotes(table: Table) -> tuple[list[str], list[str]]:
    """(each row's note references, the notes in order): a row's notes go under the table, so that one
    long note does not widen the table or make its row tall. The notes rows share first, numbered as
    Markdown and LaTeX number them (tables.row_notes), then each row's own."""
    split = row_notes(table.rows)
    texts = list(split.shared)
    refs = []
    for shared, own in zip(split.refs, split.own):
        numbers = shared + list(range(len(texts) + 1, len(texts) + 1 + len(own)))
        texts += own
        refs.append(",".join(f"<a href='#{esc(table.name)}-note-{n}'>{n}</a>" for n in sorted(numbers)))
    return refs, texts


def table_html(table: Table) -> str:
    columns = list(table.shown.columns)
    lead, split = parts(columns)
    refs, texts = footnotes(table)
    rows = [dict(zip(columns, cells)) for cells in table.shown.itertuples(index=False)]
    blocks = []
    for k, measures in enumerate(split):
        shown = lead + measures
        head = "".join(f"<th>{esc(title)}</th>" for title in shown) + ("<th>Notes</th>" if texts else "")
        body = "".join(
            f"<tr{_row_class(row)}>" + "".join(_cell(c, cells[c]) for c in shown)
            + (f"<td class='refs'>{ref}</td>" if texts else "") + "</tr>"
            for row, cells, ref in zip(table.rows, rows, refs))
        label = (f"<p class='part'>Part {k + 1} of {len(split)}: "
                 f"{esc(', '.join(dict.fromkeys(c.rsplit(', ', 1)[0] for c in measures)))}</p>") if len(split) > 1 else ""
        blocks.append(f"{label}<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
                      f"</table></div>")
    row_notes = "".join(f"<li id='{esc(table.name)}-note-{n}'>{inline_html(text)}</li>"
                        for n, text in enumerate(texts, 1))
    notes = "".join(f"<li>{inline_html(n)}</li>" for n in table.notes)
    links = " · ".join(f"<a href='tables/{table.name}.{ext}'>{ext}</a>" for ext in ("md", "tex", "csv"))
    return (f"<article id='table-{esc(table.name)}'><h3>{esc(table.title)}</h3><p>{esc(table.caption)}</p>"
            f"{''.join(blocks)}" + (f"<p class='notes'>Notes on rows:</p><ol class='notes'>{row_notes}</ol>" if texts else "")
            + f"<ul class='notes'>{notes}</ul><p class='notes'>Download: {links}</p></article>")


def figure_html(figure: Figure, folder: Path) -> str:
    data = base64.b64encode(figure.png.read_bytes()).decode("ascii")
    pdf = figure.pdf.relative_to(folder).as_posix()
    return (f"<figure id='{esc(figure.name)}'><img src='data:image/png;base64,{data}' alt='{esc(figure.title)}'>"
            f"<figcaption>{esc(figure.title)} · <a href='{esc(pdf)}'>PDF</a></figcaption></figure>")


def status_html(status: list[str]) -> str:
    return "".join(f"<p class='status'><b>{esc(line)}</b></p>" for line in status)


def _subject_cell(v) -> str:
    value = esc(claim_files.measured_only(v)) if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE) else \
        f" {esc(claim_files.shown(v, 'ours'))}" + (f" at {esc(v.at)}" if v.at else "") + (
            f" ({esc(claim_files.trials_text(v))}, {esc(claim_files.method(v))})" if v.trials else "")
    return (f"<td class='v-{v.verdict.replace(' ', '-')}'><b>{claims.SYMBOLS[v.verdict]} {esc(v.verdict)}</b>{value}"
            f"<br><small>{inline_html(v.why)}</small></td>")


def claims_section(judged: list, sure: list[str] = (), picture: Path | None = None) -> str:
    """The paper's claims and both subjects' verdicts on this run, how sure they are (claim_files.sureness), and
    their forest plot (report/forest.py)."""

    if not judged:
        return ""
    heads = ("Claim", "Paper", *(s.title for s in claims.SUBJECTS))
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    body = "".join(
        f"<tr><td>{esc(j.claim.claim)} <code>{esc(j.claim.id)}</code><br><small>{esc(j.claim.where)}</small></td>"
        f"<td>{esc(claim_files.shown(j.ours, 'paper'))}</td>{''.join(_subject_cell(v) for v in j.verdicts())}</tr>"
        for j in judged)
    return (f"<section id='claims'><h2>The paper's claims on this run</h2>"
            f"<p>{esc(claim_files.counts_both(judged))}. "
            f"<a href='claims.md'>How each verdict was computed</a> (also <a href='claims.csv'>csv</a>, "
            f"<a href='claims.json'>json</a>).</p><p class='notes'>{inline_html(claim_files.SUBJECTS_TEXT)}</p>"
            f"<p class='notes'>{inline_html(claim_files.HOW)}</p>"
            + "".join(f"<p class='notes'>{inline_html(line)}</p>" for line in sure) + _picture(picture) +
            f"<div class='scroll'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"</table></div></section>")


def _picture(png: Path | None) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f"<figure class='forest'><img src='data:image/png;base64,{data}' alt='Each claim&#39;s factor and its "
            f"interval against the paper&#39;s number'></figure>")


def page(run: Run, tables: list[Table], figures: list[Figure], folder: Path, judged: list | None = None,
         status: list[str] | None = None, versions: list | None = None, sure: list[str] = (),
         picture: Path | None = None) -> str:
    tables_html = "".join(table_html(t) for t in tables) or "<p>No trials in this run yet.</p>"
    figures_html = "".join(figure_html(f, folder) for f in figures) or "<p>No figure: no measured trials.</p>"
    claims_html = claims_section(judged or [], sure, picture)
    # What the run was for comes first: the versions side by side for a run of several environments.
    lead = claims_html
    if versions:
        lead = (f"<section id='versions'><h2>Versions</h2>{''.join(table_html(t) for t in versions)}</section>"
                + claims_html)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>burtbench report: {esc(run.run_id)}</title><style>{STYLE}</style></head>"
        "<body data-images-loaded='pending'>"
        f"<h1>burtbench report: {esc(run.run_id)}</h1>"
        "<p>BurTorch paper (arXiv 2503.13795) workloads on one CPU core: this machine's figures beside the paper's.</p>"
        f"{status_html(status or [])}{lead}"
        f"{run_section(run)}{machine_section(run)}{frameworks_section(run)}{doctor_section(run)}"
        f"<section id='tables'><h2>Tables</h2>{tables_html}</section>"
        f"{authors.section_html(run)}"
        f"<section id='figures'><h2>Figures</h2>{figures_html}</section>"
        f"<script>{CHECK_IMAGES}</script></body></html>\n"
    )


def write_index(run: Run, tables: list[Table], figures: list[Figure], folder: Path, judged: list | None = None,
                status: list[str] | None = None, versions: list | None = None, sure: list[str] = (),
                picture: Path | None = None) -> Path:
    path = folder / "index.html"
    path.write_text(page(run, tables, figures, folder, judged, status, versions, sure, picture), encoding="utf-8")
    return path
