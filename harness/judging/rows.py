"""The rows a claim reads from the report's tables (claim_rules.py judges them): each engine's factor
over the subject at the claim's points, with its interval over trials (harness/analysis/effect.py),
and each trial's own value of the claim's metric (a quotient's parts from one trial)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from engines import all_engines
from engines.base import BASELINE
from harness.analysis import effect as effects
from harness.analysis.effect import Effect
from harness.analysis.looks import Looks, looked
from harness.analysis.noise import ASSUMED, MEMORY, PLAIN, Noise, from_record
from harness.analysis.points import Point, run_points
from harness.analysis.metrics import Metric, resolve
from harness.analysis.tables import Table
from harness.store.runs import Run, run_of
from workloads.claims import Claim

@dataclass
class Row:
    point: str  # "mlp hidden_dim=4 batch=1"
    engine: str
    ours: float | None
    paper: float | None
    in_run: bool
    required: bool  # a row of the paper's table: the claim needs it
    notes: list[str]
    iterations: int | None
    paper_iterations: int | None
    table: Table
    lacks: str | None = None  # the engine whose measurement at this point the run lacks
    # For a quotient metric ("init/step_time"): the engine's own quotient and the subject's, ours and the paper's.
    own: tuple | None = None
    effect: Effect | None = None  # the factor over trials, with its interval (harness/analysis/effect.py)
    params: dict | None = None  # the point's parameters
    factor: "Factor | None" = None  # the trials the effect is computed from, to compute it again held with others


@dataclass(frozen=True)
class Factor:
    """The subject's and the other engine's trials at a point, and the looks they were taken at: the factor's
    interval at the look its rounds are at, held together with `rows` intervals (looks.looked)."""
    subject: dict
    other: dict
    looks: Looks
    paired: bool = True
    noise: Noise = PLAIN  # what the machine adds beyond the run's rounds (run_noise)
    resolution: float = 0.0  # what one reading is known to (Metric.resolution: a page of memory)

    def effect(self, rows: int = 1) -> Effect:
        found = looked(self.subject, self.other, self.looks, self.paired, rows, run_of, self.noise)
        return effects.read_to(found, self.subject, self.other, self.resolution)

    def how(self, rows: int = 1) -> str:
        """The interval's method and level, in words: '…, look 2 of up to 6: a 99.42% interval; held together
        with 3 rows …'."""
        found = self.effect(rows)
        look = self.looks.look_of(found.n)
        level = f"a {effects.CONFIDENCE * 100:.4g}% interval" if found.runs > 1 or self.looks.most <= 1 else \
            f"look {look} of up to {self.looks.most}: a {self.looks.confidence(look) * 100:.4g}% interval"
        if found.measurement:
            return found.method()
        held = f"; held together with {rows} rows, each at 1/{rows} of the error (Bonferroni)" if rows > 1 else ""
        return f"{found.method()}, {level}{held}"


def factor(run: Run, engines: tuple[str, str], workload: str, params: dict, metrics: list[Metric],
           paired: bool = True, other_params: dict | None = None) -> Factor:
    """engines[1] at params (other_params) over engines[0] at params, with the run's sequential design: the first
    look at the rounds of the plan, a later look for each round added after it (PlannedTrial.added)."""
    points = [_point(run, engines[0], workload, params), _point(run, engines[1], workload, other_params or params)]
    subject, other = (samples_of(point, metrics) for point in points)
    added = set().union(*(_added(point) for point in points))
    common = set(subject) & set(other) if paired else set(subject) | set(other)
    return Factor(subject, other, Looks(max(len(common - added), 1), run.plan.most_looks), paired,
                  machine_noise(run, metrics), resolution(metrics))


def machine_noise(run: Run, metrics: list[Metric]) -> Noise:
    """What moves a factor from run to run beyond its trials: a time's, the run's calibration (run_noise);
    a memory reading's (a metric read to a page), MEMORY; a count's, nothing."""
    if timed(metrics):
        return run_noise(run)
    return MEMORY if resolution(metrics) else PLAIN


def resolution(metrics: list[Metric]) -> float:
    """What one reading of a factor's measure is known to: its metric's, where the factor reads one metric."""
    return metrics[0].resolution if len(metrics) == 1 else 0.0


def timed(metrics: list[Metric]) -> bool:
    """A factor of times: what a run's shift and its rounds' correlation move (memory is read, not timed)."""
    return all(m.unit in ("µs", "ms", "s") for m in metrics)


def run_noise(run: Run) -> Noise:
    """The noise the run recorded when it started (the machine's calibration that applied, or ASSUMED, with
    why); a run recorded before there was any, or whose record is out of bounds, is read with ASSUMED."""
    record = run.manifest.get("noise")
    source = record.get("source") if isinstance(record, dict) and isinstance(record.get("source"), str) else None
    found = from_record(record, source) if source else None
    return found or replace(ASSUMED, source="assumed (the run recorded no calibration of its machine)")


def added_rounds(run: Run, engine: str, workload: str, params: dict) -> set:
    return _added(_point(run, engine, workload, params))


