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

from engines.base import AA_COPY, split_id
from engines.none import FLOOR
from harness.errors import EXIT_NOT_ALL_RUN
from harness.planning.claim_points import UNREPEATED_PROFILES
from harness.analysis.labels import short_ids
from harness.analysis.points import FAILED, POINT_STATISTIC, STATISTIC, in_order, run_points
from harness.analysis.summary import format_seconds, shown_params
from harness.report import claim_files, versions
from harness.judging import claims
from harness.judging.verdicts import direction
from harness.report.render import render_report
from harness.running.orchestrator import EXIT_INCOMPLETE, EXIT_INTERRUPTED, one_line
from harness.store.runs import load_run
from harness.units import count

STYLES = {"reproduced": "green", "partly": "yellow", "not reproduced": "red", "undecided": "cyan",
          "not comparable": "magenta", "not measurable here": "dim"}


def after_run(run_dir: Path, console: Console, out_root: Path) -> None:
    try:
        rendered = render_report(run_dir, out_root)
    except Exception as exc:  # noqa: BLE001 - the run's results stand whatever the report does
        console.print(f"[red]report[/]: could not render the report of {escape(str(run_dir))}: {escape(repr(exc))} "
                      f"(burtbench report {escape(str(run_dir))} tries again)", highlight=False)
        return
    for line in summary_lines(rendered, min(console.width, WIDTH)):
        console.print(line, highlight=False)


WIDTH = 120  # the closing lines' width at most; a narrower terminal gets them narrower, wrapped, never cut


def subject_text(v) -> tuple[str, str]:
    """(symbol and verdict, its number) of one subject's verdict, as plain text; a ✗ says which way it
    missed, for BurTorch (better or worse than claimed)."""

    if v.verdict in (claims.NOT_COMPARABLE, claims.NOT_MEASURABLE):
        return f"{claims.SYMBOLS[v.verdict]} {v.verdict}", claim_files.measured_only(v)
    # A factor with no interval already says its trials: '(1 trial, no interval)'.
    value = f" {claim_files.shown(v, 'ours')}" + \
        (f" {claim_files.trials_text(v, '/', '')}" if v.low is not None else "")
    way = direction(v)
    return claims.SYMBOLS[v.verdict] + (f" {way}" if way else ""), value


NARROWEST = 16  # a verdict column narrower than this reads better as a line of its own under the claim
INDENT = "      "  # the subjects' line under their claim's


def _styled(chunk: str, head: str, verdict: str) -> str:
    """A piece of a verdict's text, its symbol in the verdict's colour where the piece begins with it."""
    if not chunk.startswith(head):
        return escape(chunk)
    return f"[{STYLES[verdict]}]{escape(head)}[/]{escape(chunk[len(head):])}"


def _lead(judged) -> str:
    return f"  {judged.claim.id:<23} {paper_number(judged)}"


def _subjects(judged) -> list[tuple]:
    return [(s.short, v.verdict, *subject_text(v)) for s, v in zip(claims.SUBJECTS, judged.verdicts())]


def verdict_widths(shown: list, width: int) -> list[int] | None:
    """Each subject's column width on the line under its claim, the same on every claim so that the columns
    line up: as wide as its longest verdict where `width` allows, the widest narrowed first where not; None
    where a column would be narrower than NARROWEST (a line per subject instead)."""
    rows = [_subjects(j) for j in shown]
    room = width - len(INDENT) - sum(len(f"{short} ") for short, *_ in rows[0]) - 3 * (len(rows[0]) - 1)
    widths = [max(len(head + value) for _, _, head, value in column) for column in zip(*rows)]
    while sum(widths) > room and max(widths) > NARROWEST:
        widths[widths.index(max(widths))] -= 1
    return widths if sum(widths) <= room else None


def claim_rows(judged, widths: list[int] | None, width: int = WIDTH) -> list[str]:
    """One claim: its id and the paper's number (and the number it is held to, and its tolerance) on a line,
    both subjects' verdicts side by side under it, each wrapped in its column of `widths` (never cut);
    without widths, a line per subject."""

    subjects = _subjects(judged)
    lines = [f"  {escape(part)}" for part in textwrap.wrap(_lead(judged).strip(), width - 2, subsequent_indent="  ")]
    if widths is None:
        label = max(len(short) for short, *_ in subjects)
        for short, verdict, head, value in subjects:
            chunks = textwrap.wrap(head + value, width - label - len(INDENT) - 1) or [""]
            lines += [f"{INDENT}{short if k == 0 else '':<{label}} "
                      f"{_styled(chunk, head, verdict) if k == 0 else escape(chunk)}" for k, chunk in enumerate(chunks)]
        return lines
    columns = [textwrap.wrap(head + value, w) or [""] for (_, _, head, value), w in zip(subjects, widths)]
    for k in range(max(map(len, columns))):
        cells = []
        for (short, verdict, head, _), chunks, w in zip(subjects, columns, widths):
            chunk = chunks[k] if k < len(chunks) else ""
            shown = _styled(chunk, head, verdict) if k == 0 else escape(chunk)
            cells.append(f"{short if k == 0 else ' ' * len(short)} {shown}{' ' * (w - len(chunk))}")
        lines.append((INDENT + " │ ".join(cells)).rstrip())
    return lines


