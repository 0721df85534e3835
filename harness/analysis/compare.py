"""`burtbench compare RUN_A RUN_B`: did B get faster or slower than A, and is the change real?

For each (engine, workload, params) measured in both runs: the ratio B/A of the per-iteration
time and of the peak resident memory, with a 95% Welch t confidence interval on the log scale.
The unit of replication is the trial (one process): each trial's per-iteration mean is one
value, so the drift between processes (layout, ASLR, frequency) counts. When a side has a
single trial, the timing blocks inside it stand in; they cannot see process-to-process drift,
and the row says so. A verdict (faster / slower) needs the interval to exclude 1.

Why not a bootstrap: with the usual 3 trials per side a percentile bootstrap over trials treats
the 3 values as the whole population and gives intervals far too narrow. Simulated unchanged
pairs (3 trials, 2% drift between processes) were called changed 22% of the time by the
bootstrap and 3.4% of the time by this Welch interval.

Memory changes under 1% are reported as no change (peak memory repeats to within a few pages).
The geometric mean of the time ratios per workload combines the rows' log ratios and their
variances (Welch–Satterthwaite degrees of freedom).
"""
from __future__ import annotations

import io
import json
import math
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path

from engines.base import finite, split_id
from harness.analysis.points import Point, group
from harness.analysis.stats import CONFIDENCE, t_quantile
from harness.analysis.summary import format_seconds
from harness.errors import UsageError
from harness.store.run_plan import read_plan
from harness.store.runs import load_run
from harness.units import mib

MANIFEST_CHECKS = (("machine", "cpu_model", "CPU model"), ("machine", "governor", "CPU governor"))
# Peak memory repeats to within a few pages, so a tiny but consistent difference is
# "significant" without meaning anything: memory changes under 1% are no change.
MEMORY_TOLERANCE = 0.01
TRIALS = "trials"
BLOCKS = "timing blocks of single trials (process-to-process drift not covered)"


# ----------------------------------------------------------------------------- statistics

@dataclass(frozen=True)
class LogDifference:
    """log(B) - log(A) of two means, its variance and Welch degrees of freedom."""
    diff: float
    var: float
    df: float

    def interval(self) -> list[float]:
        if self.var == 0:
            return [math.exp(self.diff)] * 2
        half = t_quantile((1 + CONFIDENCE) / 2, self.df) * math.sqrt(self.var)
        return [math.exp(self.diff - half), math.exp(self.diff + half)]


def welch(a: list[float], b: list[float]) -> LogDifference | None:
    """Welch's comparison of the log values of A and B; None unless each side has two positive values."""
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    from scipy import stats

    log_a, log_b = [math.log(v) for v in a], [math.log(v) for v in b]
    var = statistics.variance(log_a) / len(a) + statistics.variance(log_b) / len(b)
    test = stats.ttest_ind(log_b, log_a, equal_var=False)
    return LogDifference(statistics.fmean(log_b) - statistics.fmean(log_a), var, float(test.df) if var else math.inf)


