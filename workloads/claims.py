"""The paper's claims as data (claims.csv): what each claim says, where, and which rows answer it.

Each row: the claim's paraphrase, where the paper states it, the metric (an id of the report's
metrics, "A/B" for the quotient of two, or "outputs"), the paper tables it reads (their names in
paper_results.csv), the points (`hidden_dim=4 batch=1;64`) and the engines it compares with
BurTorch ("*": every engine; empty: BurTorch alone), the rule, the paper's number and the
tolerance. A claim of another source (claims_burn.csv: Burn 0.20's release) names its `source` and the
`subject` engine its factors are taken over. `authors` says whether the authors' own program
answers the claim as the paper ran it (`same`), answers it although it differs from our workload
in ways that do not change what is compared (`differs`: a time or memory of a model of the same
size), or cannot answer it (`not comparable`); `authors_why` gives the reason. The report judges
each claim twice, for the authors' program and for ours (harness/judging/claims.py); the plan runs
the points each claim reads (harness/planning/claim_points.py). Here, as data below both, so that
both read one table.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

SAME, DIFFERS, NOT_COMPARABLE = "same", "differs", "not comparable"
COMPARABILITY = (SAME, DIFFERS, NOT_COMPARABLE)


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    where: str
    metric: str
    tables: tuple[str, ...]  # csv names of the paper's tables (paper_results.csv `workload`)
    points: dict  # parameter -> allowed values; {} = every point
    engines: tuple[str, ...]  # engine ids; ("*",) = every engine with a CPU row in the paper; () = BurTorch alone
    rule: str
    stated: float
    stated_text: str
    stated_os: str
    tolerance: float
    requires: str
    source_cell: str
    note: str
    authors: str = SAME  # how the authors' program answers it: same | differs | not comparable
    authors_why: str = ""
    # Who makes the claim ("paper"; "release": claims_burn.csv, Burn 0.20's release notes), and, for a claim
    # not about BurTorch, the engine each factor is taken over (the paper's claims have the two subjects).
    source: str = "paper"
    subject: str = ""


def _value(text: str):
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


def _points(text: str) -> dict:
    """'hidden_dim=4 batch=1;64' -> {'hidden_dim': (4,), 'batch': (1, 64)}."""
    points = {}
    for item in text.split():
        name, _, values = item.partition("=")
        points[name] = tuple(_value(v) for v in values.split(";"))
    return points


def parse_claims(text: str) -> tuple[Claim, ...]:
    claims = []
    for row in csv.DictReader(io.StringIO(text)):
        authors = row.get("authors") or SAME
        if authors not in COMPARABILITY:
            raise ValueError(f"claim {row['id']}: authors {authors!r} is not one of {', '.join(COMPARABILITY)}")
        claims.append(Claim(
            id=row["id"], claim=row["claim"], where=row["where"], metric=row["metric"],
            tables=tuple(t for t in row["tables"].split(";") if t), points=_points(row["points"]),
            engines=tuple(e for e in row["engines"].split(";") if e), rule=row["rule"],
            stated=float(row["stated"]), stated_text=row["stated_text"], stated_os=row["stated_os"] or "windows",
            tolerance=float(row["tolerance"] or 0), requires=row["requires"], source_cell=row["source_cell"],
            note=row["note"], authors=authors, authors_why=row.get("authors_why") or "",
            source=row.get("source") or "paper", subject=row.get("subject") or ""))
    return tuple(claims)


@lru_cache(maxsize=1)
def load_claims() -> tuple[Claim, ...]:
    return parse_claims(resources.files("workloads").joinpath("claims.csv").read_text(encoding="utf-8"))


# Claims of other sources, judged beside the paper's by the same rules (harness/judging/release.py): Burn 0.20's
# release notes on max_pool2d (workloads/catalog/max_pool2d.py). Same columns as claims.csv, plus `source` and
# `subject`; `authors` does not apply (no BurTorch in them). The release's own times are declared once,
# release_times.csv (engine, its backend's name, the release's median in ms, empty where the release has none):
# each claim's stated factor is its engine's time over its subject's.
RELEASE_CLAIMS = "claims_burn.csv"
RELEASE_TIMES = "release_times.csv"
RELEASE_SOURCE = "Burn 0.20's release notes (burn.dev/blog/release-0.20.0)"


@lru_cache(maxsize=1)
def load_release_times() -> dict[str, tuple[str, float | None]]:
    """{engine: (the release's name of its backend, the release's median time in ms, or None)}."""
    text = resources.files("workloads").joinpath(RELEASE_TIMES).read_text(encoding="utf-8")
    return {row["engine"]: (row["backend"], float(row["median_ms"]) if row["median_ms"] else None)
            for row in csv.DictReader(io.StringIO(text))}


@lru_cache(maxsize=1)
def load_release_claims() -> tuple[Claim, ...]:
    text = resources.files("workloads").joinpath(RELEASE_CLAIMS).read_text(encoding="utf-8")
    times = load_release_times()
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        (_, slow), (_, fast) = times[row["engines"]], times[row["subject"]]
        rows.append({**row, "stated": f"{slow / fast!r}", "stated_text": f"×{slow / fast:.3g} ({slow:g} / {fast:g} ms)"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else [])
    writer.writeheader()
    writer.writerows(rows)
    return parse_claims(out.getvalue())