def paper_number(judged) -> str:
    """'paper ×74, held to ×325 (✓ where the interval reaches ×293: 10% short of it)': the paper's own words for its number, the number
    it is held to on this OS where that differs, and the boundary its tolerance sets."""
    c = judged.claim
    said = f"paper {c.stated_text}"
    if c.rule == "same_outputs":
        return said
    if c.rule == "flat":
        return f"{said} (✓ while it grows less than {c.tolerance:.0%})"
    held = held_number(judged)
    if abs(held - c.stated) > 1e-9 * max(abs(c.stated), 1):
        said += f", held to {claims.fx(held)}"
    if not c.tolerance:
        return said
    boundary = held * (1 - c.tolerance) if held >= 1 else held / (1 - c.tolerance)
    return f"{said} (✓ where the interval reaches {claims.fx(boundary)}: {c.tolerance:.0%} short of it)"


def held_number(judged) -> float:
    """The number a ratio claim's factors are held to on this run's OS (the paper's as stated where it has none)."""
    held = judged.ours.paper if judged.ours.paper is not None else judged.authors.paper
    return judged.claim.stated if held is None else held


def judgeable(judged) -> bool:
    """A claim with a number for at least one subject."""

    return any(v.verdict in (*claims.DECIDED, claims.UNDECIDED) for v in judged.verdicts())


SMOKE_CAVEAT = ("a smoke run: one trial a point and few iterations, so its factors have no interval and its "
                "verdicts stay undecided; the quick profile decides them")
LEGEND = ("✓ reproduced, ≈ partly (the paper's direction, short of its number), ✗ not reproduced (the other side "
          "of ×1: better or worse than claimed, for BurTorch), ? undecided, ≠ not comparable, – not measurable")
READING = (f"×factor: the other engine's time (or memory) over BurTorch's, [its 95% interval], trials of the subject/"
           f"of the other engine (a flat claim's: {claim_files.FLAT_TRIALS.replace(' / ', '/')}); a trial's time: "
           f"the {STATISTIC}")
MEANING = ("95%: an interval made this way holds the factor another run of the plan on this machine would give in "
           "95 of 100 runs (a time factor's interval carries what the machine adds beyond one run's rounds), so a "
           "verdict decided on one is wrong about 1 time in 20 when the factor sits on its boundary, far less often "
           "when far from it (burtbench calibrate measures how often they hold on this machine)")


def _tally(judged: list, key: str) -> dict:
    return {claims.SYMBOLS[name]: sum(getattr(j, key).verdict == name for j in judged) for name in claims.VERDICTS}


def claim_lines(judged_all: list, run, folder: Path, width: int = WIDTH) -> list[str]:
    """The claims this run could judge, a row each (claim_rows), then a line for the rest."""

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
    widths = verdict_widths(shown, width)
    lines += [row for j in shown for row in claim_rows(j, widths, width)]
    rest = [j for j in judged_all if not judgeable(j)]
    legend = LEGEND + (f"; {len(rest)} more not judged here: see claims.md" if rest else "")
    lines += [f"  {escape(part)}" for text in (legend, READING, MEANING,
                                               claim_files.family_line(claim_files.both(judged_all)))
              for part in textwrap.wrap(text, width - 2)]
    return lines


def speed_lines(run, width: int = WIDTH) -> list[str]:
    """At each workload point, the fastest engine and how much faster than the slowest it ran: an entry a point,
    wrapped to `width` under its engine (a terminal's own wrap would run back to column 0)."""
    by_point: dict[tuple, list] = {}
    failed: dict[tuple, list] = {}
    for point in in_order(run_points(run)):
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
        head = f"  {workload + shown_params(workload, fast.params):<28} "
        label = labels[fast.engine]
        text = f"{head}{label} {format_seconds(fast.time_mean())}"
        if slow is not fast:
            text += (f", {claims.fx(slow.time_mean() / fast.time_mean())} faster than {labels[slow.engine]} "
                     f"{format_seconds(slow.time_mean())} (slowest of {len(points)})")
        lines.append(_wrapped(head, label, "bold", text, width))
    for (workload, _), points in failed.items():
        head = f"  {workload + shown_params(workload, points[0].params):<28} "
        text = f"{head}{FAILED}, not ranked: " + ", ".join(labels[p.engine] for p in points)
        lines.append(_wrapped(head, FAILED, "red", text, width))
    return lines


def _wrapped(head: str, lead: str, style: str, text: str, width: int) -> str:
    """`text`, which begins with `head` then `lead`, wrapped to `width` under what follows `head`, `lead` in
    `style`: an engine id never broken at its slashes."""
    chunks = textwrap.wrap(text, width, subsequent_indent=" " * len(head), break_on_hyphens=False,
                           break_long_words=False)
    first = chunks[0]
    styled = f"{escape(head)}[{style}]{escape(lead)}[/]{escape(first[len(head + lead):])}" \
        if first.startswith(head + lead) else escape(first)
    return "\n".join([styled, *map(escape, chunks[1:])])