def _welch_df(parts: list[tuple[float, float]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variances (each with its own df)."""
    denominator = sum(v * v / df for v, df in parts if v > 0)
    return sum(v for v, _ in parts) ** 2 / denominator if denominator else math.inf


def combine(differences: list[LogDifference]) -> LogDifference:
    """The mean of several log differences: log of the geometric mean of their ratios."""
    n = len(differences)
    return LogDifference(statistics.fmean(d.diff for d in differences),
                         sum(d.var for d in differences) / n**2,
                         _welch_df([(d.var, d.df) for d in differences]))


def verdict(interval: list[float] | None, worse: str = "slower", better: str = "faster") -> str:
    if interval is None:
        return "not enough data"
    if interval[0] > 1:
        return worse
    if interval[1] < 1:
        return better
    return "no significant change"


# ----------------------------------------------------------------------------- per row

def compare_time(a: Point, b: Point) -> tuple[dict, LogDifference | None]:
    values_a, values_b = a.time_values(), b.time_values()
    if not values_a or not values_b:
        return {"time_a_s": None, "time_b_s": None, "time_ratio": None, "time_ci": None,
                "time_unit": None, "time_verdict": "not measured"}, None
    unit, difference = TRIALS, welch(values_a, values_b)
    if difference is None:
        unit, difference = BLOCKS, welch(a.block_times(), b.block_times())
    mean_a, mean_b = statistics.fmean(values_a), statistics.fmean(values_b)
    interval = difference.interval() if difference else None
    return {"time_a_s": mean_a, "time_b_s": mean_b,
            "time_ratio": math.exp(difference.diff) if difference else mean_b / mean_a,
            "time_ci": interval, "time_unit": unit if difference else None,
            "time_verdict": verdict(interval)}, difference


def compare_init(a: Point, b: Point) -> dict:
    """B/A of the init run (one iteration, end to end): one value per trial that ran one."""
    values_a, values_b = a.values("init_time_s"), b.values("init_time_s")
    if not values_a or not values_b:
        return {"init_a_s": None, "init_b_s": None, "init_ratio": None, "init_ci": None, "init_verdict": "not measured"}
    mean_a, mean_b = statistics.fmean(values_a), statistics.fmean(values_b)
    difference = welch(values_a, values_b)
    interval = difference.interval() if difference else None
    return {"init_a_s": mean_a, "init_b_s": mean_b, "init_ratio": mean_b / mean_a, "init_ci": interval,
            "init_verdict": verdict(interval)}


def compare_memory(a: Point, b: Point) -> dict:
    values_a, values_b = a.values("peak_resident_bytes"), b.values("peak_resident_bytes")
    if not values_a or not values_b:
        return {"mem_a_bytes": None, "mem_b_bytes": None, "mem_ratio": None, "mem_ci": None,
                "mem_verdict": "not measured"}
    mean_a, mean_b = statistics.fmean(values_a), statistics.fmean(values_b)
    difference = welch(values_a, values_b)
    interval = difference.interval() if difference else None
    ratio = mean_b / mean_a
    negligible = interval is not None and abs(ratio - 1) < MEMORY_TOLERANCE
    return {"mem_a_bytes": mean_a, "mem_b_bytes": mean_b, "mem_ratio": ratio, "mem_ci": interval,
            "mem_verdict": "no significant change" if negligible else verdict(interval, "larger", "smaller")}


# ----------------------------------------------------------------------------- two runs

def _describe(keys: set) -> list[dict]:
    return [{"workload": k.workload, "engine": k.engine, "params": json.loads(k.params)}
            for k in sorted(keys, key=lambda k: (k.workload, k.engine, k.params))]


def _manifest_warnings(a: dict, b: dict) -> list[str]:
    warnings = []
    profile_a, profile_b = read_plan(a).profile, read_plan(b).profile
    if profile_a != profile_b:
        warnings.append(f"profile differs: A has {profile_a!r}, B has {profile_b!r}; the comparison may not be fair")
    for section, name, label in MANIFEST_CHECKS:
        value_a = (a.get(section) or {}).get(name) if section else a.get(name)
        value_b = (b.get(section) or {}).get(name) if section else b.get(name)
        if value_a != value_b:
            warnings.append(f"{label} differs: A has {value_a!r}, B has {value_b!r}; the comparison may not be fair")
    return warnings


def _run_info(run, env: str | None) -> dict:
    return {"run_id": run.run_id + (f"@{env}" if env else ""), "profile": run.plan.profile,
            "timing": run.timing, "created_at": run.manifest.get("created_at"), "git_commit": run.manifest.get("git_commit"),
            "frameworks": _env_freeze(run.manifest, env) if env else run.manifest.get("frameworks") or {}}


def _env_freeze(manifest: dict, env: str) -> dict:
    """What an environment of the run held (a damaged manifest may hold anything here)."""
    made = manifest.get("environments")
    record = made.get(env) if isinstance(made, dict) else None
    return (record.get("freeze") if isinstance(record, dict) else None) or {}


def _geometric_means(differences: dict[str, list[LogDifference]]) -> dict[str, dict]:
    means = {}
    for workload, rows in differences.items():
        combined = combine(rows)
        interval = combined.interval()
        means[workload] = {"ratio": math.exp(combined.diff), "ci": interval, "verdict": verdict(interval),
                           "n": len(rows)}
    return means


def in_env(points: dict, env: str) -> dict:
    """The points of one environment of a run, keyed by their engine ids without it."""
    return {key._replace(engine=split_id(key.engine)[0]): point for key, point in points.items()
            if split_id(key.engine)[1] == env}


def compare_runs(run_a: Path, run_b: Path, env_a: str | None = None, env_b: str | None = None) -> dict:
    """A plain, JSON-ready comparison of two runs (see the module docstring), or of two
    environments (--env SPEC) of one run or two."""
    a, b = load_run(Path(run_a)), load_run(Path(run_b))
    if a.timing != b.timing:
        raise UsageError(f"run A was timed with --timing {a.timing}, run B with --timing {b.timing}: their "
                         "timed regions differ (workloads/timed_regions.csv); compare runs of one --timing")
    points_a, points_b = group(a.trials), group(b.trials)
    if env_a or env_b:  # a side without one: the engines that ran in the runner's own environment
        points_a, points_b = in_env(points_a, env_a or ""), in_env(points_b, env_b or "")
    rows, differences = [], {}
    for key in sorted(set(points_a) & set(points_b), key=lambda k: (k.workload, k.engine, k.params)):
        time, difference = compare_time(points_a[key], points_b[key])
        if difference is not None:
            differences.setdefault(key.workload, []).append(difference)
        rows.append({"workload": key.workload, "engine": key.engine, "params": json.loads(key.params),
                     "trials_a": len(points_a[key].trials), "trials_b": len(points_b[key].trials),
                     **time, **compare_memory(points_a[key], points_b[key])})
    return {
        "run_a": _run_info(a, env_a), "run_b": _run_info(b, env_b),
        "method": f"B/A of per-iteration time and of peak resident memory, {CONFIDENCE:.0%} Welch t interval "
                  "on log values over trials (timing blocks where a side has one trial)",
        "warnings": _manifest_warnings(a.manifest, b.manifest),
        "rows": rows,
        "geomean": _geometric_means(differences),
        "only_in_a": _describe(set(points_a) - set(points_b)),
        "only_in_b": _describe(set(points_b) - set(points_a)),
    }


# ----------------------------------------------------------------------------- the regression gate

def regressions(result: dict, fail_if_slower_pct: float) -> list[dict]:
    """Rows significantly slower (interval above 1) whose B/A exceeds 1 + PCT/100."""
    limit = 1 + fail_if_slower_pct / 100
    return [row for row in result["rows"] if row["time_verdict"] == "slower" and row["time_ratio"] > limit]


def exit_status(result: dict, fail_if_slower_pct: float | None) -> int:
    """0, or 1 when --fail-if-slower PCT is given and some (engine, workload, params) regressed by more."""
    if fail_if_slower_pct is None:
        return 0
    return 1 if regressions(result, fail_if_slower_pct) else 0


# ----------------------------------------------------------------------------- output

def size(value: float | None) -> str:
    return mib(value)


def ratio_text(ratio: float | None, interval: list[float] | None) -> str:
    if ratio is None:
        return "n/a"
    return f"{ratio:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


HEADERS = ["Workload", "Engine", "Params", "Time A", "Time B", "B/A [95% CI]", "Time verdict",
           "Mem A", "Mem B", "B/A [95% CI]", "Memory verdict"]


def table_rows(result: dict) -> list[list[str]]:
    rows = []
    for row in result["rows"]:
        time_verdict = row["time_verdict"] + (" *" if row["time_unit"] == BLOCKS else "")
        rows.append([row["workload"], row["engine"], " ".join(f"{k}={v}" for k, v in row["params"].items()),
                     format_seconds(row["time_a_s"], "n/a"), format_seconds(row["time_b_s"], "n/a"),
                     ratio_text(row["time_ratio"], row["time_ci"]), time_verdict,
                     size(row["mem_a_bytes"]), size(row["mem_b_bytes"]),
                     ratio_text(row["mem_ratio"], row["mem_ci"]), row["mem_verdict"]])
    for workload, mean in sorted(result["geomean"].items()):
        rows.append([workload, f"geometric mean of {mean['n']}", "", "", "", ratio_text(mean["ratio"], mean["ci"]),
                     mean["verdict"], "", "", "", ""])
    return rows


def _preamble(result: dict) -> list[str]:
    lines = [f"A = {result['run_a']['run_id']}, B = {result['run_b']['run_id']}. {result['method']}."]
    if any(row["time_unit"] == BLOCKS for row in result["rows"]):
        lines.append(f"* = interval from {BLOCKS}: rerun with --trials 2 or more for a fair verdict.")
    lines += [f"WARNING: {w}" for w in result["warnings"]]
    for side in ("only_in_a", "only_in_b"):
        if result[side]:
            names = ", ".join(f"{g['workload']}:{g['engine']}" for g in result[side])
            lines.append(f"Only in {side[-1].upper()}: {names}")
    return lines


def _markdown(result: dict) -> str:
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"- {text}" for text in _preamble(result)] + ["", line(HEADERS), line(["---"] * len(HEADERS))]
    out += [line(cells) for cells in table_rows(result)]
    return "\n".join(out) + "\n"


def _terminal(result: dict) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(*HEADERS, title="burtbench compare: B relative to A")
    for cells in table_rows(result):
        table.add_row(*cells)
    buffer = io.StringIO()
    console = Console(file=buffer, width=shutil.get_terminal_size((160, 24)).columns, color_system=None)
    for text in _preamble(result):
        console.print(text, markup=False, highlight=False)
    console.print(table)
    return buffer.getvalue()



def format_comparison(result: dict, fmt: str = "table") -> str:
    if fmt == "json":
        # A ratio that is not a number is null.
        return json.dumps(finite(result, lambda _: None), indent=2, allow_nan=False) + "\n"
    if fmt == "md":
        return _markdown(result)
    if fmt == "table":
        return _terminal(result)
    raise ValueError(f"unknown format {fmt!r}: use table, md or json")
