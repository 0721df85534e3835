"""The record layer (harness/records/), on the issue's own cases: a file burtbench wrote, read back damaged, never
reaches a number. A damaged cache is one warning naming file and field, then measured again; a damaged field of a
run's record is dropped with one line naming file and field; a record of a newer schema is refused in one line."""
from __future__ import annotations

import json

import pytest

from harness.machine import bandwidth, ceiling, roofs
from harness.store import results
from harness.store.results import ManifestDamaged, read_manifest, read_trials
from workloads import load

RATES = {"read": [2e11, 1e11, 5e10, 1e10], "rmw": [1e11, 5e10, 2e10, 5e9]}


@pytest.fixture
def probes(monkeypatch):
    """The bandwidth probe faked (no core is probed): its calls counted."""
    calls = []

    def probe(sizes, cpu, driver=None):
        calls.append(cpu)
        return {k: v[: len(sizes)] for k, v in RATES.items()}, f"burtorch-bench --bandwidth on core {cpu}"

    monkeypatch.setattr(bandwidth, "probe", probe)
    return calls


def test_a_bandwidth_cache_with_negative_rates_is_said_once_and_measured_again(tmp_path, probes, capsys):
    cache = tmp_path / "bandwidth.json"
    first = bandwidth.measure(1, tmp_path, cache)
    assert len(probes) == 1 and bandwidth.measure(1, tmp_path, cache) == first and len(probes) == 1, "cached"
    kept = json.loads(cache.read_text())
    (entry,) = kept["models"][next(iter(kept["models"]))].values()
    assert (entry["cpu"], entry["busy"]) == (1, 0.0) and entry["measured_at"], "its provenance is kept"
    entry["read"][0] = -1e9  # read back as "L1 read -1 GB/s" in a figure's legend, before
    cache.write_text(json.dumps(kept))
    capsys.readouterr()
    again = bandwidth.measure(1, tmp_path, cache)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cache) in err[0] and ".read.0" in err[0] and "measured again" in err[0]
    assert len(probes) == 2 and all(lv["read_bytes_per_s"] > 0 for lv in again["levels"])


def test_a_bandwidth_cache_of_another_shape_or_an_older_schema_is_measured_again(tmp_path, probes, capsys):
    cache = tmp_path / "bandwidth.json"
    for text in ('["not", "a", "cache"]', '{"AMD EPYC": {"L1=1": {"read": [1], "rmw": [1]}}}', '{"schema": 9}', "{"):
        cache.write_text(text)
        assert bandwidth.measure(1, tmp_path, cache)["levels"] is not None
        assert str(cache) in capsys.readouterr().err
    assert len(probes) == 4


def test_the_library_ceiling_cache_refuses_negative_times_so_no_share_is_negative(tmp_path, monkeypatch):
    monkeypatch.setattr(ceiling, "time_library", lambda name, code, shapes, cpu, python=None: ("lib 1", [1e-3] * len(shapes)))
    monkeypatch.setattr(ceiling, "time_ours", lambda shapes, cpu: (None, "not timed"))
    monkeypatch.setattr(ceiling, "_installed", lambda name: "1")
    cache, point = tmp_path / "ceiling.json", [(load("mlp"), {"hidden_dim": 64, "batch": 8})]
    ceiling.measure(point, 1, {"lib": ""}, cache)
    kept = json.loads(cache.read_text())
    times = next(iter(next(iter(kept["models"].values())).values()))["lib"]["seconds"]
    times[next(iter(times))] = -0.5  # "Share of library SGEMM -650%" before
    cache.write_text(json.dumps(kept))
    said = []
    monkeypatch.setattr("harness.records.base._stderr", said.append)
    (row,) = ceiling.measure(point, 1, {"lib": ""}, cache)
    assert len(said) == 1 and str(cache) in said[0] and row["gflops"] > 0


def manifest_with(tmp_path, **fields):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / results.MANIFEST_FILE).write_text(json.dumps({"schema": 1, "run_id": "run", "status": "complete",
                                                         "plan": None, **fields}))
    return run


def test_a_damaged_roof_in_a_manifest_is_dropped_with_one_line_and_gives_no_bound(tmp_path):
    levels = [{"level": "L1", "size_bytes": 1 << 15, "working_set_bytes": 1 << 14, "read_bytes_per_s": "fast",
               "rmw_bytes_per_s": 1e11}, {"level": "DRAM", "working_set_bytes": 1 << 26,  # its size missing
                                          "read_bytes_per_s": 1e10, "rmw_bytes_per_s": 5e9}]
    run = manifest_with(tmp_path, native={"peak_gflops_fp32": -100.0, "bandwidth": {"levels": levels}})
    said = []
    native = read_manifest(run, said.append)["native"]
    assert len(said) == 2 and all(m.startswith(f"{run / results.MANIFEST_FILE}: dropping the field native.")
                                  for m in said), said
    assert native["peak_gflops_fp32"] is None and native["bandwidth"]["levels"] is None
    assert roofs.roofs(native)[0] is None, "no bound from a damaged roof (was a TypeError, or a negative share)"


def test_a_manifest_of_a_newer_schema_is_refused_in_one_line_saying_what_to_do(tmp_path):
    with pytest.raises(ManifestDamaged, match="newer burtbench .*upgrade burtbench"):
        read_manifest(manifest_with(tmp_path, schema=99))


def test_a_trial_whose_added_flag_is_text_is_skipped_not_read_as_planned(tmp_path):
    run = manifest_with(tmp_path)
    line = {"engine": "e", "workload": "w", "params": {}, "trial": 0, "status": "ok", "loop_time_s": 0.1}
    (run / results.TRIALS_FILE).write_text(json.dumps(line) + "\n" + json.dumps({**line, "trial": 1, "added": "yes"})
                                           + "\n" + json.dumps({**line, "trial": 2, "loop_time_s": "NaN"}) + "\n")
    said = []
    trials = read_trials(run, said.append)
    assert [t["trial"] for t in trials] == [0, 2] and trials[1]["loop_time_s"] is None
    assert len(said) == 2 and ":2: ignoring a damaged trial line (added" in said[0]
    assert ":3: dropping the field loop_time_s" in said[1]