def summary_lines(rendered, width: int = WIDTH) -> list[str]:
    folder = Path(rendered.folder).resolve()
    lines = [""] + [f"[yellow]{escape(s)}[/]" for s in rendered.status]
    # A versions run answers its own question first; the paper's claims follow, where it measured their points.
    for table in rendered.versions:
        lines += ["", f"[bold]{escape(table.title)}[/] (time per iteration, {POINT_STATISTIC}; the answer against the "
                      f"oldest version, as compare gives it): {escape(str(folder / 'tables' / table.name))}.md"]
        for row in table.rows:
            text = (f"{row['engine']} {row['version']:<10} {format_seconds(row['time_per_iter_s'], 'n/a'):>9}  "
                    f"{versions.ratio(row, 'time')}")
            lines += [f"  {escape(part)}" for part in textwrap.wrap(text, width - 2, subsequent_indent="    ")]
        deciding = versions.deciding_line(table.rows)
        lines += [f"  [cyan]{escape(part)}[/]" for part in textwrap.wrap(deciding, width - 2)]
    lines += [""] if rendered.versions else []
    lines += claim_lines(rendered.judged, rendered.run, folder, width)
    lines += release_lines(rendered.release)
    speeds = speed_lines(rendered.run, width)
    if speeds:
        lines += ["", f"[bold]Fastest and slowest engine at each workload point[/] (time per iteration or SGD step, "
                      f"{POINT_STATISTIC}):"]
        lines += speeds
    lines += not_run_lines(rendered.run, width)
    lines += ["", f"claims:  {escape(str(folder / 'claims.md'))}",
              f"report:  {escape((folder / 'index.html').as_uri())}"]
    return lines


def release_lines(verdicts: list) -> list[str]:
    """Other sources' claims (Burn 0.20's release, harness/report/release_claims.py), a line each."""
    if not verdicts:
        return []
    lines = ["", "[bold]Burn 0.20's release claims[/] (their section of claims.md says why):"]
    for v in verdicts:
        value = f" {claims.fx(v.ours)}{claims.interval(v)}" if v.ours is not None else ""
        lines.append(f"  {escape(v.claim.id):<28} release {escape(v.claim.stated_text):<26} "
                     f"{claims.SYMBOLS[v.verdict]} {v.verdict}{escape(value)}")
    return lines


def not_run_lines(run, width: int = WIDTH) -> list[str]:
    """The engines the user named (--engine, not `all`) that this run could not run, each with why (the
    manifest's `unavailable`, its reason whole, wrapped); none where every named engine ran. Such a run
    ends with EXIT_NOT_ALL_RUN."""
    unavailable = run.manifest.get("unavailable")
    if not run.plan.explicit_engines or not isinstance(unavailable, dict):
        return []
    missed = {eid: one_line(str(unavailable[eid])) for eid in run.plan.engines
              if eid in unavailable and _asked(eid, run, unavailable)}
    if not missed:
        return []
    lines = ["", f"[bold yellow]Asked for, not run[/] ({count(len(missed), 'engine')} named with --engine; "
                 f"exit status {exit_status(run)}):"]
    for eid, why in missed.items():
        lines += [f"  {escape(part)}" for part in textwrap.wrap(f"{eid}: {why}", width - 2, subsequent_indent="  ")]
    return lines


def exit_status(run) -> int:
    """The status the process exits with, as its manifest's status says it ended: an interrupted run's 130 and an
    incomplete one's 1 come before the 3 of an engine asked for and not run (commands/cli.py's cmd_run)."""
    status = str(run.manifest.get("status") or "")
    if status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_INCOMPLETE if status.startswith("incomplete") else EXIT_NOT_ALL_RUN


def engine_tokens(argv) -> list[str] | None:
    """The names given to --engine on the run's command line (the manifest's argv); None where it has none."""
    if not isinstance(argv, list):
        return None
    found = []
    for k, arg in enumerate(map(str, argv)):
        if arg == "--engine" and k + 1 < len(argv):
            found += str(argv[k + 1]).split(",")
        elif arg.startswith("--engine="):
            found += arg.removeprefix("--engine=").split(",")
    return [t.strip() for t in found if t.strip()] or None


def _asked(eid: str, run, unavailable: dict) -> bool:
    """Whether the user asked for this engine: named by its id, or by a prefix none of whose engines ran (a
    prefix that ran some of its engines, `torch/eager` without a GPU, was served)."""
    tokens = engine_tokens(run.manifest.get("argv"))
    base = split_id(eid)[0]
    if tokens is None or base in tokens:
        return True
    for token in tokens:
        mine = [e for e in run.plan.engines if split_id(e)[0].startswith(token.rstrip("/") + "/")
                or ("/" not in token and split_id(e)[0].split("/")[0].startswith(token + "-"))]
        if eid in mine and all(e in unavailable for e in mine):
            return True
    return False


def asked_not_run(run_dir: Path) -> list[str]:
    """not_run_lines of the run in `run_dir`."""
    return not_run_lines(load_run(run_dir))
