"""The commands that say what is here rather than measure it: `burtbench --version` and `burtbench list`."""
from __future__ import annotations

import shutil

from rich.console import Console

PIPED_LIST_WIDTH = 120  # `list` where no terminal says its width


def version_text() -> str:
    """`burtbench --version`: the package's version and the commit of the code that runs."""
    from importlib import metadata

    from harness.store.manifest import git_commit

    try:
        version = metadata.version("burtbench")
    except metadata.PackageNotFoundError:
        version = "unknown (not installed: pip install -e .)"
    return f"burtbench {version} (git commit {git_commit() or 'unknown: not a git checkout'})"


def cmd_list(args, console: Console) -> int:
    from rich.markup import escape
    from rich.table import Table

    from engines import all_engines
    from workloads import all_workloads

    workloads, engines = all_workloads(), all_engines()
    # Piped or not, the table fits the terminal's width: an id stays whole on its line, the workloads it
    # runs and the reasons wrap beside it.
    console.width = shutil.get_terminal_size((PIPED_LIST_WIDTH, 24)).columns
    table = Table(title="burtbench: engines × workloads", title_justify="left")
    table.add_column("engine", no_wrap=True, min_width=max(map(len, engines), default=6))
    table.add_column("runs")
    table.add_column("status", overflow="fold")
    for eid, spec in engines.items():
        reason = spec.unavailable_reason()
        runs = " ".join(name for name, w in workloads.items() if spec.runs(w)) or "—"
        status = "[green]available[/]" if reason is None else f"[yellow]unavailable: {escape(reason)}[/]"
        if spec.note:
            status += f" ({escape(spec.note)})"
        table.add_row(eid, runs, status)
    console.print(table)
    return 0
