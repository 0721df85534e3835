"""The versions of a framework side by side, for a run with several environments (--env SPEC).

Per workload, a "versions" table: one row per environment of each engine, each compared with the
oldest version paired by round (the plan runs every variant once per round), and answered by the
rule every surface uses (harness/analysis/effect.py): time per iteration (points.POINT_STATISTIC, the estimate
the ratio's rule gives), its ratio with a bootstrap interval and a signed-rank p, instructions per iteration
(--instructions, a proxy, beside time), the noise floor measured by A/A copies (run by default for
versions, --no-aa skips them; an answer without one says so) and the verdict, saying which measure
decided it. Init time and peak memory are compared the same way.

The figure: per point, time per iteration per version as bars from zero, instructions per iteration
(where counted) likewise, and each version's ratio to the oldest with its interval and the floor.
"""
from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from engines.base import AA_COPY, split_id
from harness.analysis import change, compare, effect
from harness.analysis.points import FAILED, POINT_SHORT, POINT_STATISTIC, Point, measure, run_points, trial_time
from harness.analysis.summary import count_text, format_seconds, param_text
from harness.report.figures import Figure, _pyplot, _save
from harness.store.runs import Run
from harness.units import count, mib

FIELDS = ["engine", "params", "version", "env", "trials_ok", "trials", "check_ok", "rounds",
          "time_per_iter_s", "time_ratio", "time_ci_low", "time_ci_high", "time_verdict",
          "instructions_per_iter", "instr_ratio", "instr_ci_low", "instr_ci_high",
          "noise_floor", "floor_pair", "verdict", "answer", "decided_by",
          "init_time_s", "init_ratio", "init_ci_low", "init_ci_high", "init_verdict",
          "peak_resident_bytes", "mem_ratio", "mem_ci_low", "mem_ci_high", "mem_verdict"]
REFERENCE = "reference (oldest)"
ANSWER = "Answer (time ×oldest [95% CI])"
# The columns of sentences and names, which a page wraps at spaces (report/html.py): the others are numbers.
WORDS = ("Point", "Version", "Noise floor (A/A)", ANSWER, "Decided by", "Init ×oldest", "Memory ×oldest")


@dataclass
class VersionTable:
    """Shaped like report/tables.Table where formats.py reads one (name, title, caption, fields, rows, shown, notes)."""
    name: str
    title: str
    caption: str
    workload: str
    fields: list[str]
    rows: list[dict]
    shown: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    counted_as: str = ""  # where instructions were counted on another build than the one timed, which


def _version_key(text: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(text), "")
    except InvalidVersion:
        return (1, None, text)


def version_of(point: Point, env: str, names: dict | None = None) -> str:
    """A version of BurTorch's name (short hash and subject, and whether it is dirty), else the version
    the engine reported in that environment, else the SPEC."""
    return str((names or {}).get(env.removesuffix(AA_COPY)) or point.version() or env)


def revisions_of(manifest: dict, given: tuple) -> dict[str, tuple]:
    """{SPEC: (its place among versions, its name)} of the run's versions of BurTorch (--env burtorch@REV,
    burtorch-authors@COMMIT), as the manifest recorded them: ours in the order of their commits (a dirty
    working tree last), theirs in the order given (`given`: the plan's SPECs)."""
    recorded = manifest.get("environments")
    found = {}
    for text, record in recorded.items() if isinstance(recorded, dict) else ():
        if isinstance(record, dict) and record.get("name"):
            when = (record.get("revision") or {}).get("committed_at") or \
                (given.index(text) if text in given else len(given))
            found[str(text)] = ((-1, when, ""), str(record["name"]))
    return found


def instructions_of(trial: dict) -> float | None:
    return measure(trial, "instructions_per_iter")


def aa_floors(points: dict[str, Point]) -> tuple[dict[str, change.Floor], list[str]]:
    """The noise floor each A/A pair of one point measured, by environment (compare.aa_floors), and a
    line per pair saying what it measured."""
    floors, lines = compare.aa_floors(points), []
    for env in sorted(points):
        original = env.removesuffix(AA_COPY)
        if not env.endswith(AA_COPY) or original not in points:
            continue
        aa = compare.effect_of(points[original], points[env], trial_time, pair=True)
        spread = "n/a" if aa.spread is None else f"{aa.spread * 100:.1f}%"
        floor = floors.get(original)
        lines.append(f"A/A {original or 'no environment'}: B/A {compare.effect_text(aa)} over {count(aa.n, 'round')}, "
                     f"per-round spread {spread} (sd of log ratio); floor "
                     f"{floor.text() if floor else 'not measured (' + str(aa.why) + ')'}")
    return floors, lines


