"""The paper's own numbers (paper_results.csv, copied from the paper's tables) and how our engines map to its rows.

The CSV has one row per printed cell: table, os, workload, framework, version, mode, language,
device, batch, hidden_dim, params, metric, value, std, unit, note.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from engines import all_engines

OS_NAMES = {"windows": "Windows", "linux": "Linux", "macos": "macOS"}

_FRAMEWORK_NAMES = {
    "burtorch": "BurTorch", "pytorch": "PyTorch", "libtorch": "LibTorch", "tensorflow": "TensorFlow",
    "tflite": "TF Lite", "jax": "JAX", "autograd": "Autograd", "micrograd": "Micrograd",
    "mlx": "Apple MLX", "theory": "In theory (registers only)",
}
_LANGUAGE_NAMES = {
    "cpp": "C++", "python": "Python", "semi_python": "Semi-Python", "torchscript": "TorchScript",
    "tflite_interpreter": "TF Lite Interpreter",
}


@dataclass(frozen=True)
class PaperRow:
    """One printed row of a paper table: its cells by metric name."""
    table: str
    os: str
    workload: str
    key: tuple  # (framework, mode, language, device)
    version: str
    batch: int | None
    hidden_dim: int | None
    params: int | None
    values: dict  # metric -> value
    stds: dict  # metric -> std (only where printed)
    # A second way the paper ran the same framework (Table 4: "PyTorch -> NumPy -> Bytes").
    variant: str | None = None

    @property
    def engine(self) -> str | None:
        return next(iter(self.engines), None)

    @property
    def engines(self) -> tuple[str, ...]:
        """Our engines that stand for this row (ours and the authors' code for BurTorch's)."""
        return engine_of_row().get((self.key, self.variant), ())

    @property
    def label(self) -> str:
        framework, mode, language, device = self.key
        if framework == "theory":
            return _FRAMEWORK_NAMES[framework]
        parts = [_FRAMEWORK_NAMES.get(framework, framework), mode.capitalize(),
                 _LANGUAGE_NAMES.get(language, language), device.upper()]
        label = ", ".join(p for p in parts if p)
        return f"{label} ({self.variant})" if self.variant else label


@lru_cache(maxsize=1)
def engine_of_row() -> dict[tuple, tuple[str, ...]]:
    """(paper row key, variant) -> our engine ids, from the engines' own declarations (EngineSpec.paper_row)."""

    rows: dict[tuple, tuple[str, ...]] = {}
    for spec in all_engines().values():
        if spec.paper_row:
            key = (spec.paper_row, spec.paper_variant)
            rows[key] = (*rows.get(key, ()), spec.id)
    return rows


def _int_or_none(text: str) -> int | None:
    return int(float(text)) if text.strip() else None


@lru_cache(maxsize=1)
def load_rows() -> tuple[PaperRow, ...]:
    """Every paper row, cells grouped, in the order the paper prints them."""
    text = resources.files("harness.analysis").joinpath("paper_results.csv").read_text(encoding="utf-8")
    grouped: dict[tuple, dict] = {}
    for cell in csv.DictReader(io.StringIO(text)):
        row_key = (cell["table"], cell["os"], cell["workload"], cell["framework"], cell["mode"],
                   cell["language"], cell["device"], cell["batch"], cell["hidden_dim"], cell["params"],
                   _printed_row_number(cell["note"]))
        row = grouped.setdefault(row_key, {"cell": cell, "values": {}, "stds": {}})
        row["values"][cell["metric"]] = float(cell["value"])
        if cell["std"].strip():
            row["stds"][cell["metric"]] = float(cell["std"])
        if not row["cell"]["version"]:  # the version is printed on some cells of a row only
            row["cell"] = cell
    return tuple(_paper_row(row_key, row) for row_key, row in grouped.items())


def _printed_row_number(note: str) -> str | None:
    """Table 4 prints two PyTorch eager rows; the note's 'row N' tells them apart."""
    match = re.match(r"row (\d+)", note)
    return match.group(1) if match else None


def _paper_row(row_key: tuple, row: dict) -> PaperRow:
    table, os_name, workload, framework, mode, language, device = row_key[:7]
    cell = row["cell"]
    variant = re.search(r"serialization path ([^;]+)", cell["note"])
    return PaperRow(
        table=table, os=os_name, workload=workload, key=(framework, mode, language, device),
        version=cell["version"], batch=_int_or_none(cell["batch"]), hidden_dim=_int_or_none(cell["hidden_dim"]),
        params=_int_or_none(cell["params"]), values=row["values"], stds=row["stds"],
        variant=variant.group(1).strip() if variant else None,
    )


def rows_for(csv_workload: str, os_name: str) -> list[PaperRow]:
    """The paper's rows for a workload (by its CSV name) on an OS; Windows' when the paper ran it there only."""
    by_os = {}
    for row in load_rows():
        if row.workload == csv_workload:
            by_os.setdefault(row.os, []).append(row)
    return by_os.get(os_name) or by_os.get("windows") or []


def first_table(csv_workload: str) -> float:
    """The number of the first paper table that reports a workload, on any OS: the report's order."""
    numbers = [int(m.group(1)) for row in load_rows() if row.workload == csv_workload
               for m in [re.search(r"(\d+)", row.table)] if m]
    return min(numbers, default=float("inf"))


def table_names(rows: list[PaperRow]) -> str:
    """'Table 12' or 'Table 12, Table 13': the tables a selection of rows comes from."""
    return ", ".join(dict.fromkeys(row.table for row in rows))
