"""How a report table's raw values are shown: numbers, spreads, relative factors, checks."""
from __future__ import annotations

from functools import lru_cache

from engines import all_engines
from harness.analysis.points import number as finite
from harness.analysis.metrics import Metric
from harness.store.results import params_key


def number(value: float | None) -> str:
    """Three significant digits; whole numbers with thousands separators from 100 up."""
    if finite(value) is None:  # NaN or an infinity (a ratio to a missing value) is no number to show
        return "n/a"
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:#.3g}"


def spread(value: float) -> str:
    """A standard deviation: two significant digits are all it carries."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2g}"


def factor(value: float | None) -> str:
    if finite(value) is None:
        return ""
    if value >= 1e7:  # past ten million the digits are noise: an interval over two runs reaches 1e38
        return f"×{value:.2e}"
    return f"×{value:,.0f}" if value >= 100 else f"×{value:.3g}"


def value_cell(value, std, rel, scale: float) -> str:
    if finite(value) is None:
        return "n/a"
    text = number(value * scale)
    if finite(std) is not None:
        text += f" ± {spread(std * scale)}"
    if rel is not None:
        text += f" ({factor(rel)})"
    return text


def ours(metric: Metric, row: dict) -> str:
    if not row["in_run"]:
        return row["absent"]
    text = value_cell(row[metric.key], row[f"{metric.key}_std"], row[f"rel_{metric.key}"], metric.scale)
    if metric.kind and row[metric.key] is not None and row.get(f"{metric.key}_kind"):
        text += f" ({row[f'{metric.key}_kind']})"
    estimate = metric.source_field == "cpu_clocks_source" and any("estimate" in n for n in row["notes"])
    return f"≈{text}" if estimate and row[metric.key] is not None else text


def theirs(metric: Metric, row: dict) -> str:
    if row["paper_row"] is None or row[f"paper_{metric.key}"] is None:
        return "—"
    return value_cell(row[f"paper_{metric.key}"], row[f"paper_{metric.key}_std"], row[f"paper_rel_{metric.key}"],
                      metric.scale)


@lru_cache(maxsize=1)
def labels() -> dict[str, str]:
    return {eid: spec.label for eid, spec in all_engines().items() if spec.label}


def engine(row: dict) -> str:
    """The engine's id, after the name it declares where several engines stand for one paper row."""
    label = labels().get(row["engine"])
    return f"{label}: {row['engine']}" if label else row["engine"]


def version(row: dict) -> str:
    return f"{row['version'] or '—'} / {row['paper_version'] or '—'}"


def check(row: dict) -> str:
    if not row["in_run"]:
        return ""
    if row["check_ok"] is None:
        return row.get("check_status") or "—"
    if row["check_ok"]:
        return "✓"
    return "✗ FAILED" if row["max_rel_err"] is None else f"✗ FAILED ({row['max_rel_err']:.1e})"


def trials(row: dict) -> str:
    return f"{row['trials_ok']}/{row['trials']}" if row["in_run"] else ""


def param_count(row: dict) -> str:
    return f"{row['param_count']:,}" if row["param_count"] else "n/a"


def raw(value) -> str:
    """A raw value for the CSV: JSON for a point, notes joined, floats exact."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return params_key(value)
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)