def _ends(prefix: str, e: effect.Effect | None) -> dict:
    low, high = (e.low, e.high) if e is not None else (None, None)
    return {f"{prefix}_ci_low": low, f"{prefix}_ci_high": high}


def _floor_fields(floor: change.Floor | None) -> dict:
    return {"noise_floor": floor.factor if floor else None, "floor_pair": floor.pair if floor else None}


def _row(engine: str, params: str, env: str, point: Point, oldest: Point, floor: change.Floor | None, without: str,
         threshold: float, names: dict | None = None) -> dict:
    """One version's row against the oldest; `without`: why it has no floor, where it has none."""
    same = point is oldest
    copy = (" (A/A copy)" if env.endswith(AA_COPY) else "") + (f" ({FAILED})" if point.failed() else "")
    row = {"engine": engine, "params": json.loads(params), "version": version_of(point, env, names) + copy, "env": env,
           "trials_ok": point.trials_ok(), "trials": len(point.trials), "check_ok": point.check()[0], "in_run": True,
           **_floor_fields(floor)}
    if same:
        return {**row, "rounds": len(point.time_values()), "time_per_iter_s": point.time_mean(),
                "time_ratio": 1.0, **_ends("time", None), "time_verdict": REFERENCE,
                "instructions_per_iter": compare.geo(point, instructions_of),
                "instr_ratio": 1.0 if compare.geo(point, instructions_of) else None, **_ends("instr", None),
                "verdict": REFERENCE, "decided_by": "", "init_time_s": compare.geo(point, lambda t: measure(t, "init_time_s")),
                "init_ratio": 1.0, **_ends("init", None), "init_verdict": REFERENCE,
                "peak_resident_bytes": compare.geo(point, lambda t: measure(t, "peak_resident_bytes")), "mem_ratio": 1.0,
                **_ends("mem", None), "mem_verdict": REFERENCE}
    time = compare.effect_of(oldest, point, trial_time, pair=True)
    instr = compare.effect_of(oldest, point, instructions_of, pair=True)
    init = compare.effect_of(oldest, point, lambda t: measure(t, "init_time_s"), pair=True)
    memory = compare.effect_of(oldest, point, lambda t: measure(t, "peak_resident_bytes"), pair=True)
    answer = compare.checked_answer(oldest, point, change.change_answer(
        time, floor, threshold, instr if instr.estimate is not None else None, without))
    return {**row, "rounds": time.n, "time_per_iter_s": point.time_mean(), "time_ratio": time.estimate,
            **_ends("time", time), "time_verdict": change.time_answer(time, floor, threshold, without).text,
            "decide_with": answer.trials,
            "instructions_per_iter": compare.geo(point, instructions_of), "instr_ratio": instr.estimate,
            **_ends("instr", instr), "verdict": answer.text, "answer": answer.kind, "decided_by": answer.decided_by,
            "init_time_s": compare.geo(point, lambda t: measure(t, "init_time_s")), "init_ratio": init.estimate,
            **_ends("init", init), "init_verdict": change.time_answer(init, None, threshold).text,
            "peak_resident_bytes": compare.geo(point, lambda t: measure(t, "peak_resident_bytes")),
            "mem_ratio": memory.estimate, **_ends("mem", memory), "mem_verdict": compare.memory_answer(memory)}


def ratio(row: dict, name: str) -> str:
    """'0.952 [0.910, 0.980] faster by 4.8% …': a ratio and its answer, as the tables and closing lines show it."""
    verdict = row.get("verdict") if name == "time" else row[f"{name}_verdict"]
    if verdict == REFERENCE:
        return REFERENCE
    return verdict


def deciding_line(rows: list[dict]) -> str:
    """One line, where some answer is undecided: which option would decide it (--trials N, the most its
    undecided answers need by their spread; --instructions, where the run did not count)."""
    undecided = [r for r in rows if r.get("answer") == "undecided"]
    if not undecided:
        return ""
    options = []
    trials = [r["decide_with"] for r in undecided if r.get("decide_with")]
    if trials:
        options.append(f"--trials {max(trials)} (rounds narrow the interval and the floor)")
    if any(r["instr_ratio"] is None for r in undecided):
        options.append("--instructions (counts repeat where time is noisy)")
    if not options:
        return f"{count(len(undecided), 'answer')} undecided, and neither more rounds nor counts decide it here"
    return f"{count(len(undecided), 'answer')} undecided: rerun with " + " or ".join(options) + " to decide"


