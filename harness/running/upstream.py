"""The authors' BurTorch source for a run's burtorch-authors engines: the paper's code in the default job.

Where it comes from, first found wins: `--upstream PATH` (the plan keeps it and session.make_plan
gives it to their engines as their `source`), then $BURTBENCH_UPSTREAM, then the checkout of an earlier fetch
(build/upstream/checkout, engines/burtorch_authors.py DEFAULT_CHECKOUT), then a fetch of the pinned
commit into that checkout, verified by its HEAD and kept for later runs: what `burtbench
fetch-upstream` does. A fetch that fails (no network, no git) leaves their rows out with one line
saying why; the run goes on, and the claims' verdicts for the authors' program read "not
measurable here: the authors' code is not available (…)". `--no-upstream` leaves them out of the
selection before any of this.
"""
from __future__ import annotations

import sys
from typing import Callable

from rich.console import Console
from rich.markup import escape

from engines.authors import source
from engines.authors.source import SourceError
from engines.base import AUTHORS
from engines.burtorch_authors import DEFAULT_CHECKOUT, upstream_location
from harness.text import clean


def is_authors(engine_id: str) -> bool:
    return engine_id.split("/")[0] == AUTHORS.split("/")[0]


def _fetch_pinned() -> str:
    """Fetch the pinned commit into the default checkout; its commit, verified. Raises SourceError."""

    return source.fetch(DEFAULT_CHECKOUT).commit


def provide(plan: list, console: Console, fetch: Callable[[], str] = _fetch_pinned) -> tuple[list, dict]:
    """The plan, and {engine id: why} for the authors' engines left out because their source cannot be had."""

    theirs = {pt.engine.id: pt.engine for pt in plan if is_authors(pt.engine.id)}
    if not theirs or any(upstream_location(engine.source)[0] is not None for engine in theirs.values()):
        return plan, {}
    try:
        commit = fetch()
    except SourceError as exc:
        reason = f"no --upstream, no $BURTBENCH_UPSTREAM, no earlier fetch, and fetching it failed: {exc}"
        print(f"burtbench: without the authors' programs: {clean(reason)}", file=sys.stderr)
        return [pt for pt in plan if pt.engine.id not in theirs], {eid: reason for eid in theirs}
    console.print(f"fetched the authors' BurTorch at {commit[:12]} (verified) into {escape(str(DEFAULT_CHECKOUT))}, "
                  f"kept for later runs", highlight=False)
    return plan, {}
