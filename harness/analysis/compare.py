"""`burtbench compare RUN_A RUN_B`: did B get faster or slower than A, and is the change real?

For each (engine, workload, params) measured in both runs: the ratio B/A of the per-iteration
time, of the instructions per iteration (--instructions: a proxy for time, shown beside it) and of
the peak resident memory, each with its 95% interval (harness/analysis/paired.py):
- two variants of one run (RUN@A RUN@B of the same RUN): paired by round, since the plan ran them
  once each per round: per-round ratios, a Wilcoxon signed-rank test and a bootstrap interval;
- two runs: unpaired, Welch's t on the log values of the trials.
The unit of replication is the trial (one process): the timing blocks inside a trial are never
counted as independent samples, so a side with one trial gives a ratio and no interval (`*`).
The times shown are the geometric means the ratio is computed from (ratio = B / A exactly).

Memory changes under 1% are reported as no change (peak memory repeats to within a few pages).
A workload's geometric-mean row compares, per trial, the geometric mean over its rows (the
harness's floor row excluded: a floor change is no engine's), paired or not as its rows are.
"""
from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

from engines.base import finite, split_id
from engines.none import FLOOR
from harness.analysis import paired as stats
from harness.analysis.labels import short_ids
from harness.analysis.points import Point, group, measure, trial_time
from harness.analysis.stats import CONFIDENCE
from harness.analysis.summary import count_text, format_seconds
from harness.errors import UsageError
from harness.store.run_plan import read_plan
from harness.store.runs import load_run
from harness.units import mib

MANIFEST_CHECKS = (("machine", "cpu_model", "CPU model"), ("machine", "governor", "CPU governor"))
# Peak memory repeats to within a few pages, so a tiny but consistent difference is
# "significant" without meaning anything: memory changes under 1% are no change.
MEMORY_TOLERANCE = 0.01
MIN_ROUNDS = stats.MIN_ROUNDS
ONLY_SHOWN = 6  # "Only in A/B": names listed before "and N more"


# ----------------------------------------------------------------------------- per row

def by_round(point: Point, value) -> dict[int, float]:
    """{trial index: value} of a point's trials that carry the value."""
    found = {}
    for trial in point.trials:
        v = value(trial)
        if v is not None and isinstance(trial.get("trial"), int):
            found[trial["trial"]] = v
    return found


def ratio_of(a: Point, b: Point, value, pair: bool) -> stats.Ratio:
    """B/A of one measure (value: trial -> float or None), paired by round or not."""
    va, vb = by_round(a, value), by_round(b, value)
    return stats.paired(stats.pairs(va, vb)) if pair else stats.unpaired(list(va.values()), list(vb.values()))


def verdict(r: stats.Ratio, worse: str = "slower", better: str = "faster") -> str:
    if r.ratio is None:
        return "not measured"
    if r.degenerate == "identical samples":
        return "identical samples"
    if r.ci is None:
        return "not enough trials"
    if r.significant():
        return worse if r.ratio > 1 else better
    return "no significant change"


def fields(name: str, r: stats.Ratio, verdict_text: str) -> dict:
    return {f"{name}_a": r.a, f"{name}_b": r.b, f"{name}_ratio": r.ratio, f"{name}_ci": list(r.ci) if r.ci else None,
            f"{name}_p": r.p, f"{name}_n": r.n, f"{name}_note": r.degenerate, f"{name}_verdict": verdict_text}


def compare_time(a: Point, b: Point, pair: bool = False) -> tuple[dict, stats.Ratio]:
    r = ratio_of(a, b, trial_time, pair)
    found = fields("time", r, verdict(r))
    # `*`: no fair verdict: a side with one trial, or paired rounds too few for the signed-rank test.
    found["time_starred"] = r.ratio is not None and (r.ci is None or (pair and r.n < MIN_ROUNDS)) \
        and r.degenerate != "identical samples"
    return found, r