def point_text(params: dict) -> str:
    """Every parameter of the point, as its notes name it: a grid of one value still says which point ran."""
    return " ".join(f"{k}={param_text(v)}" for k, v in params.items()) or "—"


def _shown(rows: list[dict]) -> pd.DataFrame:
    counted = any(r["instructions_per_iter"] for r in rows)
    return pd.DataFrame([{
        "Engine": r["engine"], "Point": point_text(r["params"]),
        "Version": r["version"], "Rounds": str(r["rounds"]),
        f"Time/iter ({POINT_SHORT})": format_seconds(r["time_per_iter_s"], "n/a"),
        **({"Instr./iter (a proxy)": count_text(r["instructions_per_iter"]),
            "Instr. ×oldest": "—" if r["instr_ratio"] is None else f"{r['instr_ratio']:.4f}"} if counted else {}),
        "Noise floor (A/A)": "not measured" if r["noise_floor"] is None else
        f"×/÷{r['noise_floor']:.3g} (A/A of {r['floor_pair']})",
        ANSWER: r["verdict"], "Decided by": r["decided_by"],
        "Init ×oldest": ratio(r, "init"), "Peak RSS": mib(r["peak_resident_bytes"]),
        "Memory ×oldest": ratio(r, "mem"),
    } for r in rows])


def build(run: Run) -> list[VersionTable]:
    """A table per workload where some engine ran in two environments or more, or beside its A/A copy
    (--aa without --env: the engine in no environment against `<id>@#copy`)."""
    by_workload: dict[str, dict[tuple, dict[str, Point]]] = {}
    ids = {key.engine for key in run_points(run)}
    for key, point in run_points(run).items():
        base, env = split_id(key.engine)
        if env or f"{base}@{AA_COPY}" in ids:
            by_workload.setdefault(key.workload, {}).setdefault((base, key.params), {})[env] = point
    listed = run.manifest.get("unavailable")  # a damaged manifest may hold anything here
    unavailable = {eid: why for eid, why in listed.items() if split_id(str(eid))[1]} if isinstance(listed, dict) else {}
    revisions = revisions_of(run.manifest, tuple(run.plan.envs))
    names = {text: name for text, (_, name) in revisions.items()}
    tables, threshold = [], run.plan.change or change.ASKED_CHANGE
    for workload, engines in by_workload.items():
        rows, notes = [], []
        for (engine, params), points in sorted(engines.items()):
            floors, lines = aa_floors(points)
            without = change.no_floor(any(env.endswith(AA_COPY) for env in points))
            named = json.loads(params)
            at = f" {point_text(named)}" if named else ""
            notes += [f"{engine}{at}: {line}" for line in lines]
            versions = {env: p for env, p in points.items() if not env.endswith(AA_COPY)}
            # An A/A run: each copy against its original. The pair does not differ by construction: its
            # interval is the floor this run measured, and a verdict never reads faster or slower (a
            # systematic gap in one run, e.g. 0.95 [0.91, 0.98], widens the floor to cover it).
            if len(versions) < 2:
                rows += [row for env in versions if env + AA_COPY in points
                         for row in (_row(engine, params, env, points[env], points[env], floors.get(env), without,
                                          threshold, names),
                                     _row(engine, params, env + AA_COPY, points[env + AA_COPY], points[env],
                                          floors.get(env), without, threshold, names))]
                continue
            ordered = sorted(versions.items(), key=lambda item: revisions[item[0]][0] if item[0] in revisions
                             else _version_key(version_of(item[1], item[0])))
            oldest_env, oldest = ordered[0]
            rows += [_row(engine, params, env, point, oldest, change.wider(floors.get(oldest_env), floors.get(env)),
                          without, threshold, names) for env, point in ordered]
        if not rows:
            continue
        # Instructions counted on another build than the one timed (valgrind cannot run AVX-512) say so.
        counted_as = sorted({str(t["instructions_build"]) for points in engines.values() for p in points.values()
                             for t in p.trials if t.get("instructions_build")})
        notes += [f"instructions per iteration: {label}" for label in counted_as]
        notes += [f"{eid}: unavailable: {why}" for eid, why in sorted(unavailable.items())]
        tables.append(VersionTable(
            f"versions_{workload}", f"{workload}: framework versions",
            "Each version against the oldest of its engine, paired by round (every version ran once per round, "
            f"in a random order): time per iteration as the {POINT_STATISTIC}, the ratio B/A "
            "with its 95% interval (a t interval on the per-round log ratios); instructions per iteration under "
            "valgrind (a proxy, beside time); the noise floor an A/A pair measured, as a factor, and the "
            "pair it came from (the wider of the two versions' pairs). The answer, the same in compare and the "
            "run's closing lines (harness/analysis/effect.py): faster or slower where the whole interval lies "
            "beyond the floor; the same where it lies within a floor narrower than the change asked about "
            f"({threshold:.0%}; run or compare --change PCT asks about another); else undecided, with what would decide it (an interval that "
            "reaches 0 or ∞ decides nothing). An answer without a floor (--no-aa) says so. 'Decided by' "
            "names the measure.",
            workload, FIELDS, rows, _shown(rows), notes, "; ".join(counted_as)))
    return tables


