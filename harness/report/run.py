"""A run read back for the report: its manifest, its trials and the OS whose paper tables it compares with."""
from __future__ import annotations

from collections import Counter

from harness.store.runs import Run
from harness.text import clean
from harness.units import count


def status_notes(run: Run) -> list[str]:
    """What a reader must know before any number: the run did not finish, or some trials failed."""
    notes = []
    status = run.manifest.get("status")
    if status and status != "complete":
        notes.append(f"This run is {status}, not complete: the report covers the {count(len(run.trials), 'trial')} written "
                     f"before it stopped (burtbench run --resume RUN_DIR runs the rest).")
    failed = Counter(t.get("status") for t in run.trials if (t.get("status") or "ok") != "ok")
    if failed:
        listed = ", ".join(f"{n} {s}" for s, n in sorted(failed.items()))
        notes.append(f"{sum(failed.values())} of {count(len(run.trials), 'trial')} did not succeed ({listed}): "
                     f"their rows are marked in the tables.")
    wrong = Counter(clean(f"{t.get('engine')} on {t.get('workload')}") for t in run.trials
                    if isinstance(t.get("check"), dict) and t["check"].get("ok") is False)
    if wrong:
        one = sum(wrong.values()) == 1
        notes.append(f"{count(sum(wrong.values()), 'trial')} computed a wrong result ({'its' if one else 'their'} "
                     "check failed; " + ", ".join(f"{where}: {n}" for where, n in sorted(wrong.items()))
                     + ("): its row is marked and never answers a claim." if one else
                        "): their rows are marked and never answer a claim."))
    return notes + parallel_notes(run.manifest)


def parallel_notes(manifest: dict) -> list[str]:
    """A run made in parallel (--cpus) or joined from shards (burtbench merge) says so first."""
    notes = []
    merged = [m for m in manifest.get("merged_from") or [] if isinstance(m, dict)]
    cores = [c for c in [manifest.get("cpus")] + [m.get("cpus") for m in merged] if isinstance(c, list)]
    widest = max(map(len, cores), default=1)
    if widest > 1:
        notes.append(f"Parallel run: up to {widest} trials ran at once, each pinned to a core of its own; they "
                     f"share caches, memory bandwidth and the clock budget, so times may be slower than one core "
                     f"alone (burtbench doctor --interference measures by how much on this machine).")
    if merged:
        notes.append(f"Merged from {len(merged)} runs: " + ", ".join(
            f"{m.get('run_id')}" + (f" (shard {m['shard']})" if m.get("shard") else "") for m in merged) + ".")
    mixed = manifest.get("mixed") or []
    if mixed:
        notes.append(f"Mixed run (merged with --allow-mixed): {'; '.join(map(str, mixed))}. Rows from "
                     f"different machines or versions stand side by side.")
    return notes
