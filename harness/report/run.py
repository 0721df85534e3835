"""A run read back for the report: its manifest, its trials and the OS whose paper tables it compares with."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.report import paper
from harness.results import read_trials, sane_manifest


@dataclass
class Run:
    run_id: str
    manifest: dict
    trials: list[dict]
    os: str  # 'linux', 'windows' or 'macos'


def load_run(run_dir: Path, warn=None) -> Run:
    run_dir = Path(run_dir)
    manifest = sane_manifest(run_dir, warn)
    return Run(run_id=run_dir.name, manifest=manifest, trials=read_trials(run_dir, warn), os=paper.run_os(manifest))
