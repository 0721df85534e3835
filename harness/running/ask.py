"""What `burtbench run` is asked (RunAsk), and the request once checked (RunRequest).

A RunAsk is built from the command line in one place (harness/commands/request.py, ask_of) or in code
(`burtbench calibrate`'s runs); its defaults are the command line's. It is checked whole in one pass,
before any trial, build, install or fetch (harness/commands/request.py, check), which makes the
RunRequest that session.py runs and cluster/submit.py submits: nothing below the command reads the
parsed arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.store.run_plan import DEFAULT_CLAIMS_BUDGET_MIN, DEFAULT_NOISE_THRESHOLD, RunPlan


@dataclass(frozen=True)
class SlurmAsk:
    """`run --slurm`'s own options (harness/cluster/)."""
    tasks: int | None = None  # --slurm N; 0: --slurm alone (a task per half hour of work); None: no --slurm
    wait: bool = False
    partition: str | None = None
    account: str | None = None
    constraint: str | None = None
    sbatch_arg: tuple[str, ...] = ()
    task_argv: tuple[str, ...] = ()  # run's arguments less the submission's own: each array task's


@dataclass(frozen=True)
class RunAsk:
    """Every option of `burtbench run`, as given; each field is named as its option is (--dry-run: dry_run)."""
    workload: str = "all"
    engine: str = "all"
    profile: str | None = None
    param: tuple[str, ...] = ()
    trials: int | None = None
    adaptive: bool = False
    max_trials: int | None = None
    noise_threshold: float = DEFAULT_NOISE_THRESHOLD * 100  # in percent, as the option takes it
    change: float | None = None  # in percent (--change); None: the versions answers' default
    claims_budget: float = DEFAULT_CLAIMS_BUDGET_MIN
    cpu: int | None = None
    cpus: str | None = None
    shard: str | None = None
    dry_run: bool = False
    estimate_from: str | None = None
    timeout: float | None = None
    mem_limit: int | None = None
    energy: str = "auto"
    idle_seconds: float = 10.0
    timing: str | None = None
    sample_private: bool = False
    env: tuple[str, ...] = ()
    aa: bool = False
    no_aa: bool = False
    seed: int | None = None
    instructions: bool = False
    env_dir: str | None = None
    pip_arg: tuple[str, ...] = ()
    python: str | None = None
    data_dir: str | None = None
    upstream: str | None = None
    cargo_vendor: str | None = None
    no_upstream: bool = False
    out: str = "results"
    report_dir: str | None = None  # where the report is rendered; None: no report (--no-report)
    resume: str | None = None
    slurm: SlurmAsk = SlurmAsk()


@dataclass(frozen=True)
class RunRequest:
    """Everything `burtbench run` was asked, checked."""
    plan: RunPlan
    run_dir: Path | None  # the folder of a resumed run; None: a new folder under `out`
    out: Path
    cpu: int
    python: str
    mem_limit_bytes: int | None
    sample_private: bool
    energy: str
    idle_seconds: float
    cpus: tuple[int, ...] = ()  # --cpus: the worker cores, one trial on each at once; () = `cpu` alone
    dry_run: bool = False  # print the plan (a SLURM run's: its shards) and its estimated time, run nothing
    estimate_from: Path | None = None  # the previous run the time estimates come from; None: rough figures
    report_dir: Path | None = None  # checked writable; None: no report
    slurm: SlurmAsk | None = None  # a SLURM run: submitted (harness/cluster/submit.py), not run here
