"""reports/<run>/authors.md and a section of index.html: what a run found about the authors' programs.

For a run with trials of an engine of kind "program" whose framework is the authors' BurTorch: their
source and every program built (with each variant's changed lines), the authors' code beside this
project's engine per point (time per iteration, memory, check, the core it ran on), this run's
check failures with expected and got, and every way their programs differ from the paper's text
and from our workloads (engines/authors/differences.py), with the evidence and the test that
re-establishes each.
"""
from __future__ import annotations

import html
from pathlib import Path

from engines.authors.differences import DIFFERENCES
from engines.base import BASELINE
from harness.analysis.points import FAILED, Point, run_points
from harness.store.runs import Run
from harness.text import inline_html, markdown_cell
from harness.units import mib

AUTHORS = "burtorch-authors"


def authors_points(run: Run) -> list[Point]:
    return [p for p in run_points(run).values() if p.engine.split("/")[0] == AUTHORS]


def _time(value: float | None) -> str:
    if value is None:
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def _mib(value: float | None) -> str:
    return mib(value)


def _check(point: Point) -> str:
    ok, worst = point.check()
    if ok is None:
        return point.check_status() or "—"
    return "ok" if ok else "FAILED" + (f" (max rel. error {worst:.2g})" if worst is not None else "")


def _cores(point: Point) -> str:
    cores = sorted({str(c) for t in point.trials for c in _as_list((t.get("extra") or {}).get("ran_on_cpu"))})
    pinned = {(t.get("extra") or {}).get("pinned_itself_to") for t in point.trials} - {None}
    runner = sorted({str(t.get("cpu")) for t in point.trials if t.get("cpu") is not None})
    notes = [f"pins itself to {', '.join(map(str, sorted(pinned)))}"] if pinned else []
    if runner and set(runner) != set(cores):
        notes.append(f"the runner pinned it to {', '.join(runner)}")
    return (", ".join(cores) or "n/a") + (f" ({'; '.join(notes)})" if notes else "")


def _as_list(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def comparison_rows(run: Run) -> list[list[str]]:
    """One row per point of the authors' engine, with this project's engine at the same point."""
    points = run_points(run)
    rows = []
    for theirs in authors_points(run):
        ours = next((p for k, p in points.items() if k.engine == BASELINE and k.workload == theirs.workload
                     and k.params == theirs.key.params), None)
        t_ours = ours.time_mean() if ours else None
        t_theirs = theirs.time_mean()
        wrong = theirs.failed() or (ours is not None and ours.failed())
        ratio = "n/a" if not (t_theirs and t_ours) else FAILED if wrong else f"{t_theirs / t_ours:.3g}"
        params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in theirs.params.items())
        rows.append([theirs.workload, params, f"{theirs.trials_ok()}/{len(theirs.trials)}", _time(t_theirs),
                     _time(t_ours), ratio,
                     f"{_mib(theirs.mean('peak_resident_bytes'))} / {_mib(theirs.mean('peak_virtual_bytes'))}",
                     f"{_mib(ours.mean('peak_resident_bytes')) if ours else 'n/a'} / "
                     f"{_mib(ours.mean('peak_virtual_bytes')) if ours else 'n/a'}",
                     _check(theirs), _cores(theirs)])
    return rows


COMPARISON_HEAD = ["workload", "point", "trials ok", "authors' time / iter", "ours / iter", "authors / ours",
                   "authors' peak RSS / VmPeak", "ours RSS / VmPeak", "authors' check", "core it ran on"]


def check_rows(run: Run) -> list[list[str]]:
    """Every trial of theirs whose check did not pass: failed, and undecided (with why)."""
    rows = []
    for trial in run.trials:
        check = trial.get("check")
        if trial["engine"].split("/")[0] != AUTHORS or not isinstance(check, dict) or check.get("ok") is True:
            continue
        verdict = "FAILED" if check.get("ok") is False else str(check.get("status") or "undecided").replace("_", " ")
        got = check.get("printed") or check.get("got") or {}
        shown = {k: v for k, v in got.items() if k != "losses"}
        if "losses" in got:
            shown["losses"] = ", ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in got["losses"][:12])
        rows.append([trial["workload"], str(trial["trial"] + 1), verdict, _mapping(check.get("expected")),
                     _mapping(shown), str(check.get("reason") or "")])
    return rows


def _mapping(value) -> str:
    if not value:
        return "—"
    return "; ".join(f"{k} = {v!r}" if isinstance(v, float) else f"{k} = {v}" for k, v in value.items())


CHECK_HEAD = ["workload", "trial", "check", "expected", "got (as printed)", "why"]


def build_rows(run: Run) -> list[list[str]]:
    rows = []
    for record in (run.manifest.get("engine_builds") or {}).values():
        for b in record.get("builds") or []:
            changes = "; ".join(f"{c['file']}:{c['line']}: `{c['old'].strip()}` → `{c['new'].strip()}`"
                                for c in b.get("changes") or []) or "none (their code as published)"
            rows.append([b.get("target") or "", b.get("variant") or "", "ok" if b.get("ok") else
                         f"failed: {b.get('reason')}", changes])
    return rows