def compare_instructions(a: Point, b: Point, pair: bool = False) -> tuple[dict, stats.Ratio | None]:
    r = ratio_of(a, b, lambda t: measure(t, "instructions_per_iter"), pair)
    if r.ratio is None:
        return fields("instr", r, "not counted"), None
    spread = max(r.half_width() or 0.0, stats.INSTRUCTIONS_TOLERANCE)
    same = abs(r.ratio - 1) <= spread
    return fields("instr", r, "same" if same else ("more" if r.ratio > 1 else "fewer")), r


def compare_init(a: Point, b: Point, pair: bool = False) -> dict:
    """B/A of the init run (one iteration, end to end): one value per trial that ran one."""
    r = ratio_of(a, b, lambda t: measure(t, "init_time_s"), pair)
    return fields("init", r, verdict(r))


def compare_memory(a: Point, b: Point, pair: bool = False) -> dict:
    r = ratio_of(a, b, lambda t: measure(t, "peak_resident_bytes"), pair)
    negligible = r.ratio is not None and abs(r.ratio - 1) < MEMORY_TOLERANCE
    return fields("mem", r, "no significant change" if negligible else verdict(r, "larger", "smaller"))


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


def _geometric_means(pairs_by_workload: dict[str, list[tuple[Point, Point]]], pair: bool,
                     starred: dict[str, bool]) -> dict[str, dict]:
    """Per workload: B/A of the per-trial geometric mean over its rows (the trial indices every row
    has), paired or not as the rows are."""
    means = {}
    for workload, rows in pairs_by_workload.items():
        sides = []
        for side in (0, 1):
            times = [by_round(p[side], trial_time) for p in rows]
            common = set.intersection(*(set(t) for t in times))
            sides.append({r: math.exp(sum(math.log(t[r]) for t in times) / len(times)) for r in common
                          if all(t[r] > 0 for t in times)})
        r = stats.paired(stats.pairs(*sides)) if pair else stats.unpaired(list(sides[0].values()),
                                                                            list(sides[1].values()))
        means[workload] = {"ratio": r.ratio, "ci": list(r.ci) if r.ci else None, "p": r.p, "verdict": verdict(r),
                           "n": len(rows), "starred": starred.get(workload, False)}
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
    pair = Path(run_a).resolve() == Path(run_b).resolve() and (env_a or "") != (env_b or "")
    points_a, points_b = group(a.trials), group(b.trials)
    if env_a or env_b:  # a side without one: the engines that ran in the runner's own environment
        points_a, points_b = in_env(points_a, env_a or ""), in_env(points_b, env_b or "")
    rows, by_workload, starred = [], {}, {}
    for key in sorted(set(points_a) & set(points_b), key=lambda k: (k.workload, k.engine, k.params)):
        pa, pb = points_a[key], points_b[key]
        time, r = compare_time(pa, pb, pair)
        if key.engine != FLOOR and r.ratio is not None:
            by_workload.setdefault(key.workload, []).append((pa, pb))
            starred[key.workload] = starred.get(key.workload, False) or time["time_starred"]
        rows.append({"workload": key.workload, "engine": key.engine, "params": json.loads(key.params),
                     "trials_a": len(pa.trials), "trials_b": len(pb.trials), **time,
                     **compare_instructions(pa, pb, pair)[0], **compare_memory(pa, pb, pair)})
    how = ("paired by round (one run: every variant once per round): Wilcoxon signed-rank test, BCa bootstrap "
           "interval of the per-round ratios" if pair else "unpaired (two runs): Welch t interval on log values")
    return {
        "run_a": _run_info(a, env_a), "run_b": _run_info(b, env_b), "paired": pair,
        "method": f"B/A of time per iteration, of instructions per iteration (a proxy, --instructions) and of peak "
                  f"resident memory over trials (one value per process), {CONFIDENCE:.0%} interval {how}; "
                  f"times shown are the geometric means the ratio comes from",
        "warnings": _manifest_warnings(a.manifest, b.manifest),
        "rows": rows,
        "geomean": _geometric_means(by_workload, pair, starred),
        "only_in_a": _describe(set(points_a) - set(points_b)),
        "only_in_b": _describe(set(points_b) - set(points_a)),
    }


