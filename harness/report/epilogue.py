"""The end of `burtbench run`: render the run's report and print, hyperfine-style, what it found.

One line per claim of the paper that the run could judge, with both subjects' verdicts (the
authors' program and ours), one line for the rest, the fastest and slowest engine at each
workload point, and the report's index.html as a file:// URL. A run that was interrupted or has
failed trials gets its report too, marked so. A report that cannot be rendered never changes
the run's exit status: the trials are safe in the run folder and `burtbench report` retries.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from engines.base import AA_COPY, split_id
from engines.none import FLOOR
from harness.planning.claim_points import UNREPEATED_PROFILES
from harness.analysis.labels import short_ids
from harness.analysis.points import FAILED, STATISTIC, run_points
from harness.analysis.summary import format_seconds, shown_params
from harness.report import claim_files, claims, versions
from harness.report.render import render_report

STYLES = {"reproduced": "green", "partly": "yellow", "not reproduced": "red", "undecided": "cyan",
          "not comparable": "magenta", "not measurable here": "dim"}


def after_run(run_dir: Path, console: Console, out_root: Path) -> None:
    try:
        rendered = render_report(run_dir, out_root)
    except Exception as exc:  # noqa: BLE001 - the run's results stand whatever the report does
        console.print(f"[red]report[/]: could not render the report of {escape(str(run_dir))}: {escape(repr(exc))} "
                      f"(burtbench report {escape(str(run_dir))} tries again)", highlight=False)
        return
    for line in summary_lines(rendered):
        console.print(line, highlight=False)


WIDTH = 120  # the summary fits a 120-column terminal


def _subject_text(v) -> tuple[str, str]:
    """(plain text, styled text) of one subject's verdict: symbol, verdict, number."""

    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        head, value = f"{claims.SYMBOLS[v.verdict]} {v.verdict}", ""
    else:
        head = claims.SYMBOLS[v.verdict]
        value = f" {claim_files.shown(v, 'ours')}" + (f" {v.trials[0]}/{v.trials[1]}" if v.trials else "")
    return head + value, f"[{STYLES[v.verdict]}]{escape(head)}[/]{escape(value)}"


COLUMNS = (30, 32)  # each subject's verdict column: 2 + 23 + 14 + 11 + 30 + 8 + 32 = 120


def claim_line(judged) -> str:
    """One claim in one line of at most WIDTH columns: its id, the paper's number, both subjects' verdicts."""

    line = f"  {escape(judged.claim.id):<23} paper {escape(_paper_number(judged)):<8}"
    for subject, v, width in zip(claims.SUBJECTS, judged.verdicts(), COLUMNS):
        text, colored = _subject_text(v)
        if len(text) > width:
            text = text[:width - 1] + "…"
            colored = f"[{STYLES[v.verdict]}]{escape(text)}[/]"
        line += f" │ {subject.short} {colored}{' ' * (width - len(text))}"
    return line.rstrip()


def _paper_number(judged) -> str:
    c = judged.claim
    if c.rule == "same_outputs":
        return "equal"
    if c.rule == "flat":
        return "flat"
    value = judged.ours.paper if judged.ours.paper is not None else c.stated
    return claims.fx(value)


def judgeable(judged) -> bool:
    """A claim with a number for at least one subject."""

    return any(v.verdict in (*claims.DECIDED, claims.UNDECIDED) for v in judged.verdicts())


SMOKE_CAVEAT = ("a smoke run: one trial a point and few iterations, so its factors have no interval and its "
                "verdicts stay undecided; the quick profile decides them")
LEGEND = "✓ reproduced, ≈ partly, ✗ not reproduced, ? undecided, ≠ not comparable, – not measurable"
READING = (f"factor [interval, 95% over the run's looks] trials of the subject/of the other engine; a trial's time: "
           f"the {STATISTIC}")


def _tally(judged: list, key: str) -> dict:
    return {claims.SYMBOLS[name]: sum(getattr(j, key).verdict == name for j in judged) for name in claims.VERDICTS}


