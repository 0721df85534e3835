"""What each engine times per iteration, against the authors' script for its paper row: ONE table,
workloads/timed_regions.csv, read by the report (a line per row under each table), docs/workloads.md's
table of setup differences (workloads/differences.py) and the engines' tests.

Columns: engine, workload; the authors' script (paths in their archive), its timed loop, iteration
count, warm-up and clock; `lean_loop` (what `--timing lean` times: the same lean region for every
framework) and `paper_loop` (what `--timing paper`, the default, times); `matches`: "yes" (paper
times what their script times), "kept" (their loop times something wrong or excluded by the
paper's own captions: ours is kept, `reason` says what differs and its effect), "no" (adopted in
part, `reason` says what still differs) or "not yet" (not adopted yet); `reason`; `evidence`
(file:lines in their archive). A loop is `;`-separated steps, `once:` for a step before the
loop that the authors' timer still covers, `*N` for a step done N times per iteration.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

CSV = Path(__file__).with_name("timed_regions.csv")
MATCHES = ("yes", "kept", "no", "not yet")


@dataclass(frozen=True)
class TimedRegion:
    engine: str
    workload: str
    authors_script: str
    authors_loop: str
    authors_iterations: str
    authors_warmup: str
    authors_clock: str
    lean_loop: str
    paper_loop: str
    matches: str
    reason: str
    evidence: str

    def loop(self, timing: str) -> str:
        return self.paper_loop if timing == "paper" else self.lean_loop

    def as_authors(self, timing: str) -> bool:
        """Whether a run with this --timing times this row as the authors' script does."""
        return self.matches == "yes" and (timing == "paper" or self.lean_loop == self.paper_loop)

    def line(self, timing: str) -> str:
        """The line under a report table."""
        ours = f"{self.engine}: {self.loop(timing)}"
        if self.as_authors(timing):
            return f"{ours} (as the authors' script)"
        why = {"kept": "ours kept", "no": "partly adopted", "not yet": "not adopted yet"}.get(self.matches, "")
        if timing == "lean" and self.matches in ("yes", "no"):
            why = "--timing lean"
        return f"{ours} — DIFFERS from the authors' {self.authors_loop} ({why})"


def regions() -> dict[tuple[str, str], TimedRegion]:
    """(engine id, workload) -> its row."""
    with open(CSV, newline="", encoding="utf-8") as file:
        return {(r["engine"], r["workload"]): TimedRegion(**r) for r in csv.DictReader(file)}