# ----------------------------------------------------------------------------- the regression gate

def regressions(result: dict, fail_if_slower_pct: float) -> list[dict]:
    """Rows significantly slower (interval above 1, a fair verdict: no `*`) whose B/A exceeds 1 + PCT/100."""
    limit = 1 + fail_if_slower_pct / 100
    return [row for row in result["rows"]
            if row["time_verdict"] == "slower" and not row["time_starred"] and row["time_ratio"] > limit]


def regression_lines(result: dict, fail_if_slower_pct: float) -> list[str]:
    """Why --fail-if-slower fails: one line per regressed row."""
    return [f"slower by more than {fail_if_slower_pct:g}%: {row['workload']} {row['engine']} "
            f"{_params(row['params'])}B/A {ratio_text(row['time_ratio'], row['time_ci'])}"
            + (f", p={row['time_p']:.3g}" if row["time_p"] is not None else "")
            for row in regressions(result, fail_if_slower_pct)]


def exit_status(result: dict, fail_if_slower_pct: float | None) -> int:
    """0, or 1 when --fail-if-slower PCT is given and some (engine, workload, params) regressed by more."""
    if fail_if_slower_pct is None:
        return 0
    return 1 if regressions(result, fail_if_slower_pct) else 0


def instruction_regressions(result: dict, fail_if_more_pct: float) -> list[str]:
    """Why --fail-if-more-instructions fails: one line per row of RUN_B that counts more instructions per
    iteration than RUN_A beyond their repeat spread and by more than PCT, or that has no count to gate on."""
    limit = 1 + fail_if_more_pct / 100
    lines = []
    for row in result["rows"]:
        where = f"{row['workload']} {row['engine']} {_params(row['params'])}"
        if row["instr_ratio"] is None:
            lines.append(f"no instruction count to gate on: {where}(run both with --instructions)")
        elif row["instr_verdict"] == "more" and row["instr_ratio"] > limit:
            lines.append(f"more instructions by more than {fail_if_more_pct:g}%: {where}B/A {row['instr_ratio']:.4f}")
    return lines


# ----------------------------------------------------------------------------- output

def size(value: float | None) -> str:
    return mib(value)


def _params(params: dict) -> str:
    return "".join(f"{k}={v} " for k, v in params.items())


def ratio_text(ratio: float | None, interval: list[float] | None) -> str:
    if ratio is None:
        return "n/a"
    return f"{ratio:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


HEADERS = ["Workload", "Engine", "Params", "Time A → B (geo. mean)", "Time B/A [95% CI] p", "Time verdict",
           "Instr./iter A → B (a proxy)", "Instr. B/A", "Mem A → B", "Mem B/A", "Memory verdict"]


def arrow(a: str, b: str) -> str:
    return "—" if a in ("—", "n/a") and b in ("—", "n/a") else f"{a} → {b}"


def varying_params(rows: list[dict]) -> list[str]:
    """The parameters whose values differ between rows of one workload: those that tell them apart."""
    names = dict.fromkeys(k for row in rows for k in row["params"])
    return [k for k in names if any(len({json.dumps(r["params"].get(k)) for r in rows if r["workload"] == w}) > 1
                                    for w in {r["workload"] for r in rows})]


def short(verdict: str) -> str:
    """A verdict as the table shows it (n.s.: no significant change, said once above the table)."""
    return "n.s." if verdict == "no significant change" else verdict