def figure(table: VersionTable, folder: Path) -> Figure | None:
    """Per point: time per iteration per version (bars from zero), instructions likewise where
    counted, and the ratio to the oldest with its interval and the noise floor."""
    groups: dict[str, list[dict]] = {}
    for row in table.rows:
        if row["time_per_iter_s"]:
            point = " ".join(f"{k}={param_text(v)}" for k, v in row["params"].items())
            groups.setdefault(f"{row['engine']} {point}".strip(), []).append(row)
    if not groups:
        return None
    counted = any(r["instructions_per_iter"] for rows in groups.values() for r in rows)
    panels = 3 if counted else 2
    plt = _pyplot()
    fig, axes = plt.subplots(len(groups), panels, figsize=(4.2 * panels, 3.2 * len(groups)), squeeze=False)
    for line, (label, rows) in zip(axes, sorted(groups.items())):
        names = [tick(r["version"]) for r in rows]
        line[0].bar(names, [r["time_per_iter_s"] * 1e6 for r in rows], color="tab:blue")
        line[0].set_ylabel(f"time per iteration (µs, {POINT_SHORT})")
        line[0].set_ylim(bottom=0)
        for ax in line[:-1]:
            ax.tick_params(axis="x", labelsize=8)
        if counted:
            line[1].bar(names, [r["instructions_per_iter"] or 0 for r in rows], color="tab:gray")
            line[1].set_ylabel("instructions per iteration (a proxy)" + ("\n" + table.counted_as.split(";")[0]
                                                                          if table.counted_as else ""), fontsize=7)
            line[1].set_ylim(bottom=0)
        _ratio_panel(line[-1], rows)
        line[0].set_title(label, fontsize=8)
    fig.suptitle(f"{table.title}", fontsize=10)
    fig.tight_layout()
    return _save(fig, folder, f"fig_{table.name}", f"{table.title}: time per iteration, instructions and "
                                                   f"ratio to the oldest version, with the noise floor")


def tick(version: str) -> str:
    """A version's name on a figure's axis, wrapped: a revision's is its hash and subject line."""
    return textwrap.fill(version, 20)


def _ratio_panel(ax, rows: list[dict]) -> None:
    """Each version's time ratio to the oldest, with its 95% interval, beside the ±floor band."""
    xs = range(len(rows))
    for x, r in zip(xs, rows):
        if r["check_ok"] is False or r.get("answer") == "failed":  # a wrong program's ratio is no answer
            continue
        low, high = r["time_ci_low"], r["time_ci_high"]
        err = [[r["time_ratio"] - low], [high - r["time_ratio"]]] if low is not None else None
        ax.errorbar([x], [r["time_ratio"]], yerr=err, fmt="o", color="tab:blue", capsize=4)
    counted = [(x, r["instr_ratio"]) for x, r in zip(xs, rows) if r["instr_ratio"] is not None]
    if counted:
        ax.plot(*zip(*counted), "x", color="tab:gray", label="instructions ×oldest (a proxy)")
    # Each answer's own floor (the wider of its two versions' pairs), as the table holds it to; the oldest
    # is no answer and has none.
    held = [(x, r["noise_floor"]) for x, r in zip(xs, rows)
            if r["noise_floor"] is not None and r["verdict"] != REFERENCE]
    factors = sorted({f for _, f in held})
    for k, (x, floor) in enumerate(held):
        ax.fill_between([x - 0.4, x + 0.4], 1 / floor, floor, color="tab:gray", alpha=0.2, linewidth=0,
                        label=None if k else "noise floor " + (f"×/÷{factors[0]:.3g}" if len(factors) == 1
                                                               else "held to (each version's)"))
    if counted or held:
        ax.legend(fontsize=7)
    ax.set_xlim(-0.5, len(rows) - 0.5)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs), [tick(r["version"]) for r in rows], fontsize=8)
    ax.set_ylabel("×oldest (time: 95% interval)")
