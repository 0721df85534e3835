"""Burn (tracel-ai/burn): the Rust framework, as a native driver on its ndarray backend under autodiff.

The driver (engines/burn_driver/, a Cargo project: Burn pinned with exact versions in Cargo.toml,
every crate in Cargo.lock where one is committed) is built on first use by `cargo build --release
--locked`, never by
`burtbench list`: the runner calls the spec's prepare() once before the engine's first trial.
Without internet, cargo builds offline from a `cargo vendor` folder given by --cargo-vendor DIR or
$BURTBENCH_CARGO_VENDOR. The build lives in build/burn/<Burn version>-<flags digest>/ (cargo's
target folder), one per Burn version and compiler flags, as the authors' programs are cached per
source and variant; later runs ask cargo to bring it up to date, a moment when nothing changed. A
failed build is remembered with its reason for the same sources, crates and flags, so the engine
is listed as unavailable (by `list` and `doctor` too) instead of being rebuilt at every run. Before
any build, `list` and `doctor` say whether one could start: cargo found, and the crates vendored, in
cargo's download cache or the registry reachable (a connection opened to it or the proxy cargo uses).

One thread: no `multi-threads` feature (rayon is not compiled in) and RAYON_NUM_THREADS=1 in every
child (harness/running/spawn.py).

Burn 0.20's release also times max_pool2d on its CubeCL CPU backend (workloads/claims_burn.csv); that
backend is declared as the engine burn/cubecl/rust/cpu, which has no driver: CUBECL_CPU_MISSING says why.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

from engines import children
from engines.base import BuiltOnFirstUse
from engines.file_lock import exclusive
from engines.state import BurnState, read_json

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = Path(__file__).resolve().parent / "burn_driver"
BUILD_ROOT = PROJECT_ROOT / "build" / "burn"
BUILD_LOCK = BUILD_ROOT.with_name("burn.lock")
VENDOR_ENV = "BURTBENCH_CARGO_VENDOR"
BUILD_TIMEOUT_S = 1800
# The crate whose pinned version names the build (Cargo.toml pins every Burn crate to it).
PINNED_CRATE = "burn-tensor"
PROGRAM = "burn-bench.exe" if os.name == "nt" else "burn-bench"
HOW_TO_VENDOR = (f"without internet, run `cargo vendor` in {SOURCE_DIR.relative_to(PROJECT_ROOT)} on a machine "
                 f"that has it and give the folder: --cargo-vendor DIR or ${VENDOR_ENV}")
# Where cargo fetches crates (crates.io's sparse index), the variables that send it through a proxy, and how
# long `list`, `doctor` and a run's start wait for a connection before calling the registry out of reach.
REGISTRY = ("index.crates.io", 443)
PROXY_VARIABLES = ("CARGO_HTTP_PROXY", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
PROBE_TIMEOUT_S = 3.0
# What cargo prints when it cannot reach the crates it needs.
# Why Burn's CubeCL CPU backend (the crate burn-cpu) has no driver here.
CUBECL_CPU_MISSING = ("Burn's CubeCL CPU backend (burn-cpu) is not in burtbench's Burn driver: it compiles its "
                      "kernels through MLIR/LLVM, a toolchain its build downloads, which the driver's offline build "
                      "from vendored crates (--cargo-vendor) cannot give")
UNREACHABLE = ("failed to get", "failed to download", "unable to update registry", "failed to query replaced source",
               "couldn't resolve host", "could not resolve host", "failed to load source for dependency",
               "attempting to make an http request, but --offline", "no matching package named",
               "network failure", "spurious network error")


def burn_version() -> str:
    """Burn's version as Cargo.toml pins it ('=0.20.1' -> '0.20.1')."""
    manifest = tomllib.loads((SOURCE_DIR / "Cargo.toml").read_text())
    return manifest["dependencies"][PINNED_CRATE]["version"].lstrip("=")


def find_cargo() -> str | None:
    """cargo on PATH, else where rustup installs it ($CARGO_HOME/bin, ~/.cargo/bin)."""
    found = shutil.which("cargo")
    if found:
        return found
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    candidate = home / "bin" / ("cargo.exe" if os.name == "nt" else "cargo")
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def vendor_folder() -> Path | None:
    value = os.environ.get(VENDOR_ENV, "").strip()
    return Path(value).expanduser().resolve() if value else None


