"""Golden tests of `burtbench report` on small synthetic runs written here.

The Linux run has: tiny (BurTorch, PyTorch eager, a JAX jit row whose check failed, torch.compile
which the paper lacks, micrograd with one timed-out trial), small (estimated CPU clocks, no private
memory reading), MLP (two hidden sizes, two batches), GPT (two batches) and energy trials without
energy readings. The Windows run has tiny and energy with readings.
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from tests_support import chromium

from harness.analysis import metrics
from harness.analysis.noise import PLAIN
from harness.report.render import render
from harness.analysis.tables import build_tables
from harness.store.results import MANIFEST_FILE, Trial, append_trial
from harness.store.runs import load_run
from harness.units import MIB, MIB_LABEL

PAPER_CSV = Path(__file__).resolve().parents[1] / "harness" / "analysis" / "paper_results.csv"
MB = 2**20


def make_trial(engine: str, workload: str, params: dict, trial: int, per_iter: float | None, *,
               iterations: int = 1000, status: str = "ok", check_ok: bool = True, **measures) -> Trial:
    framework, mode, language, device = engine.split("/")
    extra = measures.pop("extra", {})
    timed = {}
    if per_iter is not None:
        samples = [per_iter * (1 + 0.01 * ((k % 5) - 2)) for k in range(10)]
        timed = {"loop_time_s": per_iter * iterations, "samples_s": samples,
                 "per_iter_s": {"mean": per_iter, "std": per_iter * 0.014, "min": min(samples),
                                "median": per_iter, "n": len(samples)}}
    check = None
    if status == "ok":
        check = {"ok": check_ok, "max_rel_err": 0.0 if check_ok else 3.2e-4, "expected": {}, "got": {}}
    return Trial(engine=engine, framework=framework, mode=mode, language=language, device=device,
                 workload=workload, params=params, trial=trial, status=status, check=check,
                 reason=None if status == "ok" else f"{status} after 300 s", iterations=iterations,
                 framework_version={"torch": "2.13.0", "burtorch": "0.1.0"}.get(framework),
                 extra=extra, **timed, **measures)


def write_run(folder: Path, os_text: str, trials: list[Trial], **manifest) -> Path:
    folder.mkdir(parents=True)
    data = {"run_id": folder.name, "status": "complete", "profile": "quick", "argv": ["burtbench", "run"],
            "machine": {"cpu_model": "Synthetic CPU 9000", "os": os_text, "governor": "performance",
                        "memory_total_bytes": 8 * 2**30, "turbo": None, "turbo_source": "no boost file in sysfs"},
            "python": {"executable": "/usr/bin/python3", "runner_version": "3.11.2"},
            "frameworks": {"torch": "2.13.0", "tensorflow": None},
            "doctor": [{"level": "warning", "topic": "turbo", "message": "turbo boost is on", "fix": "turn it off"}],
            "engines": sorted({t.engine for t in trials} | {"tensorflow/eager/python/cpu", "libtorch/eager/cpp/cpu"}),
            "unavailable": {"libtorch/eager/cpp/cpu": "executable 'libtorch-bench' not found"},
            # Judged on its own trials (tests of the machine's noise give one: test_effect, test_coverage).
            "noise": PLAIN.record(), **manifest}
    (folder / MANIFEST_FILE).write_text(json.dumps(data), encoding="utf-8")
    for trial in trials:
        append_trial(folder, trial)
    return folder


JITTER = (1.0, 1.1, 0.9)
GEO_JITTER = (1.0 * 1.1 * 0.9) ** (1 / 3)  # a point's time is the geometric mean of its trials' (points.py)


def graph_trials(workload: str, params: dict, base: float) -> list[Trial]:
    trials = []
    for i, jitter in enumerate(JITTER):
        trials.append(make_trial("burtorch/eager/cpp/cpu", workload, params, i, base * jitter,
                                 cpu_clocks=base * 3e12 * jitter, cpu_clocks_source="tsc_estimate",
                                 peak_resident_bytes=4 * MB, peak_virtual_bytes=10 * MB,
                                 peak_private_source="not sampled (run with --sample-private)"))
        trials.append(make_trial("torch/eager/python/cpu", workload, params, i, base * 1500 * jitter,
                                 cpu_clocks=base * 1500 * 3e12 * jitter, cpu_clocks_source="tsc_estimate",
                                 peak_resident_bytes=300 * MB, peak_virtual_bytes=2000 * MB,
                                 peak_private_source="not sampled (run with --sample-private)"))
    return trials


def linux_trials() -> list[Trial]:
    tiny = {"a": -41.0, "b": 2.0}
    small = {"a": -4.0, "b": 2.0}
    trials = graph_trials("tiny", tiny, 1e-7) + graph_trials("small", small, 4e-7)
    trials += [make_trial("jax/jit/python/cpu", "tiny", tiny, i, 1e-4, check_ok=False) for i in range(3)]
    trials += [make_trial("torch/compile/python/cpu", "tiny", tiny, i, 2e-4) for i in range(3)]
    trials += [make_trial("micrograd/eager/python/cpu", "tiny", tiny, i, 2.5e-5) for i in range(2)]
    trials.append(make_trial("micrograd/eager/python/cpu", "tiny", tiny, 2, None, status="timeout"))
    trials.append(make_trial("tflite/graph/interpreter/cpu", "tiny", tiny, 0, None, status="unavailable"))
    for hidden, d in ((4, 5963), (1024, 1079003)):
        for batch in (1, 64):
            params = {"hidden_dim": hidden, "batch": batch}
            trials.append(make_trial("burtorch/eager/cpp/cpu", "mlp", params, 0, 1e-5 * hidden * batch,
                                     init_time_s=0.02, peak_virtual_bytes=40 * MB, peak_resident_bytes=30 * MB,
                                     extra={"param_count": d}))
            trials.append(make_trial("torch/eager/python/cpu", "mlp", params, 0, 1e-3 + 2e-6 * hidden * batch,
                                     init_time_s=2.0, peak_virtual_bytes=2500 * MB, peak_resident_bytes=300 * MB))
    for batch in (1, 2):
        for engine, step in (("burtorch/eager/cpp/cpu", 5e-4), ("torch/eager/python/cpu", 1.2e-2),
                             ("torch/torchscript/python/cpu", 1.1e-2)):
            trials.append(make_trial(engine, "gpt", {"batch": batch}, 0, step * batch,
                                     peak_virtual_bytes=1300 * MB, peak_resident_bytes=200 * MB))
    trials += [make_trial(e, "energy", {}, 0, 1e-7, wall_time_s=0.5, energy_source="no battery or RAPL on this machine")
               for e in ("burtorch/eager/cpp/cpu", "torch/eager/python/cpu")]
    return trials


def windows_trials() -> list[Trial]:
    trials = graph_trials("tiny", {"a": -41.0, "b": 2.0}, 7e-8)
    for engine, joules in (("burtorch/eager/cpp/cpu", 3.0), ("torch/eager/python/cpu", 1400.0)):
        trials.append(make_trial(engine, "energy", {}, 0, 1e-7, wall_time_s=joules / 20,
                                 energy_total_j=joules, energy_task_j=joules * 0.6, energy_os_j=joules * 0.4,
                                 energy_source="battery"))
    for engine, save_s in (("burtorch/eager/cpp/cpu", 0.5), ("torch/eager/python/cpu", 2.0)):
        trials.append(make_trial(engine, "save_load", {}, 0, None, iterations=5000,
                                 extra={"save_s": save_s, "load_s": save_s / 4, "file_size_bytes": 56}))
    return trials


@pytest.fixture(scope="module")
def linux_report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("linux")
    run_dir = write_run(root / "results" / "2025-01-01T000000-linux", "Debian GNU/Linux 12 (bookworm)", linux_trials())
    return render(run_dir, root / "reports")


@pytest.fixture(scope="module")
def linux_tables(linux_report) -> dict:
    run = load_run(linux_report.parents[1] / "results" / linux_report.name)
    return {t.name: t for t in build_tables(run)}


def rows_by_engine(table, **point) -> dict:
    return {r["engine"]: r for r in table.rows if all(r["params"].get(k) == v for k, v in point.items())}


def table_lines(path: Path) -> list[str]:
    """The Markdown file's lines, table rows with their cells' padding removed."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
            line = "| " + " | ".join(c.strip() for c in cells) + " |"
        lines.append(line)
    return lines


