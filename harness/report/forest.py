"""The paper's claims as one picture, a forest plot (matplotlib, Agg, PNG): a row per claim that has a
factor (rule max, min or flat), both subjects on it, each factor with its 95% interval on a log axis,
the paper's number it is held to, the region where it would be reproduced, and the verdict's symbol.

rows() decides what is drawn (tested apart from the drawing); figure() draws it, draw() saves it. A claim
that is no factor (same_outputs: bit-for-bit outputs) is named under the plot with its verdicts, never placed
on the axis; a verdict that is not measurable or not comparable is named on its row, with no point. The
verdicts stand in a column of their own right of the axis; the axis is widened until every factor's text
ends inside it, and labels only as many decades as fit apart.
"""
from __future__ import annotations

import hashlib
import math
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from harness.report.figures import BURTORCH_STYLES, _pyplot
from harness.judging.verdicts import (BY_KEY, DECIDED, NOT_REPRODUCED, PARTLY, REPRODUCED, SUBJECTS, SYMBOLS,
                                     UNDECIDED, VERDICTS, Verdict, fx, interval, regions)
from harness.text import clean

FACTOR_RULES = ("max", "min", "flat")
# Only these verdicts stand on their factor; a not-measurable one may carry a partial factor (the rows the
# run has), which a point would pass off as the claim's.
ON_AXIS = (*DECIDED, UNDECIDED)
VERDICT_COLORS = {REPRODUCED: "#1a9641", PARTLY: "#b8860b", NOT_REPRODUCED: "#d62728", UNDECIDED: "#555555"}
PAPER_COLOR, REGION_COLOR, STATED_COLOR = "#b2182b", "#1a9641", "#2166ac"
ROW_INCHES, OFFSET = 0.62, 0.2  # a claim's height; each subject's line above or below its middle
FOOT, FOOT_LINE, LEGEND, X_LABELS = 0.12, 0.17, 0.55, 0.6  # inches below the axis, bottom up
WIDTH, AXIS_LEFT, AXIS_RIGHT = 12.0, 0.2, 0.81  # inches; the axis's ends as shares of them (the verdicts right of it)
TEXT_SIZE, TICK_SIZE = 7.5, 9  # points: a factor's text, the axis's labels
TEXT_GAP, TICK_GAP = 1.25, 0.15  # a factor's text starts this factor right of its interval; inches between labels
VALUE, VERDICT = "value", "verdict"  # the gids of a factor's text and of a verdict's (tests find them by these)
LEGEND_TEXT = " · ".join(f"{SYMBOLS[v]} {v}" for v in VERDICTS)


@dataclass(frozen=True)
class Mark:
    """One subject's verdict on a claim's row."""
    subject: str  # a key of verdicts.BY_KEY
    verdict: str
    factor: float | None  # None: nothing on the axis, the verdict named instead
    low: float | None  # its 95% interval; None where it has none (drawn hollow, "no interval")
    high: float | None
    paper: float | None  # the number the factor is held to
    reproduced: tuple[float, float] | None  # the factors that would reproduce it
    text: str  # what is written beside the point, or in its place

    @property
    def has_interval(self) -> bool:
        return self.low is not None


@dataclass(frozen=True)
class Row:
    claim: str  # the claim's id
    stated: float
    label: str  # the id, the paper's words, and the number held to where that is another
    marks: tuple[Mark, ...]  # in SUBJECTS' order


def _finite(value: float | None) -> bool:
    return value is not None and 0 < value < math.inf


def reproduced_span(rule: str, paper: float, tolerance: float) -> tuple[float, float]:
    """The factors that reproduce `paper` (verdicts.regions; flat: at most the number plus its tolerance)."""
    if rule == "flat":
        return 0.0, paper * (1 + tolerance)
    bounds, names = regions(paper, tolerance)
    at = names.index(REPRODUCED)
    edges = (0.0, *bounds, math.inf)
    return edges[at], edges[at + 1]


def mark(v: Verdict) -> Mark:
    held = v.paper if _finite(v.paper) else None
    span = reproduced_span(v.claim.rule, held, v.claim.tolerance) if held is not None else None
    if v.verdict not in ON_AXIS or not _finite(v.ours):
        return Mark(v.subject, v.verdict, None, None, None, held, span, v.verdict)
    bounded = _finite(v.low) and _finite(v.high)
    # interval() names the trials where there is no interval, but would print an unbounded one.
    text = fx(v.ours) + (interval(v) if bounded else interval(replace(v, low=None)) or " (no interval)")
    return Mark(v.subject, v.verdict, v.ours, v.low if bounded else None, v.high if bounded else None, held, span,
                text)


def _label(claim, marks: tuple[Mark, ...]) -> str:
    """'abstract-gpt-memory' over 'up to ×80 (held to ×409)': memory on another OS is held to the paper's
    figure there, which the row's words alone would hide."""
    held = sorted({m.paper for m in marks if m.paper is not None and not math.isclose(m.paper, claim.stated)})
    return f"{claim.id}\n{claim.stated_text}" + (f" (held to {' / '.join(fx(p) for p in held)})" if held else "")