def vendor_problem(folder: Path) -> str | None:
    """Why `folder` is not a `cargo vendor` folder holding the pinned Burn, or None."""
    wanted = f"{PINNED_CRATE}-{burn_version()}"
    if not folder.is_dir():
        return f"the cargo vendor folder {folder} (${VENDOR_ENV} / --cargo-vendor) does not exist"
    if not (folder / wanted / ".cargo-checksum.json").is_file() and not (folder / PINNED_CRATE / ".cargo-checksum.json").is_file():
        return f"{folder} is not a `cargo vendor` folder for Burn {burn_version()} (no {wanted} in it)"
    return None


def build_flags() -> dict:
    """What a build depends on besides the sources: the Burn version, the compiler flags, the crates."""
    vendor = vendor_folder()
    return {"burn": burn_version(), "rustflags": os.environ.get("RUSTFLAGS", ""),
            "vendor": str(vendor) if vendor else None}


def build_dir() -> Path:
    """build/burn/<Burn version>-<digest of the flags>/: one cargo target folder per version and flags."""
    flags = build_flags()
    digest = hashlib.sha256(json.dumps({k: flags[k] for k in ("burn", "rustflags")}).encode()).hexdigest()[:12]
    return BUILD_ROOT / f"{flags['burn']}-{digest}"


def executable() -> Path:
    return build_dir() / "release" / PROGRAM


def sources_digest() -> str:
    """The driver's sources, Burn's version and the compiler flags: what a finished build was made of."""
    flags = build_flags()
    digest = hashlib.sha256(json.dumps([flags["burn"], flags["rustflags"]]).encode())
    for path in [SOURCE_DIR / "Cargo.toml", SOURCE_DIR / "Cargo.lock", *sorted((SOURCE_DIR / "src").glob("*.rs"))]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()


def state_file() -> Path:
    return build_dir() / "burtbench-state.json"


def read_state() -> dict:
    return read_json(state_file(), BurnState)


def write_state(state: dict) -> None:
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(state, indent=1))


def build_blocker() -> str | None:
    """Why the driver cannot be built (or was not, last time), judged without building anything."""
    if is_built():
        return None
    if find_cargo() is None:
        return ("cargo not found on PATH or in ~/.cargo/bin: the Burn driver is built with it "
                "(install Rust >= 1.89 from https://rustup.rs or your system's packages)")
    failure = read_state().get("failure")
    # A failure is remembered for the same sources and the same crates (the vendored folder or none).
    if failure and failure.get("digest") == sources_digest() and failure.get("vendor") == build_flags()["vendor"]:
        return failure["reason"]
    return crates_source()[1]


def crates_source() -> tuple[str | None, str | None]:
    """(where cargo would take Burn's crates from, None), or (None, why it could take them from nowhere)."""
    vendor = vendor_folder()
    if vendor is not None:
        problem = vendor_problem(vendor)
        return (None, problem) if problem else (f"vendored in {vendor}", None)
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    if any(home.glob(f"registry/cache/*/{PINNED_CRATE}-{burn_version()}.crate")):
        return f"in cargo's download cache ({home / 'registry'})", None
    where = registry_address()
    why = unreachable(*where)
    if why:
        return None, (f"Burn's crates are neither vendored nor in cargo's cache, and the registry cannot be reached "
                      f"({where[0]}:{where[1]}: {why}); {HOW_TO_VENDOR}")
    return f"from the registry ({where[0]}:{where[1]} answers)", None


def registry_address() -> tuple[str, int]:
    """Where cargo would connect to fetch crates: the proxy it is told to use, else crates.io's index."""
    proxy = next((os.environ[name] for name in PROXY_VARIABLES if os.environ.get(name)), "")
    if not proxy:
        return REGISTRY
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return parts.hostname or REGISTRY[0], parts.port or 80


@functools.lru_cache(maxsize=None)
def unreachable(host: str, port: int) -> str | None:
    """Why no connection to host:port opens within PROBE_TIMEOUT_S, or None: asked once per process."""
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def is_built() -> bool:
    return read_state().get("built") == sources_digest() and executable().is_file()


