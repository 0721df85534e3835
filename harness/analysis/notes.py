"""The notes under a report table: what a reader needs to read its numbers, from the declarations."""
from __future__ import annotations

from harness.analysis.points import Point
from harness.analysis import paper
from harness.analysis.metrics import Metric
from workloads import theory
from workloads.timed_regions import regions

RELATIVE_NOTE = ("(×N) = relative to BurTorch ({baseline}) at the same point, in this run and "
                 "in the paper (the paper's printed factor where it prints one).")


def timed_region_notes(points: list[Point], workload: str, timing: str) -> list[str]:
    """One line per engine with a paper row: what its trials timed per iteration, flagged where that
    is not what the authors' script for its row times."""

    table = regions()
    rows = [table[(e, workload)] for e in dict.fromkeys(p.engine for p in points) if (e, workload) in table]
    if not rows:
        return []
    return [f"Timed per iteration, row by row (--timing {timing}; workloads/timed_regions.csv has the authors' "
            "scripts and why):", *(r.line(timing) for r in rows)]


def counts(values) -> str:
    return ", ".join(f"{v:,}" for v in sorted(set(values))) or "?"


def metric_notes(metrics: list[Metric], points: list[Point], paper_iterations: int | None) -> list[str]:
    """Each metric's note once, with the iteration counts filled in."""
    ours = counts(p.iterations() for p in points if p.iterations())
    theirs = f"{paper_iterations:,}" if paper_iterations else "?"
    notes = [m.note.format(our_iterations=ours, paper_iterations=theirs) for m in metrics if m.note]
    return list(dict.fromkeys(notes))


def measure_notes(metrics: list[Metric], point: Point) -> list[str]:
    """Measures shown in a table that this point lacks (and why), or that are estimates.

    A point with no successful trial is explained by its trial statuses instead."""
    if not point.trials_ok():
        return []
    notes = []
    for metric in metrics:
        if metric.source_field == "cpu_clocks_source" and "tsc_estimate" in point.sources(metric.source_field):
            notes.append("CPU clocks are an estimate (CPU time × TSC rate)")
        if metric.ours(point) is None:
            why = "; ".join(sorted(point.sources(metric.source_field))) if metric.source_field else ""
            notes.append(f"{metric.title.lower()} not measured" + (f": {why}" if why else ""))
    return notes


def paper_source(rows: list[paper.PaperRow], run_os: str) -> tuple[str, list[str]]:
    """'Table 11 (Linux)' and a note when the paper has no table for the run's OS."""
    if not rows:
        return "none", ["The paper has no table for this workload."]
    used_os = rows[0].os
    notes = []
    if used_os != run_os:
        notes.append(f"The paper ran this workload on {paper.OS_NAMES[used_os]} only; "
                     f"this run is on {paper.OS_NAMES[run_os]}.")
    return f"{paper.table_names(rows)} ({paper.OS_NAMES[used_os]})", notes


def clock_of(manifest: dict) -> tuple[float | None, str]:
    """The fastest clock the run's core is known to reach (the lowest bound): max, else nominal,
    else current frequency from the machine facts, else the TSC rate; with where it came from."""
    mhz = _facts(_facts(manifest.get("machine")).get("cpu_mhz"))
    for key in ("max", "nominal", "current"):
        if _positive(mhz.get(key)):
            return mhz[key] * 1e6, f"{key} CPU frequency ({mhz.get('source')})"
    tsc = _facts(manifest.get("tsc"))
    if _positive(tsc.get("hz")):
        return tsc["hz"], f"TSC rate ({tsc.get('source')})"
    return None, "no CPU frequency in the manifest"


def _facts(value) -> dict:
    """A group of machine facts, or none where the manifest holds something else (an edited or damaged file)."""
    return value if isinstance(value, dict) else {}


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def theory_note(workload, manifest: dict) -> str:
    """One labelled line: the "registers only" bound of a graph on this run's machine, per iteration."""
    b = theory.bound(workload, *clock_of(manifest))
    head = (f"In theory, registers only (a lower bound, not a measurement): {b.cycles} scalar operations "
            f"per iteration ({b.forward_ops} forward + {b.backward_ops} backward) at one per clock cycle")
    if b.seconds is None:
        return f"{head}; no clock rate known ({b.clock_source})."
    return f"{head} = Ω({b.seconds * 1e9:.3g} ns) per iteration at {b.clock_hz / 1e9:.3g} GHz, the {b.clock_source}."