def table_rows(result: dict) -> list[list[str]]:
    labels, _ = short_ids([row["engine"] for row in result["rows"]])
    shown = varying_params(result["rows"])
    rows = []
    for row in result["rows"]:
        star = " *" if row["time_starred"] else ""
        instr = "—" if row["instr_ratio"] is None else f"{row['instr_ratio']:.4f} {row['instr_verdict']}"
        rows.append([row["workload"], labels.get(row["engine"], row["engine"]),
                     " ".join(f"{k}={row['params'][k]}" for k in shown if k in row["params"]),
                     arrow(format_seconds(row["time_a"], "n/a"), format_seconds(row["time_b"], "n/a")),
                     ratio_text(row["time_ratio"], row["time_ci"]) + ("" if row["time_p"] is None else
                                                                       f" p={row['time_p']:.2g}"),
                     short(row["time_verdict"]) + star,
                     arrow(count_text(row["instr_a"]), count_text(row["instr_b"])), instr,
                     arrow(size(row["mem_a"]), size(row["mem_b"])),
                     ratio_text(row["mem_ratio"], None if row["mem_verdict"] == "no significant change" else row["mem_ci"]),
                     short(row["mem_verdict"])])
    for workload, mean in sorted(result["geomean"].items()):
        if mean["n"] < 2:  # the one row says it already
            continue
        rows.append([workload, f"geo. mean of {mean['n']}", "", "", ratio_text(mean["ratio"], mean["ci"]),
                     mean["verdict"] + (" *" if mean["starred"] else ""), "", "", "", "", ""])
    return rows


def shown_columns(rows: list[list[str]]) -> list[int]:
    """The columns that say something: a column of blanks and dashes only (no instructions counted,
    one point per workload) is left out."""
    return [i for i in range(len(HEADERS)) if any(r[i] not in ("", "—") for r in rows) or i < 2]


def _only(described: list[dict]) -> str:
    """A count and a short list without repeats: the engines, then the workloads."""
    engines = list(dict.fromkeys(g["engine"] for g in described))
    workloads = list(dict.fromkeys(g["workload"] for g in described))

    def short(names):
        more = len(names) - ONLY_SHOWN
        return ", ".join(names[:ONLY_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return (f"{len(described)} point{'s' if len(described) != 1 else ''} "
            f"(engines: {short(engines)}; workloads: {short(workloads)})")


def _preamble(result: dict) -> list[str]:
    lines = [f"A = {result['run_a']['run_id']}, B = {result['run_b']['run_id']}. {result['method']}."]
    lines.append("n.s. = no significant change (time: a change needs its interval to exclude 1 and p < 0.05).")
    _, legend = short_ids([row["engine"] for row in result["rows"]])
    if legend:
        lines.append(legend.capitalize() + ".")
    if result["geomean"]:
        lines.append("Geometric-mean rows: per trial, over the workload's rows but the harness's floor row "
                     f"({FLOOR}); `*` where an input row has one.")
    if any(row["time_starred"] for row in result["rows"]):
        lines.append(f"* = no fair verdict: a side with one trial (timing blocks inside a process are not trials), "
                     f"or fewer than {MIN_ROUNDS} paired rounds; rerun with --trials {MIN_ROUNDS} or more.")
    lines += [f"WARNING: {w}" for w in result["warnings"]]
    for side in ("only_in_a", "only_in_b"):
        if result[side]:
            lines.append(f"Only in {side[-1].upper()}: {_only(result[side])}")
    return lines


def _markdown(result: dict) -> str:
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rows = table_rows(result)
    keep = shown_columns(rows)
    out = [f"- {text}" for text in _preamble(result)] + ["", line([HEADERS[i] for i in keep]),
                                                        line(["---"] * len(keep))]
    out += [line([cells[i] for i in keep]) for cells in rows]
    return "\n".join(out) + "\n"


def _terminal(result: dict) -> str:
    from rich.console import Console
    from rich.table import Table

    rows = table_rows(result)
    keep = shown_columns(rows)
    table = Table(title="burtbench compare: B relative to A")
    for i in keep:
        # An engine label is never cut or wrapped: the other columns give way.
        table.add_column(HEADERS[i], no_wrap=i == 1)
    for cells in rows:
        table.add_row(*[cells[i] for i in keep])
    buffer = io.StringIO()
    console = Console(file=buffer, width=shutil.get_terminal_size((120, 24)).columns, color_system=None)
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