def source_lines(run: Run) -> list[str]:
    lines = []
    for engine, record in (run.manifest.get("engine_builds") or {}).items():
        if engine.split("/")[0] != AUTHORS:
            continue
        source = record.get("source") or {}
        lines.append(f"{engine}: commit {source.get('commit') or 'unknown'} ({source.get('kind')}: "
                     f"{source.get('origin')}" + (f", sha256 {source['archive_sha256']}" if source.get("archive_sha256")
                                                  else "") + f"), found by {record.get('found_by')}")
        compilers = {json_key(b.get("compiler")) for b in record.get("builds") or [] if b.get("compiler")}
        lines += [f"compiler: {c}" for c in sorted(compilers)]
        lines.append(f"peak memory of their process: {record.get('peak_memory_library')}")
    return lines


def json_key(compiler: dict) -> str:
    return f"{compiler.get('version', compiler.get('path'))}, flags {compiler.get('cxx_flags', 'n/a')}"


def difference_rows(workloads: set[str]) -> list[list[str]]:
    return [[", ".join(d.workloads), d.topic, d.status, d.paper, d.here, d.authors, " | ".join(d.evidence),
             d.experiment or ""] for d in DIFFERENCES if workloads & set(d.workloads)]


DIFFERENCE_HEAD = ["workloads", "aspect", "status", "paper", "this project", "the authors' program",
                   "evidence (their code at the pinned commit, paths under burt/; runs)", "test"]

INTRO = ("The authors' published BurTorch programs, built from their source with their own CMake (Release) and"
         " run by the same runner as every engine: pinned, one thread, stdin closed, in a scratch folder."
         " Their time per iteration is what their program prints (its own timer; each trial's `extra.timer` says"
         " which line and formula); their memory is their process's own VmHWM / VmPeak, read at exit by a"
         " preloaded library. Where a point needs another iteration count, batch or hidden size, a variant"
         " changes only that compile-time constant (listed below).")


def sections(run: Run) -> list[tuple[str, list[str], list[str] | None, list[list[str]] | None]]:
    """(heading, paragraphs, table head, table rows) of the page; empty when the run has no such trial."""
    points = authors_points(run)
    if not points:
        return []
    workloads = {p.workload for p in points}
    checks = check_rows(run)
    return [
        ("Source and builds", [INTRO, *source_lines(run)], ["program", "variant", "build", "changed lines"],
         build_rows(run)),
        ("The authors' code beside this project's engine", [f"Ours = {BASELINE}. Memory: peak resident / peak"
                                                            " virtual, mean over trials."],
         COMPARISON_HEAD, comparison_rows(run)),
        ("Checks that did not pass", ["None: every check of their outputs passed."] if not checks else
         ["A FAILED check is a wrong number; an undecided one (not comparable, agrees to printed digits) is"
          " neither right nor wrong: their program prints too little to decide, or starts from its own"
          " weights and data."], CHECK_HEAD if checks else None, checks or None),
        ("How their programs differ from the paper and from our workloads", [
            "Established by reading their code and by the experiments the test column names."],
         DIFFERENCE_HEAD, difference_rows(workloads)),
    ]


def markdown(run: Run) -> str:
    out = [f"# The authors' BurTorch in run {run.run_id}", ""]
    for heading, paragraphs, head, rows in sections(run):
        out += [f"## {heading}", ""]
        out += [line for p in paragraphs for line in (p, "")]
        if head and rows:
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            out += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
            out.append("")
    return "\n".join(out)


def write_page(run: Run, folder: Path) -> Path | None:
    """authors.md in the report folder, where the run has trials of the authors' programs."""
    if not authors_points(run):
        return None
    path = Path(folder) / "authors.md"
    path.write_text(markdown(run), encoding="utf-8")
    return path


def section_html(run: Run) -> str:
    parts = sections(run)
    if not parts:
        return ""
    body = []
    for heading, paragraphs, head, rows in parts:
        body.append(f"<h3>{html.escape(heading)}</h3>" + "".join(f"<p>{inline_html(p)}</p>" for p in paragraphs))
        if head and rows:
            failed = heading.startswith("Checks")
            trs = "".join(("<tr class='failed'>" if failed and row[2] == "FAILED" else "<tr>")
                          + "".join(f"<td style='white-space: normal'>{inline_html(c)}</td>" for c in row) + "</tr>"
                          for row in rows)
            body.append("<div class='scroll'><table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
                        + f"</tr></thead><tbody>{trs}</tbody></table></div>")
    return ("<section id='authors'><h2>The authors' BurTorch</h2>"
            "<p class='notes'>Also as <a href='authors.md'>authors.md</a>.</p>" + "".join(body) + "</section>")
