"""The Burn engine's adapter, against a fake cargo: the build (release, --locked; offline from a
vendored folder), its cache per Burn version and flags, a failure remembered with one line, the
engine unavailable without cargo or the crates while the run goes on, and the driver's line read
like every native driver's. tests/test_burn_real.py builds and runs Burn itself."""
from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from engines import all_engines, burn
from harness.commands.cli import main
from harness.errors import EXIT_NOT_ALL_RUN
from harness.store import results

ENGINE = "burn/eager/rust/cpu"

# A cargo that logs its arguments and does what FAKE_CARGO says: "ok" writes a burn-bench (a Python
# script printing the tiny graph's line) into the target folder; "offline" fails as cargo does
# without a way to the registry; "broken" fails to compile.
FAKE_CARGO = """\
#!{python}
import json, os, sys
from pathlib import Path
with open(os.environ["FAKE_CARGO_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
mode = os.environ.get("FAKE_CARGO", "ok")
if mode == "offline":
    print("    Updating crates.io index")
    print("error: failed to get `burn-tensor` as a dependency of package `burn-bench v0.1.0`")
    print("Caused by: download of config.json failed: Could not resolve host: index.crates.io")
    sys.exit(101)
if mode == "broken":
    print("error[E0425]: cannot find value `x` in this scope")
    sys.exit(101)
program = Path(sys.argv[sys.argv.index("--target-dir") + 1]) / "release" / "burn-bench"
program.parent.mkdir(parents=True, exist_ok=True)
program.write_text({driver!r})
program.chmod(0o755)
"""

# What burn-bench prints for the tiny graph (a = -41, b = 2): the outputs as the reference has them.
FAKE_DRIVER = """\
#!{python}
import json, sys
args = sys.argv[1:]
n = int(args[args.index("--iterations") + 1])
a, b = -41.0, 2.0
e = (a + b) - (a * b + b ** 3)
print(json.dumps({{"status": "ok", "outputs": {{"g": e * e / 2, "dg_da": e * (1 - b), "dg_db": e * (1 - a - 3 * b * b)}},
    "precision": "fp64", "iterations": n, "warmup": 0, "loop_time_s": 1e-6 * n, "samples_s": [1e-6],
    "per_iter_s": {{"mean": 1e-6, "std": 0.0, "min": 1e-6, "median": 1e-6, "n": 1}}, "timed_as": "lean",
    "framework_version": "burn 0.20.1 (fake)", "cpu_clocks": None, "instructions": None,
    "cpu_clocks_source": "fake", "loop_cpu_time_s": 0.0, "cpu_time_s": 0.01, "peak_resident_bytes": 1048576,
    "peak_virtual_bytes": 2097152, "peak_private_bytes": None, "peak_resident_source": "fake",
    "peak_virtual_source": "fake", "peak_private_source": "fake"}}))
"""