def build_command(cargo: str, vendor: Path | None) -> list[str]:
    # --locked: exactly the crates of Cargo.lock. Until a Cargo.lock is committed (it needs one
    # resolution against crates.io: see docs/build.md), cargo resolves and writes one here.
    locked = ["--locked"] if (SOURCE_DIR / "Cargo.lock").is_file() else []
    cmd = [cargo, "build", "--release", *locked, "--manifest-path", str(SOURCE_DIR / "Cargo.toml"),
           "--target-dir", str(build_dir())]
    if vendor is not None:
        # The vendored folder replaces crates.io for this build only: nothing is written to a config.
        cmd += ["--offline", "--config", 'source.crates-io.replace-with="burtbench-vendor"',
                "--config", f"source.burtbench-vendor.directory={json.dumps(str(vendor))}"]
    # Compiling Burn is heavy: stay out of the way of anything else on the machine.
    return ["nice", "-n", "10", *cmd] if shutil.which("nice") else cmd


def failure_reason(log_text: str, vendored: bool) -> str:
    """One line: cargo's first error, and what to do where the crates were out of reach."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    first = next((line for line in lines if line.lower().startswith("error")), lines[0] if lines else "no output")[:300]
    if not vendored and any(marker in log_text.lower() for marker in UNREACHABLE):
        return f"cargo could not get Burn's crates from the registry ({first}); {HOW_TO_VENDOR}"
    return f"Burn driver build failed ({first})"


def build_driver() -> str | None:
    """Build (or bring up to date) the driver; None when ready, else why not. One build at a time."""
    with exclusive(BUILD_LOCK, f"burn-bench: waiting for another process's build to finish (lock: {BUILD_LOCK})"):
        return _build_driver()


def _build_driver() -> str | None:
    # Built from these sources already: no cargo call, which without a registry or the vendored
    # folder could not even check that nothing changed.
    if is_built():
        return None
    blocker = build_blocker()
    if blocker is not None:
        return blocker
    cargo, vendor, digest = find_cargo(), vendor_folder(), sources_digest()
    log_path = build_dir() / "build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if not executable().is_file():
        print(f"burn-bench: building Burn {burn_version()} with cargo (first use, minutes; log: {log_path})",
              file=sys.stderr)

    def failed(reason: str) -> str:
        write_state({"failure": {"digest": digest, "vendor": build_flags()["vendor"], "reason": reason}})
        return reason

    command = build_command(cargo, vendor)
    try:
        with open(log_path, "w") as log:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            code = children.run(command, "building Burn's driver (cargo)", BUILD_TIMEOUT_S, stdout=log,
                                stderr=subprocess.STDOUT).returncode
    except subprocess.TimeoutExpired:
        return failed(f"Burn driver build timed out after {BUILD_TIMEOUT_S} s (log: {log_path})")
    if code != 0:
        return failed(failure_reason(log_path.read_text(errors="replace"), vendor is not None) + f" (log: {log_path})")
    if not executable().is_file():
        return failed(f"the Burn driver build succeeded but {executable()} is missing (log: {log_path})")
    write_state({"built": digest})
    return None


ENGINES = [
    # The driver (burn_driver/src) has its workloads compiled in; its executable's path names the build.
    # Built by cargo on first use, per Burn version and flags.
    BuiltOnFirstUse("burn", "eager", "rust", "cpu", workloads=("tiny", "small", "mlp", "gpt", "max_pool2d"),
                    kind="native", executable=str(executable()), condition=build_blocker, build=build_driver),
    # Burn 0.20's release times max_pool2d on this backend too (workloads/claims_burn.csv): declared so that
    # `list`, `doctor` and the claims say why it has no row.
    BuiltOnFirstUse("burn", "cubecl", "rust", "cpu", workloads=("max_pool2d",), kind="native",
                    condition=lambda: CUBECL_CPU_MISSING, build=lambda: CUBECL_CPU_MISSING),
]


if __name__ == "__main__":  # `make burn`: build the driver now rather than at the first run that needs it
    why = build_driver()
    print(f"burn-bench: ready: {executable()}" if why is None else f"burn-bench: unavailable: {why}")
    sys.exit(0 if why is None else 1)