def paper_cells() -> list[dict]:
    with open(PAPER_CSV, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def paper_value(table: str, framework: str, mode: str, metric: str, device: str = "cpu", **point) -> float:
    matches = [c for c in paper_cells() if c["table"] == table and c["framework"] == framework and c["mode"] == mode
               and c["device"] == device and c["metric"] == metric
               and all(c[k] == str(v) for k, v in point.items())]
    assert len(matches) == 1, matches
    return float(matches[0]["value"])


# ----------------------------------------------------------------------------- tables

def test_only_tables_of_workloads_with_trials_are_written(linux_report):
    names = sorted(p.stem for p in (linux_report / "tables").glob("*.md"))
    assert names == ["energy", "gpt", "mlp_b1", "mlp_b64", "small", "tiny"]
    for name in names:
        for ext in ("md", "tex", "csv"):
            assert (linux_report / "tables" / f"{name}.{ext}").stat().st_size > 200


def test_tiny_rows_follow_the_linux_paper_table_then_our_extra_engines(linux_tables):
    engines = [r["engine"] for r in linux_tables["tiny"].rows]
    assert engines == [
        "burtorch/eager/cpp/cpu", "tensorflow/eager/python/cpu", "tensorflow/graph/python/cpu",
        "tflite/graph/interpreter/cpu", "autograd/eager/python/cpu", "torch/eager/python/gpu",
        "torch/eager/python/cpu", "torch/torchscript/python/cpu", "libtorch/eager/cpp/cpu",
        "jax/eager/python/cpu", "jax/jit/python/cpu", "micrograd/eager/python/cpu", "mlx/eager/python/cpu",
        "torch/compile/python/cpu",
    ]
    assert "Table 11 (Linux)" in linux_tables["tiny"].caption


def test_tiny_relative_factors_and_paper_column(linux_tables):
    rows = rows_by_engine(linux_tables["tiny"])
    torch = rows["torch/eager/python/cpu"]
    assert torch["rel_time_per_iter_s"] == pytest.approx(1500)
    assert torch["time_per_iter_s"] == pytest.approx(1.5e-4 * GEO_JITTER)
    assert torch["time_per_iter_s_std"] == pytest.approx(1.5e-5)  # std over the three trials
    assert torch["paper_time_per_iter_s"] * 100_000 == pytest.approx(
        paper_value("Table 11", "pytorch", "eager", "compute_time_s"))
    assert torch["paper_rel_time_per_iter_s"] == paper_value("Table 11", "pytorch", "eager", "relative_to_burtorch")
    assert rows["burtorch/eager/cpp/cpu"]["rel_time_per_iter_s"] == pytest.approx(1.0)
    assert not any("no relative factors" in n for n in linux_tables["tiny"].notes)


def test_tiny_markdown_golden_lines(linux_report):
    lines = table_lines(linux_report / "tables" / "tiny.md")
    text = "\n".join(lines)
    # The noisy note two rows share is written once under the table (HTML escaped), each row refers to it.
    assert ("| torch/eager/python/cpu | 2.13.0 / 2.5.1 | ✓ | 3/3 | 149 ± 15 (×1,500) | 154 ± 0.37 (×1,404) "
            "| see [1] |") in lines
    assert "- [1] noisy: trials vary by 10.0% (coefficient of variation &gt; 5%)" in text
    assert ("| tensorflow/eager/python/cpu | — / 2.18.0 |  |  | not in this run | 1,635 ± 16 (×14,867) "
            "| not in this run |") in lines
    assert ("| torch/compile/python/cpu | 2.13.0 / — | ✓ | 3/3 | 200 ± 0 (×2,007) | — "
            "| no counterpart in the paper |") in lines
    assert "paper = its total over 100,000 iterations / 100,000" in text


def test_paper_column_matches_the_csv_for_every_paper_row(linux_tables):
    for row in linux_tables["tiny"].rows:
        if row["paper_row"] and row["paper_time_per_iter_s"] is not None:
            framework = {"torch": "pytorch"}.get(row["engine"].split("/")[0], row["engine"].split("/")[0])
            cells = [c for c in paper_cells() if c["table"] == "Table 11" and c["metric"] == "compute_time_s"
                     and c["framework"] == framework
                     and (c["device"] == "gpu") == row["engine"].endswith("/gpu")
                     and (c["mode"] == "eager") == ("/eager/" in row["engine"])]
            assert len(cells) == 1, row["engine"]
            assert row["paper_time_per_iter_s"] * 100_000 == pytest.approx(float(cells[0]["value"]))


def test_failed_check_is_marked_not_dropped(linux_tables, linux_report):
    jax = rows_by_engine(linux_tables["tiny"])["jax/jit/python/cpu"]
    assert jax["check_ok"] is False
    assert jax["time_per_iter_s"] == pytest.approx(1e-4)
    assert any("check FAILED in 3 of 3" in n for n in jax["notes"])
    text = "\n".join(table_lines(linux_report / "tables" / "tiny.md"))
    assert "| jax/jit/python/cpu | — / 0.4.30 | ✗ FAILED (3.2e-04) | 3/3 |" in text


def test_engine_missing_from_the_paper_and_failed_trials(linux_tables):
    rows = rows_by_engine(linux_tables["tiny"])
    compiled = rows["torch/compile/python/cpu"]
    assert compiled["paper_row"] is None and compiled["paper_time_per_iter_s"] is None
    assert "no counterpart in the paper" in compiled["notes"]
    assert compiled["rel_time_per_iter_s"] == pytest.approx(2000 / GEO_JITTER)
    micrograd = rows["micrograd/eager/python/cpu"]
    assert (micrograd["trials_ok"], micrograd["trials"]) == (2, 3)
    assert any(n.startswith("1 of 3 trials timeout") for n in micrograd["notes"])
    assert rows["mlx/eager/python/cpu"]["in_run"] is False
    libtorch = rows["libtorch/eager/cpp/cpu"]
    assert libtorch["absent"] == "unavailable"
    assert libtorch["notes"] == ["unavailable on this machine: executable 'libtorch-bench' not found"]
    tflite = rows["tflite/graph/interpreter/cpu"]
    assert tflite["in_run"] and tflite["trials_ok"] == 0 and tflite["time_per_iter_s"] is None
    assert tflite["rel_time_per_iter_s"] is None
    assert any(n.startswith("1 of 1 trial unavailable") for n in tflite["notes"])


def test_small_table_marks_estimates_and_missing_memory(linux_tables, linux_report):
    table = linux_tables["small"]
    assert "Windows only" in " ".join(table.notes)
    torch = rows_by_engine(table)["torch/eager/python/cpu"]
    assert torch["rel_cpu_clocks_per_iter"] == pytest.approx(1500)
    assert torch["peak_private_bytes"] is None
    assert torch["rel_peak_resident_bytes"] == pytest.approx(75)
    assert torch["paper_rel_peak_resident_bytes"] == paper_value(
        "Table 3", "pytorch", "eager", "relative_peak_resident")
    assert any("peak private not measured: not sampled" in n for n in torch["notes"])
    assert any("estimate" in n for n in torch["notes"])
    line = next(li for li in table_lines(linux_report / "tables" / "small.md") if li.startswith("| torch/eager/python/cpu"))
    assert "≈1.8e+06" in line or "≈1,800,000" in line
    assert "| n/a |" in line


def test_mlp_tables_pair_hidden_sizes_and_list_the_rest(linux_tables):
    table = linux_tables["mlp_b64"]
    present = [(r["params"]["hidden_dim"], r["engine"]) for r in table.rows if r["in_run"]]
    assert present == [(4, "torch/eager/python/cpu"), (4, "burtorch/eager/cpp/cpu"),
                       (1024, "torch/eager/python/cpu"), (1024, "burtorch/eager/cpp/cpu")]
    absent = {r["params"]["hidden_dim"] for r in table.rows if not r["in_run"]}
    assert absent == {16, 32, 64, 128, 512}
    torch = rows_by_engine(table, hidden_dim=4)["torch/eager/python/cpu"]
    assert torch["param_count"] == 5963  # taken from the paper when the trial does not say
    assert torch["peak_virtual_bytes"] == 2500 * MB  # Linux: the paper reports VmSize
    assert torch["paper_peak_virtual_bytes"] / MB == pytest.approx(
        paper_value("Table 13", "pytorch", "eager", "peak_mem_mb", batch=64, hidden_dim=4))
    assert torch["paper_init_time_s"] * 1e3 == pytest.approx(
        paper_value("Table 13", "pytorch", "eager", "init_ms", batch=64, hidden_dim=4))
    assert torch["rel_init_time_s"] == pytest.approx(100)


def test_gpt_table_by_batch(linux_tables):
    table = linux_tables["gpt"]
    assert len(table.rows) == 7 * 3  # the paper's seven batch sizes, three engines each
    script = rows_by_engine(table, batch=2)["torch/torchscript/python/cpu"]
    assert script["rel_time_per_step_s"] == pytest.approx(22)
    assert script["paper_time_per_step_s"] * 1e3 == pytest.approx(
        paper_value("Table 14", "pytorch", "graph", "compute_ms_per_iter", batch=2))
    assert not rows_by_engine(table, batch=64)["burtorch/eager/cpp/cpu"]["in_run"]


def test_energy_table_without_readings_says_why(linux_tables):
    burtorch = rows_by_engine(linux_tables["energy"])["burtorch/eager/cpp/cpu"]
    assert burtorch["energy_total_j"] is None
    assert any("no battery or RAPL" in n for n in burtorch["notes"])


def test_csv_keeps_raw_numbers(linux_report):
    with open(linux_report / "tables" / "tiny.csv", encoding="utf-8") as fh:
        rows = {r["engine"]: r for r in csv.DictReader(fh)}
    assert float(rows["torch/eager/python/cpu"]["rel_time_per_iter_s"]) == pytest.approx(1500)
    assert rows["mlx/eager/python/cpu"]["in_run"] == "False"
    assert float(rows["mlx/eager/python/cpu"]["paper_time_per_iter_s"]) == pytest.approx(3.072e-5)


# The units a CSV header may end with (its numbers' unit), and what one of it is in each unit the Markdown shows.
CSV_UNITS = {"flops_per_s": {"GFLOP/s": 1e-9}, "_s": {"s": 1.0, "ms": 1e3, "µs": 1e6},
             "_bytes": {"bytes": 1.0, MIB_LABEL: 1 / MIB}, "_j": {"mWh": 1 / 3.6}, "_fraction": {"%": 100.0},
             "clocks_per_iter": {"clocks": 1.0}, "instructions_per_iter": {"instr.": 1.0}}


def test_every_measure_s_csv_column_names_the_unit_its_numbers_are_in():
    shares = [metrics.peak_share(100.0, "measured"), metrics.library_share([]), metrics.products_share([]),
              metrics.roofline_share(None)]
    for m in [*metrics.METRICS.values(), *metrics.PAPER_MEMORY.values(), metrics.INSTRUCTIONS, *shares]:
        unit = next((u for u in CSV_UNITS if m.key.endswith(u)), None)
        assert unit, f"the CSV's {m.key}: no unit in its name"
        # The Markdown's number is the CSV's times the metric's scale: that is its unit's size in the CSV's.
        assert CSV_UNITS[unit].get(m.unit) == pytest.approx(m.scale), f"the CSV's {m.key} beside {m.unit}"


def test_latex_is_booktabs_and_escaped(linux_report):
    tex = (linux_report / "tables" / "tiny.tex").read_text(encoding="utf-8")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"$\pm$" in tex and r"$\times$" in tex
    body = tex.split(r"\midrule")[1]
    assert "_" not in body.replace(r"\_", "")


# ----------------------------------------------------------------------------- a real browser

def test_index_html_renders_in_chromium_with_every_figure(linux_report, tmp_path):
    url = (linux_report / "index.html").resolve().as_uri()
    dom = chromium(["--dump-dom", url], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The page's script counts decoded images once the page has loaded.
    assert 'data-images-loaded="5/5"' in dom.stdout  # four figures and the claims' forest plot
    shot = tmp_path / "screenshot.png"
    chromium([f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars", url], tmp_path / "profile-shot")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    assert pixels.std() > 0.05  # text and tables drawn, not a blank page


def test_a_noisy_row_is_marked(tmp_path):
    from harness.analysis.points import group

    def trial(index, seconds):
        return {"engine": "micrograd/eager/python/cpu", "workload": "tiny", "params": {}, "trial": index,
                "status": "ok", "per_iter_s": {"mean": seconds}}

    steady = group([trial(0, 1.00), trial(1, 1.01), trial(2, 0.99)])
    shaky = group([trial(0, 1.0), trial(1, 1.3), trial(2, 0.8)])
    assert not any("noisy" in n for s in steady.values() for n in s.notes())
    assert any("noisy" in n for s in shaky.values() for n in s.notes())


def test_counts_in_the_status_notes_are_in_correct_english(tmp_path):
    from harness.report.run import status_notes

    one_wrong = [make_trial("jax/jit/python/cpu", "tiny", {}, 0, 1e-4, check_ok=False),
                 make_trial("torch/eager/python/cpu", "tiny", {}, 0, 1e-4)]
    notes = status_notes(load_run(write_run(tmp_path / "one", "Linux", one_wrong)))
    assert "1 trial computed a wrong result (its check failed; jax/jit/python/cpu on tiny: 1): its row is " \
           "marked and never answers a claim." in notes
