"""Every terminal table is read at 120 columns: each engine is told apart (its distinguishing part is
never cut), empty columns are dropped, and piped output is not cut at all."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness.analysis.labels import short_ids
from harness.analysis.summary import summary_table

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 120


def rendered(renderable, width: int = WIDTH) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def trial(engine: str, workload: str, seconds: float, index: int = 0, params: dict | None = None) -> dict:
    return {"engine": engine, "workload": workload, "params": params or {}, "trial": index, "status": "ok",
            "per_iter_s": {"mean": seconds * (1 + 0.01 * index)}, "check": {"ok": True},
            "peak_resident_bytes": 40 << 20}


def cells(text: str, column: int) -> list[str]:
    """The text of a column of a rich table, each row's lines joined (a folded id is read whole)."""
    rows, current = [], None
    for line in text.splitlines():
        if "┃" in line:  # the header
            continue
        parts = re.split(r"│", line)
        if len(parts) < column + 2:
            if current is not None:
                rows.append(current)
                current = None
            continue
        cell = parts[column + 1].strip()
        # A row begins with its workload's name; the lines below carry its point, one parameter a line.
        first = (parts[1].strip() != "" and "=" not in parts[1]) or current is None
        if first:
            if current is not None:
                rows.append(current)
            current = cell
        else:
            current += cell
    if current is not None:
        rows.append(current)
    return rows


SMOKE = ["burtorch/eager/cpp/cpu", "burtorch/eager/python/cpu", "burtorch-authors/eager/cpp/cpu",
         "torch/eager/python/cpu", "torch/torchscript/python/cpu", "torch/compile/python/cpu"]
VERSIONS = ["autograd/eager/python/cpu@autograd==1.7.0", "autograd/eager/python/cpu@autograd==1.9.1"]


AA = [f"{e}#copy" for e in VERSIONS] + VERSIONS


@pytest.mark.parametrize("engines,workloads,counted", [
    (SMOKE, ["tiny", "mlp"], False),
    (VERSIONS, ["tiny"], False),
    (VERSIONS + ["none/empty/python/cpu"], ["small"], False),
    (AA + ["none/empty/python/cpu"], ["tiny", "small"], True),
], ids=["burtorch-torch", "versions", "versions-with-floor", "aa-instructions"])
def test_the_run_summary_tells_every_engine_apart_at_120_columns(engines, workloads, counted):
    params = {"mlp": {"hidden_dim": 4, "batch": 1}}
    trials = [trial(e, w, 1e-5 * (k + 1) * (1 + 0.1 * t), t, params.get(w)) for k, e in enumerate(engines)
              for w in workloads for t in range(2)]
    for t in trials:
        t["instructions_per_iter"] = 1.959e6 if counted else None
        t["check"] = {"ok": None, "status": "not comparable"} if t["engine"].startswith("none") else t["check"]
    text = rendered(summary_table(trials))
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    # Every line of the table ends at its right border: rich crops what passes the terminal's edge.
    assert all(len(line) <= WIDTH and line[-1] in "┓┃┩│┘" for line in table), text
    assert "peak RSS" in text and "…" not in text
    labels, legend = short_ids(engines)
    shown = set(cells(text, 1)) - {"engine"}
    assert shown == set(labels.values()) and len(shown) == len(engines)  # one label per engine, each whole
    if legend:
        assert legend in " ".join(text.split())
    if any("@" in e for e in engines):
        assert {"autograd==1.7.0", "autograd==1.9.1"} <= {label.split("@")[-1] for label in shown}
    assert "×micrograd" not in text  # no micrograd row: an empty column


def test_short_ids_keep_what_differs():
    labels, legend = short_ids(["burtorch/eager/cpp/cpu", "burtorch/eager/python/cpu"])
    assert labels == {"burtorch/eager/cpp/cpu": "cpp", "burtorch/eager/python/cpu": "python"}
    assert legend == "engines: framework burtorch, mode eager, device cpu (every row)"
    labels, _ = short_ids(VERSIONS)
    assert [labels[e] for e in VERSIONS] == ["autograd==1.7.0", "autograd==1.9.1"]


def test_list_shows_every_engine_id_whole_at_120_columns():
    from engines import all_engines
    from harness.commands import info

    console = Console(file=io.StringIO(), width=WIDTH, force_terminal=False, color_system=None)
    assert info.cmd_list(None, console) == 0
    text = console.file.getvalue()
    assert max(map(len, text.splitlines())) <= WIDTH
    assert set(all_engines()) <= set(cells(text, 0))


def test_envs_table_folds_long_specs(tmp_path):
    import json

    from harness.envs import cache

    spec = "jax==0.4.38,jaxlib==0.4.38,numpy==1.26.4,scipy==1.13.1,ml_dtypes==0.4.0,opt_einsum==3.3.0,x==1"
    folder = tmp_path / "envs" / ("a" * 70)
    folder.mkdir(parents=True)
    (folder / cache.RECORD).write_text(json.dumps({"spec": spec, "python_version": "3.11.7"}))
    console = Console(file=io.StringIO(), width=WIDTH, force_terminal=False, color_system=None)
    cache.show(tmp_path / "envs", None, console)
    text = console.file.getvalue()
    assert max(map(len, text.splitlines())) <= WIDTH and "…" not in text
    assert spec in "".join(cells(text, 0))


def test_an_empty_envs_gives_a_hint(tmp_path):
    from harness.envs import cache

    console = Console(file=io.StringIO(), width=WIDTH, force_terminal=False, color_system=None)
    cache.show(tmp_path, None, console)
    assert "burtbench run --env SPEC" in console.file.getvalue()


def test_piped_output_is_not_cut(tmp_path):
    """Not a terminal: the table fits the width it is told (COLUMNS), and nothing is cut: an engine's id
    is whole on its line and its unavailable reason wraps whole beside it."""
    from engines import all_engines

    done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "list"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "80",
                                                       "BURTBENCH_UPSTREAM": str(tmp_path / "absent")})
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and max(map(len, done.stdout.splitlines())) <= 80
    assert set(all_engines()) <= set(cells(done.stdout, 0))
    assert str(tmp_path / "absent") in "".join(cells(done.stdout, 2)).replace(" ", "")
