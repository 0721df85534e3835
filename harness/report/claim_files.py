"""The verdicts of claims.py written out: claims.md (a table, then how each verdict was computed),
claims.csv and claims.json, and the cells the other pages (README, HTML, the run's summary) share."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from harness.report import claims, paper
from harness.report.claims import Verdict
from harness.store.runs import Run
from engines.base import finite

HOW = ("Each factor is the other engine over BurTorch at the same point (above 1: BurTorch better). "
       "reproduced: ours reaches the paper's number within the claim's tolerance; partly: same direction, "
       "smaller factor; not reproduced: opposite direction; not measurable here: this run lacks the claim's rows "
       "or this machine the measure. Times are held to the paper's number as stated (from its Windows tables); "
       "memory, another measure on each OS, to the paper's own figure on this run's OS over the same rows.")

def shown(v: Verdict, which: str) -> str:
    """'Paper' and 'Ours' cells."""
    if v.claim.rule == "same_outputs":
        value = v.paper if which == "paper" else v.ours
        if value is None:
            return "n/a"
        return "exactly equal" if value == 0 else ("wrong results" if math.isinf(value) else f"max rel. diff {value:.2g}")
    if v.claim.rule == "flat" and which == "ours":
        return f"×{v.ours:.3f}" if v.ours is not None else "n/a"
    if which == "paper":
        if v.paper is None or v.paper_basis == "as stated":
            return v.claim.stated_text
        return f"{claims.fx(v.paper)} ({v.paper_basis})"
    return claims.fx(v.ours) if v.ours is not None else "n/a"


def markdown_table(verdicts: list[Verdict]) -> str:
    lines = ["| Verdict | Claim | Where | Paper | Ours | Why |", "|---|---|---|---|---|---|"]
    for v in verdicts:
        cells_ = [f"{claims.SYMBOLS[v.verdict]} **{v.verdict}**", f"{v.claim.claim} (`{v.claim.id}`)", v.claim.where,
                  shown(v, "paper"), shown(v, "ours"), v.why]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells_) + " |")
    return "\n".join(lines) + "\n"


def counts(verdicts: list[Verdict]) -> str:
    tally = {name: sum(v.verdict == name for v in verdicts) for name in claims.VERDICTS}
    return ", ".join(f"{n} {name}" for name, n in tally.items() if n)


def markdown(run: Run, verdicts: list[Verdict], status: list[str]) -> str:
    head = [f"# The BurTorch paper's claims on run {run.run_id}", ""]
    head += [f"> **{line}**" for line in status] + ([""] if status else [])
    head += [f"{counts(verdicts)}. Machine: {machine_text(run)}; profile {run.manifest.get('profile', '?')}.", "",
             HOW, "", markdown_table(verdicts), "## How each verdict was computed", ""]
    for v in verdicts:
        c = v.claim
        head += [f"### {claims.SYMBOLS[v.verdict]} `{c.id}`: {v.verdict}", "",
                 f"- Claim: {c.claim} ({c.where}). {c.note}",
                 f"- Rule: {c.rule} of `{c.metric}` over {', '.join(c.tables)}"
                 + (f" at {_points_text(c.points)}" if c.points else "")
                 + f"; engines: {'every engine' if c.engines == ('*',) else ', '.join(c.engines)}"
                 + (f"; tolerance {c.tolerance:.0%}" if c.tolerance else "") + ".",
                 f"- Paper: {shown(v, 'paper')}" + (f"; its own figure over the same rows: {claims.fx(v.paper_rows)} "
                                                    f"({v.paper_rows_source})" if v.paper_rows is not None
                                                    and v.paper_basis in ("", "as stated") else "") + ".",
                 f"- Ours: {shown(v, 'ours')}" + (f" at {v.at}" if v.at else "") + ".",
                 f"- Verdict: {v.verdict}: {v.why}."]
        if v.used:
            head.append(f"- From the run's rows: {'; '.join(v.used)}.")
        if v.missing and not v.why.startswith("missing:"):
            head.append(f"- Missing from this run: {'; '.join(v.missing)}.")
        head.append("")
    return "\n".join(head)


def _points_text(points: dict) -> str:
    return " ".join(f"{k}={','.join(map(str, v))}" for k, v in points.items())


def machine_text(run: Run) -> str:
    machine = run.manifest.get("machine") or {}
    parts = [machine.get("cpu_model"), paper.OS_NAMES.get(run.os)]
    return ", ".join(str(p) for p in parts if p) or "unknown"


CSV_FIELDS = ["id", "verdict", "claim", "where", "metric", "rule", "stated", "stated_text", "tolerance", "paper",
              "paper_basis", "paper_rows", "paper_rows_source", "ours", "at", "why", "missing"]


def csv_text(verdicts: list[Verdict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for v in verdicts:
        row = v.as_dict()
        row["missing"] = "; ".join(row["missing"])
        writer.writerow({k: "" if row[k] is None else row[k] for k in CSV_FIELDS})
    return out.getvalue()


def write(folder: Path, run: Run, verdicts: list[Verdict], status: list[str]) -> list[Path]:
    paths = {"claims.md": markdown(run, verdicts, status), "claims.csv": csv_text(verdicts),
             "claims.json": json.dumps({"run": run.run_id, "status": status,
                                        "claims": [finite(v.as_dict(), lambda _: None) for v in verdicts]},
                                       indent=1, ensure_ascii=False) + "\n"}
    for name, text in paths.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in paths]
