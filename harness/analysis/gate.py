"""`burtbench compare --fail-if-slower PCT`: the regression gate over a comparison (compare.py's result).

It fails (exit 1) on a row slower by more than PCT over its whole interval (beyond the A/A floor
where the run measured one), and on a row it cannot judge (no interval: fewer than 3 trials a side);
it never judges the harness's floor row, and refuses runs of two CPU models unless asked.
"""
from __future__ import annotations

from engines.none import FLOOR
from harness.analysis import change, effect
from harness.errors import UsageError


def gated(result: dict) -> list[dict]:
    """The rows a gate judges: every engine's, never the harness's floor row (an empty step, no framework)."""
    return [row for row in result["rows"] if row["engine"] != FLOOR]


def regressions(result: dict, fail_if_slower_pct: float) -> list[dict]:
    """Rows slower over their whole interval (beyond the floor, where one was measured) by more than PCT."""
    limit = 1 + fail_if_slower_pct / 100
    return [row for row in gated(result)
            if row["answer"] == "slower" and row["decided_by"] == "time" and row["time_ratio"] > limit]


def unjudged(result: dict) -> list[dict]:
    """Rows a gate cannot judge: no interval (fewer than 3 trials a side), or a side whose check failed (a wrong
    program's time answers nothing, and a gate that passed it would pass a broken build)."""
    return [row for row in gated(result) if row["answer"] == "failed"
            or (row["time_ratio"] is not None and row["time_ci"] is None)]


def regression_lines(result: dict, fail_if_slower_pct: float) -> list[str]:
    """Why --fail-if-slower fails: one line per regressed row, and one for the rows it cannot judge."""
    lines = [f"slower by more than {fail_if_slower_pct:g}%: {row['workload']} {row['engine']} "
             f"{_params(row['params'])}{row['answer_text']}" for row in regressions(result, fail_if_slower_pct)]
    blind = unjudged(result)
    wrong = [row for row in blind if row["answer"] == "failed"]
    lines += [f"cannot judge {row['workload']} {row['engine']} {_params(row['params'])}{row['answer_text']}"
              for row in wrong]
    if len(blind) > len(wrong):
        lines.append(f"cannot judge {len(blind) - len(wrong)} of {len(gated(result))} rows: fewer than "
                     f"{effect.MIN_TRIALS} trials a side give no interval (rerun with --trials {effect.MIN_TRIALS} or more)")
    return lines


def check_gate(result: dict, allow_mixed: bool) -> None:
    """A gate across two CPU models compares the machines, not the code: refused unless asked for."""
    if result["mixed_cpu"] and not allow_mixed:
        raise UsageError("--fail-if-slower: the runs are of different CPU models ("
                         f"{_value_text(result, 'run_a')} and {_value_text(result, 'run_b')}); gate runs of one "
                         "machine, or pass --allow-mixed")


def _value_text(result: dict, side: str) -> str:
    return str(result[side].get("cpu_model"))


def _params(params: dict) -> str:
    return "".join(f"{k}={v} " for k, v in params.items())


def instruction_regressions(result: dict, fail_if_more_pct: float) -> list[str]:
    """Why --fail-if-more-instructions fails: one line per row of RUN_B that counts more instructions per
    iteration than RUN_A beyond their repeat spread and by more than PCT, or that has no count to gate on."""
    limit = max(1 + fail_if_more_pct / 100, 1 + change.INSTRUCTIONS_TOLERANCE)
    lines = []
    for row in gated(result):
        where = f"{row['workload']} {row['engine']} {_params(row['params'])}"
        if row["instr_ratio"] is None:
            lines.append(f"no instruction count to gate on: {where}(run both with --instructions)")
        elif row["instr_ratio"] > limit and (row["instr_ci"] is None or row["instr_ci"][0] > 1):
            lines.append(f"more instructions by more than {fail_if_more_pct:g}%: {where}B/A {row['instr_ratio']:.4f}")
    return lines


def exit_status(result: dict, fail_if_slower_pct: float | None) -> int:
    """0, or 1 when --fail-if-slower PCT is given and some row regressed by more, or cannot be judged."""
    if fail_if_slower_pct is None:
        return 0
    return 1 if regressions(result, fail_if_slower_pct) or unjudged(result) else 0
