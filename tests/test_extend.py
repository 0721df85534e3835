"""Extending burtbench as docs/architecture.md says: a workload is one module, an engine is one module.

The toy workload and the dual-number engine live in tests/plugins/ only, registered through
BURTBENCH_WORKLOAD_MODULES and BURTBENCH_ENGINE_MODULES; nothing else in the tree names them.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"


@pytest.fixture
def plugins(monkeypatch):
    monkeypatch.setenv("BURTBENCH_WORKLOAD_MODULES", "toy")
    monkeypatch.setenv("BURTBENCH_ENGINE_MODULES", "dual_engine")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGINS), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(PLUGINS))


def burtbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.commands.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_nothing_in_the_tree_names_the_plugins():
    names = ("toy", "dual_engine", "Dual")
    for folder in ("harness", "engines", "workloads"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert not any(f'"{name}"' in text or f"'{name}'" in text for name in names), path


def test_a_plugin_workload_runs_on_every_python_graph_engine_and_gets_its_table_and_figure(plugins, tmp_path):
    listed = burtbench("list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout and "dual/forward/python/cpu" in listed.stdout
    run = burtbench("run", "--workload", "toy", "--engine", "dual,micrograd,autograd", "--profile", "smoke",
                    "--out", str(tmp_path / "results"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    (run_dir,) = (tmp_path / "results").iterdir()
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    # It reports memory (peak_resident): the harness's floor row joins.
    assert {t["engine"] for t in trials} == {"dual/forward/python/cpu", "micrograd/eager/python/cpu",
                                             "autograd/eager/python/cpu", "none/empty/python/cpu"}
    computed = [t for t in trials if t["engine"] != "none/empty/python/cpu"]
    assert all(t["status"] == "ok" and t["check"]["ok"] for t in computed), [t.get("check") for t in trials]
    report = burtbench("report", str(run_dir), "--report-dir", str(tmp_path / "reports"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    folder = tmp_path / "reports" / run_dir.name
    table = (folder / "tables" / "toy.md").read_text(encoding="utf-8")
    assert "## Toy graph: time per iteration" in table
    assert len(re.findall(r"\|\s*✓\s*\|", table)) == 3
    assert (folder / "figures" / "fig_toy_time.png").stat().st_size > 10_000
    assert "table-toy" in (folder / "index.html").read_text(encoding="utf-8")