@pytest.fixture
def builds(tmp_path, monkeypatch):
    """Builds go to a temporary folder; cargo is the fake one, alone on PATH."""
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    monkeypatch.setattr(burn, "BUILD_LOCK", tmp_path / "build" / "burn.lock")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cargo = bin_dir / "cargo"
    driver = FAKE_DRIVER.format(python=sys.executable)
    cargo.write_text(FAKE_CARGO.format(python=sys.executable, driver=driver))
    cargo.chmod(cargo.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CARGO_LOG", str(tmp_path / "cargo.log"))
    monkeypatch.delenv(burn.VENDOR_ENV, raising=False)
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    # Burn's crates in cargo's download cache, as after an earlier build: no registry is asked if it is reachable.
    cached = tmp_path / "cargo-home" / "registry" / "cache" / "index.crates.io-1949cf8c6b5b557f"
    cached.mkdir(parents=True)
    (cached / f"{burn.PINNED_CRATE}-{burn.burn_version()}.crate").write_bytes(b"")
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    return tmp_path / "cargo.log"


def cargo_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def vendor_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "vendor"
    crate = folder / f"burn-tensor-{burn.burn_version()}"
    crate.mkdir(parents=True)
    (crate / ".cargo-checksum.json").write_text('{"files": {}, "package": null}')
    return folder


def test_burn_is_pinned_exactly_on_one_thread():
    deps = tomllib.loads((burn.SOURCE_DIR / "Cargo.toml").read_text())["dependencies"]
    version = burn.burn_version()
    assert version.startswith("0.20.")
    for crate in ("burn-tensor", "burn-ndarray", "burn-autodiff"):
        # One thread: no default features (burn-ndarray's include multi-threads, rayon), none asked for.
        assert deps[crate]["version"] == f"={version}" and deps[crate]["default-features"] is False
        assert "multi-threads" not in deps[crate]["features"]
    assert "rayon" not in deps


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A copy of engines/burn_driver, to give it a Cargo.lock or take it away."""
    copy = tmp_path / "burn_driver"
    (copy / "src").mkdir(parents=True)
    for path in [burn.SOURCE_DIR / "Cargo.toml", *(burn.SOURCE_DIR / "src").glob("*.rs")]:
        (copy / path.relative_to(burn.SOURCE_DIR)).write_bytes(path.read_bytes())
    monkeypatch.setattr(burn, "SOURCE_DIR", copy)
    return copy


def test_the_build_is_release_locked_and_cached_per_version_and_flags(builds, sources, monkeypatch):
    (sources / "Cargo.lock").write_text("version = 4\n")
    assert burn.build_driver() is None
    (call,) = cargo_calls(builds)
    assert call[:3] == ["build", "--release", "--locked"] and "--offline" not in call
    assert Path(call[call.index("--manifest-path") + 1]) == sources / "Cargo.toml"
    assert burn.executable().is_file() and burn.executable().parent.parent.name.startswith(f"{burn.burn_version()}-")
    # Built from these sources already: no cargo at all, even where it could not reach the crates.
    monkeypatch.setenv("FAKE_CARGO", "offline")
    assert burn.build_driver() is None and len(cargo_calls(builds)) == 1
    assert burn.build_blocker() is None
    # Other compiler flags: another build folder, built anew.
    first = burn.executable()
    monkeypatch.setenv("RUSTFLAGS", "-C target-cpu=native")
    monkeypatch.setenv("FAKE_CARGO", "ok")
    assert burn.build_driver() is None and burn.executable() != first and len(cargo_calls(builds)) == 2


def test_without_a_lock_cargo_resolves_one(builds, sources):
    assert burn.build_driver() is None
    (call,) = cargo_calls(builds)
    assert call[:2] == ["build", "--release"] and "--locked" not in call


def test_a_vendored_folder_builds_offline_without_writing_a_config(builds, tmp_path, monkeypatch):
    folder = vendor_folder(tmp_path)
    monkeypatch.setenv(burn.VENDOR_ENV, str(folder))
    assert burn.build_driver() is None
    (call,) = cargo_calls(builds)
    assert "--offline" in call
    assert 'source.crates-io.replace-with="burtbench-vendor"' in call
    assert f"source.burtbench-vendor.directory={json.dumps(str(folder))}" in call
    assert not (burn.SOURCE_DIR / ".cargo").exists()


@pytest.mark.parametrize("make, says", [
    (lambda tmp: tmp / "nowhere", "does not exist"),
    (lambda tmp: tmp, "is not a `cargo vendor` folder for Burn"),
])
def test_a_wrong_vendored_folder_is_one_line_before_any_cargo(builds, tmp_path, monkeypatch, make, says):
    monkeypatch.setenv(burn.VENDOR_ENV, str(make(tmp_path)))
    reason = burn.build_driver()
    assert says in reason and "\n" not in reason
    assert all_engines()[ENGINE].unavailable_reason() == reason
    assert cargo_calls(builds) == []


def test_without_the_registry_the_line_says_how_to_give_the_crates_and_is_remembered(builds, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CARGO", "offline")
    reason = burn.build_driver()
    assert reason.startswith("cargo could not get Burn's crates from the registry (error: failed to get `burn-tensor`")
    assert "--cargo-vendor DIR or $BURTBENCH_CARGO_VENDOR" in reason and "\n" not in reason
    # list and doctor say the same, without building; a second run does not try again.
    assert all_engines()[ENGINE].unavailable_reason() == reason
    assert burn.build_driver() == reason and len(cargo_calls(builds)) == 1
    # With a vendored folder, it is tried again.
    monkeypatch.setenv(burn.VENDOR_ENV, str(vendor_folder(tmp_path)))
    monkeypatch.setenv("FAKE_CARGO", "ok")
    assert burn.build_driver() is None and len(cargo_calls(builds)) == 2


def test_a_compile_error_is_the_first_error_line(builds, monkeypatch):
    monkeypatch.setenv("FAKE_CARGO", "broken")
    reason = burn.build_driver()
    assert reason.startswith("Burn driver build failed (error[E0425]: cannot find value `x` in this scope)")


def test_without_cargo_the_engine_is_unavailable_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "no-cargo"))
    reason = all_engines()[ENGINE].unavailable_reason()
    assert reason.startswith("cargo not found") and "https://rustup.rs" in reason
    assert "\n" not in reason


def test_the_run_goes_on_without_burn_and_list_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "no-cargo"))
    out = tmp_path / "runs"
    code = main(["run", "--engine", f"{ENGINE},micrograd/eager/python/cpu", "--workload", "tiny",
                 "--profile", "smoke", "--out", str(out)])
    said = capsys.readouterr()  # a skip reason is on stderr, one line; the closing lines name it again
    assert code == EXIT_NOT_ALL_RUN
    assert f"skipping {ENGINE}: unavailable: cargo not found" in " ".join(said.err.split())
    assert f"{ENGINE}: cargo not found" in " ".join(said.out.split()[said.out.split().index("Asked"):])
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    trials = results.read_trials(run_dir)
    assert {t["engine"] for t in trials} == {"micrograd/eager/python/cpu"} and trials[0]["status"] == "ok"
    assert main(["list"]) == 0
    assert "cargo not found" in capsys.readouterr().out


def test_the_drivers_line_becomes_a_checked_trial(builds, tmp_path, monkeypatch, capsys):
    assert burn.build_driver() is None
    spec = all_engines()[ENGINE]
    monkeypatch.setattr(burn, "ENGINES", [spec.replace(executable=str(burn.executable()))])
    out = tmp_path / "runs"
    assert main(["run", "--engine", ENGINE, "--workload", "tiny", "--profile", "smoke", "--out", str(out)]) == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (trial,) = results.read_trials(run_dir)
    assert trial["status"] == "ok" and trial["check"]["ok"] is True
    assert trial["framework_version"] == "burn 0.20.1 (fake)" and trial["peak_resident_bytes"] == 1048576
    assert trial["timed_as"] == "lean"
