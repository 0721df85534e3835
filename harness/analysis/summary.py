"""The end-of-run summary on the terminal: one row per point (engine at a workload point)."""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from engines.base import BASELINE
from engines.none import FLOOR
from harness.analysis.labels import short_ids
from harness.analysis.points import TIME_READING, PointKey, group, in_order, number
from harness.store.run_plan import DEFAULT_NOISE_THRESHOLD
from harness.units import mib
from workloads import load

# Relative columns: our engine, as the paper's tables, and micrograd, the smallest Python engine.
BASELINES = (BASELINE, "micrograd/eager/python/cpu")


def format_seconds(s: float | None, missing: str = "—") -> str:
    s = number(s)  # what no reading can be (NaN, an infinity) is no time, and no format raises on it
    if s is None:
        return missing
    s = float(f"{s:.3g}")  # the unit of the shown digits: 999.9996 ns (a mean's rounding) is 1 µs, not 1e+03 ns
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


COLUMNS = ("workload", "engine", "ok", "time/iter", "CV", "instr./iter (proxy)", "×BurTorch", "×micrograd", "check",
           "peak RSS")
# The columns that may wrap, at spaces, to fit the terminal; the engine is left whole (labels.short_ids),
# and a workload's point is one parameter a line.
WORDS = ("CV", "instr./iter (proxy)", "check")


def factor(x: float) -> str:
    """A ratio in three digits, without an exponent: 0.123, 13.3, 3,580."""
    if number(x) is None:
        return "—"
    return f"{x:,.0f}" if x >= 1000 else f"{x:.3g}"


def summary_table(trials: list[dict], noise_threshold: float = DEFAULT_NOISE_THRESHOLD) -> Group:
    """One row per point; engines named by what tells them apart (labels.short_ids, its legend on the
    line below), columns with nothing to say dropped, long cells wrapped rather than cut."""
    points = group(trials, noise_threshold)
    labels, legend = short_ids([key.engine for key in points])
    rows = [_row(point.key, point, points, labels) for point in in_order(points)]
    kept = [k for k, name in enumerate(COLUMNS) if name in ("workload", "engine") or any(r[k] != "—" for r in rows)]
    notes = [line for line in (legend, uncounted(points)) if line]
    return Group(Fitted(rows, kept), *(Text(line) for line in notes))


def natural_width(console, table: Table) -> int:
    """The columns `table` takes with no cell wrapped (rich's own measure stops at the console's width).
    Below it rich narrows every column at once, numbers and engines too, folding them mid-digit."""
    return console.measure(table, options=console.options.update_width(10**4)).maximum


# The columns a narrow terminal loses first, in that order; the rest (the point, the engine, its trials,
# its time and its check) always stay. Instructions are counted only where --instructions asked for them, so
# their column goes last: a measure asked for outranks those shown by default.
SPARED = ("CV", "×micrograd", "peak RSS", "×BurTorch", "instr./iter (proxy)")


class Fitted:
    """The table at the width it is printed at: the columns in SPARED that do not fit are left out, and a
    line under it names them; rich would otherwise squeeze them to a letter a line, or crop them."""

    def __init__(self, rows: list[list[str]], kept: list[int]):
        self.rows, self.kept = rows, kept

    def table(self, shown: list[int]) -> Table:
        table = Table(title=TIME_READING[0].upper() + TIME_READING[1:], title_justify="left", collapse_padding=True)
        for k in shown:
            name = COLUMNS[k]
            # Engines, points and numbers are never wrapped: rich narrows the columns of words to fit
            # instead (an engine's min_width it would shrink first and restore after, past the edge).
            # A column of words keeps room for its widest word: rich would narrow it to nothing first,
            # folding "not comparable" mid-word.
            table.add_column(name, justify="left" if name in ("workload", "engine", "check") else "right",
                             overflow="fold", no_wrap=name not in WORDS,
                             min_width=self.widest_word(k) if name in WORDS else None)
        for row in self.rows:
            table.add_row(*(row[k] for k in shown))
        return table

    def widest_word(self, k: int) -> int:
        cells = [COLUMNS[k], *(Text.from_markup(row[k]).plain for row in self.rows)]
        return max(len(word) for cell in cells for word in cell.split())

    def __rich_console__(self, console, options):
        shown = list(self.kept)
        spare = [k for name in SPARED for k in shown if COLUMNS[k] == name]
        table = self.table(shown)
        while spare and natural_width(console, table) > options.max_width:
            shown.remove(spare.pop(0))
            table = self.table(shown)
        yield table
        left = [COLUMNS[k] for k in self.kept if k not in shown]
        if left:
            yield Text(f"left out at {options.max_width} columns: {', '.join(left)} (a wider terminal shows them; "
                       f"burtbench report has every column)")


def _row(key: PointKey, point, points: dict, labels: dict) -> list[str]:
    mean = point.time_mean()
    ratios = []
    for base in BASELINES:
        base_point = points.get(PointKey(base, key.workload, key.params))
        base_mean = base_point.time_mean() if base_point else None
        # A wrong program's time divides nothing, nor is divided (its check column says "wrong"); the
        # harness's floor is no framework to set beside one.
        wrong = point.failed() or (base_point is not None and base_point.failed()) or key.engine == FLOOR
        ratios.append(factor(mean / base_mean) if mean and base_mean and not wrong else "—")
    statuses = set(point.status_counts()) - {"ok"}
    ok, _ = point.check()
    check = {True: "ok", False: "wrong", None: point.check_status() or "—"}[ok]
    rss = point.values("peak_resident_bytes")
    cv = point.time_cv()
    return [key.workload + shown_params(key.workload, point.params, "\n"), labels[key.engine],
            f"{point.trials_ok()}/{len(point.trials)}" + (f" ({', '.join(sorted(statuses))})" if statuses else ""),
            format_seconds(mean), "—" if cv is None else f"{cv:.1%}" + (" [yellow]noisy[/]" if point.noisy() else ""),
            instructions_cell(point), *ratios, check, mib(max(rss) if rss else None, "—")]


def count_text(value: float | None) -> str:
    """An instruction count, short: 4 significant digits (counts repeat to ~0.03%)."""
    if number(value) is None:
        return "—"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{unit}"
    return f"{value:.4g}"


def instructions_cell(point) -> str:
    counts = point.values("instructions_per_iter")
    return count_text(sum(counts) / len(counts) if counts else None)


def uncounted(points: dict) -> str | None:
    """Why some engines have no instruction counts: one line per engine."""
    reasons = {}
    for point in points.values():
        for t in point.trials:
            if t.get("instructions_reason") and point.engine not in reasons:
                reasons[point.engine] = str(t["instructions_reason"])
    return "\n".join(f"instructions not counted for {e}: {why}" for e, why in reasons.items()) or None


def shown_params(workload: str, params: dict, separator: str = " ") -> str:
    """The parameters that tell a workload's points apart, each after `separator`, in its grid's order (a
    trial keeps them sorted): those of a one-value grid say nothing."""
    try:
        grid = load(workload).grid
    except KeyError:
        grid = {}
    order = {k: n for n, k in enumerate(grid)}
    shown = [k for k in sorted(params, key=lambda k: order.get(k, len(order))) if len(grid.get(k, (0, 1))) > 1]
    return "".join(f"{separator}{k}={param_text(params[k])}" for k in shown)


def param_text(value) -> str:
    """A parameter's value as the paper writes it: a whole float as an integer (a=-41, not a=-41.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