def claim_lines(judged_all: list, run, folder: Path) -> list[str]:
    """The claims this run could judge, one line each, then one line for the rest."""

    where = escape(str(folder / "claims.md"))
    shown = [j for j in judged_all if judgeable(j)]
    if not shown:
        measured = {t.get("workload") for t in run.trials}
        claimed = sorted({name for j in judged_all for name in j.claim.tables})
        if not measured & set(claimed):
            return [f"[bold]The paper's claims[/]: this run measures none of their workloads "
                    f"({escape(', '.join(claimed))}): {where}"]
        return [f"[bold]The paper's claims[/]: none of the {len(judged_all)} can be judged on this run: {where}"]
    tally = "; ".join(f"{s.short} " + ", ".join(f"{n} {symbol}" for symbol, n in _tally(shown, s.key).items() if n)
                      for s in claims.SUBJECTS)
    lines = [f"[bold]The paper's claims this run could judge[/] ({escape(tally)}):"]
    if run.plan.profile in UNREPEATED_PROFILES:
        lines.append(f"  [yellow]{escape(SMOKE_CAVEAT)}[/]")
    lines += [claim_line(j) for j in shown]
    rest = [j for j in judged_all if not judgeable(j)]
    lines.append(f"  {escape(LEGEND)}" + (f"; {len(rest)} more not judged here: see claims.md" if rest else ""))
    lines += [f"  {escape(part)}" for text in (READING, claim_files.family_line(claim_files.both(judged_all)))
              for part in textwrap.wrap(text, WIDTH - 2)]
    return lines


def speed_lines(run) -> list[str]:
    """At each workload point, the fastest engine and how much faster than the slowest it ran."""
    by_point: dict[tuple, list] = {}
    failed: dict[tuple, list] = {}
    for point in run_points(run).values():
        # The harness's floor is no framework, and an A/A copy is its original again: neither is ranked;
        # a wrong program's time is no answer, so it is named apart.
        if point.time_mean() is not None and point.engine != FLOOR and not point.engine.endswith(AA_COPY):
            (failed if point.failed() else by_point).setdefault((point.workload, point.key.params), []).append(point)
    labels, _ = short_ids([p.engine for points in (*by_point.values(), *failed.values()) for p in points])
    lines = []
    for (workload, _), points in by_point.items():
        # Versions of one engine: the versions lines answer which is faster, by the one rule.
        if len(points) > 1 and len({split_id(p.engine)[0] for p in points}) == 1:
            continue
        fast = min(points, key=lambda p: p.time_mean())
        slow = max(points, key=lambda p: p.time_mean())
        name = workload + shown_params(workload, fast.params)
        line = f"  {escape(name):<28} [bold]{escape(labels[fast.engine])}[/] {format_seconds(fast.time_mean())}"
        if slow is not fast:
            line += (f", {claims.fx(slow.time_mean() / fast.time_mean())} faster than {escape(labels[slow.engine])} "
                     f"{format_seconds(slow.time_mean())}")
            of = f" (slowest of {len(points)})"
            line += of if len(Text.from_markup(line + of)) <= WIDTH else ""
        lines.append(line)
    for (workload, _), points in failed.items():
        name = workload + shown_params(workload, points[0].params)
        lines.append(f"  {escape(name):<28} [red]{FAILED}[/], not ranked: "
                     + escape(", ".join(labels[p.engine] for p in points)))
    return lines


def summary_lines(rendered) -> list[str]:
    folder = Path(rendered.folder).resolve()
    lines = [""] + [f"[yellow]{escape(s)}[/]" for s in rendered.status]
    # A versions run answers its own question first; the paper's claims follow, where it measured their points.
    for table in rendered.versions:
        lines += ["", f"[bold]{escape(table.title)}[/] (time per iteration; the answer against the oldest version, "
                      f"as compare gives it): {escape(str(Path(rendered.folder).resolve() / 'tables' / table.name))}.md"]
        lines += [f"  {escape(row['engine'])} {escape(row['version']):<10} {format_seconds(row['time_per_iter_s'], 'n/a'):>9}"
                  f"  {escape(versions.ratio(row, 'time'))}" for row in table.rows]
    lines += [""] if rendered.versions else []
    lines += claim_lines(rendered.judged, rendered.run, folder)
    speeds = speed_lines(rendered.run)
    if speeds:
        lines += ["", "[bold]Fastest and slowest engine at each workload point[/] (time per iteration or SGD step):"]
        lines += speeds
    lines += ["", f"claims:  {escape(str(folder / 'claims.md'))}",
              f"report:  {escape((folder / 'index.html').as_uri())}"]
    return lines