def rows(judged: list) -> list[Row]:
    """The plot's rows, top to bottom in claims.csv's order: every claim whose rule gives a factor."""
    out = []
    for j in judged:
        if j.claim.rule in FACTOR_RULES:
            marks = tuple(mark(v) for v in j.verdicts())
            out.append(Row(j.claim.id, j.claim.stated, _label(j.claim, marks), marks))
    return out


def not_factors(judged: list) -> list[str]:
    """A line for each claim that is no factor, with both subjects' verdicts."""
    return [f"{j.claim.id} ({j.claim.stated_text}: not a factor): "
            + ", ".join(f"{s.short} {SYMBOLS[v.verdict]} {v.verdict}" for s, v in zip(SUBJECTS, j.verdicts()))
            for j in judged if j.claim.rule not in FACTOR_RULES]


def slug(name: str) -> str:
    """A file-name-safe form of a machine's name; the hash keeps two names that read alike apart."""
    readable = re.sub(r"[^a-z0-9.+]+", "-", name.lower()).strip("-.")[:60].rstrip("-.")
    return f"{readable or 'machine'}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:6]}"


def _limits(drawn: list[Row]) -> tuple[float, float]:
    """The log axis's ends: every point, interval and paper's number, and ×1, with a margin (the room for the
    factors' texts is _fitted's)."""
    values = [1.0]
    for row in drawn:
        values += [x for m in row.marks for x in (m.factor, m.low, m.high, m.paper) if _finite(x)]
        values += [row.stated] if _finite(row.stated) else []
    low, high = math.log10(min(values)), math.log10(max(values))
    span = max(high - low, 1.0)
    return 10 ** (low - 0.1 * span - 0.2), 10 ** (high + 0.1 * span + 0.2)


def _subject_style(key: str) -> tuple[str, str]:
    """The colour and marker the report's figures give the subject's engine."""
    return BURTORCH_STYLES[BY_KEY[key].engine]


def _draw_mark(ax, m: Mark, y: float, xlim: tuple[float, float]) -> None:
    color, marker = _subject_style(m.subject)
    if m.reproduced is not None:
        left, right = max(m.reproduced[0], xlim[0]), min(m.reproduced[1], xlim[1])
        ax.fill_betweenx([y - OFFSET, y + OFFSET], left, right, color=REGION_COLOR, alpha=0.12, linewidth=0)
    if m.paper is not None:
        ax.plot([m.paper, m.paper], [y - OFFSET, y + OFFSET], color=PAPER_COLOR, linewidth=2.2, zorder=3)
    if m.factor is None:
        ax.text(xlim[0] * 1.15, y, m.text, va="center", fontsize=7.5, color="#777777", style="italic")
    else:
        errors = [[m.factor - m.low], [m.high - m.factor]] if m.has_interval else None
        ax.errorbar(m.factor, y, xerr=errors, fmt=marker, color=color, ecolor=color, elinewidth=1.8, capsize=3,
                    markersize=7 if marker == "D" else 10, markerfacecolor=color if m.has_interval else "white",
                    markeredgewidth=1.4, zorder=5)
        ax.text(_text_start(m), y, m.text, va="center", fontsize=TEXT_SIZE, color=color, zorder=6, gid=VALUE,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5})
    ax.text(1.01, y, f"{SYMBOLS[m.verdict]} {m.verdict}", transform=ax.get_yaxis_transform(), va="center",
            fontsize=8, color=VERDICT_COLORS.get(m.verdict, "#999999"), fontweight="bold", gid=VERDICT)


def _text_start(m: Mark) -> float:
    return max(m.factor, m.high or m.factor) * TEXT_GAP


def _inches(fig, text: str, size: float) -> float:
    """How wide `text` is drawn at `size` points, measured by the figure's renderer."""
    probe = fig.text(0, 0, text, fontsize=size)
    width = probe.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    probe.remove()
    return width


def _fitted(fig, drawn: list[Row], xlim: tuple[float, float]) -> tuple[float, float]:
    """`xlim` with its right end moved out until every factor's text, begun right of its interval, ends inside
    the axis (`axis` inches wide): else a long interval's text runs into the verdicts' column."""
    axis = WIDTH * (AXIS_RIGHT - AXIS_LEFT)
    low, high = math.log10(xlim[0]), math.log10(xlim[1])
    for m in (m for row in drawn for m in row.marks if m.factor is not None):
        # The share of the axis left of where the text may start (its box's pad and a little air counted); a
        # text wider than most of the axis (none is) would otherwise push its end out without bound.
        room = max(1 - (_inches(fig, m.text, TEXT_SIZE) + 0.05) / axis, 0.2)
        # Its start, (start - low) / (high - low) of the way along the axis, must be at most `room` of it.
        high = max(high, low + (math.log10(_text_start(m)) - low) / room)
    return xlim[0], 10 ** high