def _added(point: Point | None) -> set:
    return {t["trial"] for t in point.trials if t.get("added")} if point else set()


def point_text(table: Table, params: dict) -> str:
    """The point's name: the workload and the parameters that tell its paper rows apart."""
    names = [n for n in table.declaration.point if n in params]
    return " ".join([table.workload, *(f"{n}={params[n]}" for n in names)])


def matches(params: dict, points: dict) -> bool:
    return all(params.get(name) in values for name, values in points.items())


def _other_framework(engine: str) -> bool:
    """A CPU engine of another framework than BurTorch (neither subject, nor its Python binding)."""

    return engine in all_engines() and engine.endswith("/cpu") and not engine.split("/")[0].startswith("burtorch")


def metric_keys(metric_expr: str, os_name: str) -> list[Metric]:
    return [resolve((part,), os_name)[0] for part in metric_expr.split("/")]


def _quotient(row: dict, prefix: str, metrics: list[Metric]) -> float | None:
    return _quotient_of([row.get(f"{prefix}{m.key}") for m in metrics])


def _quotient_of(values: list) -> float | None:
    """The first value over the others; None where one is missing (None or NaN) or a divisor is 0."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values) or any(not v for v in values[1:]):
        return None
    result = float(values[0])
    for v in values[1:]:
        result /= float(v)
    return result


def _point(run: Run, engine: str, workload: str, params: dict) -> Point | None:
    return next((p for p in run_points(run).values() if p.engine == engine and p.workload == workload
                 and all(p.params.get(k) == v for k, v in params.items())), None)


def trial_samples(run: Run, engine: str, workload: str, params: dict, metrics: list[Metric]) -> dict:
    """{round: the metric's value in that trial} at the engine's point; a quotient's parts from one trial."""
    return samples_of(_point(run, engine, workload, params), metrics)


def samples_of(point: Point | None, metrics: list[Metric]) -> dict:
    if point is None:
        return {}
    found = {}
    for trial in point.trials:
        value = _quotient_of([m.ours(Point(point.key, [trial])) for m in metrics])
        if value is not None and isinstance(trial.get("trial"), int):
            found[trial["trial"]] = value
    return found


def claim_tables(claim: Claim, tables: list[Table]) -> tuple[list[Table], list[str]]:
    """The report's tables a claim reads, and the paper tables this run has no table of."""
    found = [t for t in tables if t.declaration.csv_name in claim.tables]
    missing = [name for name in claim.tables if not any(t.declaration.csv_name == name for t in found)]
    return found, missing


def ratio_rows(claim: Claim, subject: str, run: Run, tables: list[Table]) -> list[Row]:
    """The claim's rows of the other engines, each with its factor over the subject at its point."""
    metrics = metric_keys(claim.metric, run.os)
    rows = []
    for table in tables:
        for row in table.rows:
            engine = row["engine"]
            if not matches(row["params"], claim.points):
                continue
            if claim.engines == ("*",):
                if row["paper_row"] is None or not _other_framework(engine):
                    continue
            elif engine not in claim.engines:
                continue
            required = row["paper_row"] is not None
            if not required and not row["in_run"]:
                continue
            base = _subject_row(table, row, subject)
            # A row whose program failed its check gives no factor: a wrong program's time is no answer.
            mine = _quotient(row, "", metrics) if row["in_run"] and row.get("check_ok") is not False else None
            own = _quotient(base, "", metrics) if base is not None and base.get("check_ok") is not False else None
            lacks = engine if mine is None else (subject if not own else None)
            found = measured = None
            if lacks is None:
                measured = factor(run, (subject, engine), table.workload, row["params"], metrics)
                found = measured.effect()
            rows.append(Row(point=point_text(table, row["params"]), engine=engine,
                            ours=(found.estimate if found and found.estimate else mine / own) if lacks is None else None,
                            paper=_quotient(row, "paper_rel_", metrics), in_run=row["in_run"], required=required,
                            notes=list(row["notes"] or []), iterations=row["iterations"],
                            paper_iterations=table.declaration.iterations, table=table, lacks=lacks,
                            own=_own_quotients(table, row, base, metrics) if len(metrics) > 1 else None,
                            effect=found, params=row["params"], factor=measured))
    return rows


def _subject_row(table: Table, row: dict, subject: str) -> dict | None:
    return next((r for r in table.rows if r["engine"] == subject and r["params"] == row["params"] and r["in_run"]),
                None)


def _own_quotients(table: Table, row: dict, base: dict | None, metrics: list[Metric]) -> tuple:
    """(engine's, the subject's) own quotient of the two measures at the row's point, the run's then the
    paper's (the paper's BurTorch row stands beside both subjects)."""
    paper_base = next((r for r in table.rows if r["engine"] == BASELINE and r["params"] == row["params"]), None)
    return ((_quotient(row, "", metrics), _quotient(base, "", metrics) if base is not None else None),
            tuple(_quotient(r, "paper_", metrics) if r is not None else None for r in (row, paper_base)))