def _decades(fig, xlim: tuple[float, float]) -> list[float]:
    """The decades the axis labels: every k-th, ×1 among them, k the least that keeps the widest label
    `TICK_GAP` inches clear of the next."""
    first, last = math.ceil(math.log10(xlim[0])), math.floor(math.log10(xlim[1]))
    per_decade = WIDTH * (AXIS_RIGHT - AXIS_LEFT) / (math.log10(xlim[1]) - math.log10(xlim[0]))
    widest = max(_inches(fig, fx(10.0 ** k), TICK_SIZE) for k in range(first, last + 1))
    every = max(1, math.ceil((widest + TICK_GAP) / per_decade))
    return [10.0 ** k for k in range(first, last + 1) if k % every == 0]


def _legend(fig, top: float) -> None:
    """The legend below the axis, its top `top` (a fraction of the figure's height) from the bottom."""
    # matplotlib only where a picture is drawn: its import is most of a report's start-up.
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=color, marker=marker, linewidth=1.8, markersize=8,
                      label=f"{s.short}: {s.title}")
               for s in SUBJECTS for color, marker in [_subject_style(s.key)]]
    handles += [Line2D([], [], color="#333333", marker="o", markerfacecolor="white", linestyle="none",
                       label="hollow: no interval (too few trials)"),
                Line2D([], [], color=PAPER_COLOR, marker="|", markersize=12, markeredgewidth=2.2, linestyle="none",
                       label="the paper's number it is held to"),
                Line2D([], [], color=STATED_COLOR, linestyle="--", linewidth=1.6,
                       label="as the paper states it, where that differs"),
                Patch(color=REGION_COLOR, alpha=0.25, label="reproduced there (within tolerance)")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, top), ncol=3, fontsize=8, frameon=False)


def _x_axis(fig, ax, xlim: tuple[float, float]) -> None:
    """Log, labelled as the tables print factors (×0.1, ×1, ×1,000) at the decades that fit, ×1 drawn across
    every row."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # start-up cost, as in _legend

    ax.axvline(1.0, color="#444444", linewidth=1, zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(*xlim)
    ax.xaxis.set_major_locator(FixedLocator(_decades(fig, xlim)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: fx(x)))
    ax.tick_params(axis="x", labelsize=TICK_SIZE)
    ax.xaxis.set_minor_formatter(NullFormatter())  # a short axis would label 2, 3, … 9 as well
    ax.grid(True, axis="x", which="major", alpha=0.3)


def draw(judged: list, path: Path, title: str) -> Path | None:
    """The claims' forest plot as a PNG at `path`; None (and no file there) where no claim has a factor."""
    # A character the font lacks is drawn as a box, not warned of with our source paths (texts are measured
    # while the figure is made, then drawn).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
        fig = figure(judged, title)
        if fig is None:
            path.unlink(missing_ok=True)  # a re-render must not show an older run's picture
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    _pyplot().close(fig)
    return path


def figure(judged: list, title: str):
    """The claims' forest plot as a matplotlib figure (closed by its caller); None where no claim has a factor."""
    drawn = rows(judged)
    if not any(m.factor is not None for row in drawn for m in row.marks):
        return None
    plt = _pyplot()
    footer = [*not_factors(judged), LEGEND_TEXT]
    # Inches, so that the title, the axis's labels, the legend and the footer keep their room at any row count.
    footer_inches = FOOT + FOOT_LINE * len(footer)
    top, bottom = 0.9, footer_inches + LEGEND + X_LABELS
    height = ROW_INCHES * len(drawn) + top + bottom
    fig, ax = plt.subplots(figsize=(WIDTH, height), dpi=100)
    fig.subplots_adjust(left=AXIS_LEFT, right=AXIS_RIGHT, top=1 - top / height, bottom=bottom / height)
    xlim = _fitted(fig, drawn, _limits(drawn))
    for y, row in enumerate(drawn):
        if y % 2:
            ax.axhspan(y - 0.5, y + 0.5, color="#f2f2f2", zorder=0)
        offsets = [(k - (len(row.marks) - 1) / 2) * 2 * OFFSET for k in range(len(row.marks))]
        for m, offset in zip(row.marks, offsets):
            _draw_mark(ax, m, y + offset, xlim)
        helds = {m.paper for m in row.marks if m.paper is not None}
        if helds and _finite(row.stated) and not any(math.isclose(h, row.stated) for h in helds):
            ax.plot([row.stated] * 2, [y - 0.45, y + 0.45], color=STATED_COLOR, linestyle="--", linewidth=1.6,
                    zorder=4)
    _x_axis(fig, ax, xlim)
    ax.set_ylim(len(drawn) - 0.5, -0.5)
    ax.set_yticks(range(len(drawn)), [clean(r.label, newlines=True) for r in drawn], fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("factor: the other engine over BurTorch (log scale; right of ×1: BurTorch better; "
                  "flat rows: largest over smallest)", fontsize=9)
    ax.set_title(f"{clean(title)}\nThe paper's claims: each subject's factor with its 95% interval", fontsize=11)
    _legend(fig, (footer_inches + LEGEND) / height)
    fig.text(0.02, FOOT / height, "\n".join(clean(line) for line in footer), fontsize=8, va="bottom", color="#333333")
    return fig
