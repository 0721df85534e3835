"""What the user asked for, as the registry's objects: engines, workloads, a narrowed grid, paths.

Every check here runs before the first trial: a bad value is one UsageError line with a
did-you-mean where one helps.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

from harness.errors import UsageError


def did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f"; did you mean '{close[0]}'?" if close else ""


def _tokens(text: str, option: str) -> list[str]:
    tokens = [t.strip() for t in text.split(",")]
    if not all(tokens):
        raise UsageError(f"{option}: empty name in {text!r}")
    return tokens


def resolve_engines(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--engine"):
        # A framework's name also selects its variants: 'burtorch' takes burtorch-authors/... too.
        matches = [spec for eid, spec in registry.items() if eid == token or eid.startswith(token.rstrip("/") + "/")
                   or ("/" not in token and eid.split("/")[0].startswith(token + "-"))]
        if not matches:
            raise UsageError(f"unknown engine '{token}'{did_you_mean(token, _engine_names(registry))} "
                             f"(burtbench list shows them)")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def _engine_names(registry: dict) -> set[str]:
    names = set(registry)
    for eid in registry:
        parts = eid.split("/")
        names.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return names


def resolve_workloads(text: str, registry: dict) -> list:
    if text.strip() == "all":
        return list(registry.values())
    chosen = []
    for token in _tokens(text, "--workload"):
        if token not in registry:
            raise UsageError(f"unknown workload '{token}'{did_you_mean(token, registry)} "
                             f"(known: {', '.join(registry)})")
        if registry[token] not in chosen:
            chosen.append(registry[token])
    return chosen


def parse_params(items: list[str], workloads: list) -> dict[str, tuple]:
    grids: dict[str, tuple] = {}
    for w in workloads:
        for name, values in w.grid.items():
            grids[name] = tuple(dict.fromkeys(grids.get(name, ()) + tuple(values)))
    narrow: dict[str, tuple] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise UsageError(f"--param expects NAME=V1,V2, got {item!r}")
        if name not in grids:
            where = ", ".join(w.name for w in workloads)
            known = ", ".join(sorted(grids)) or "none"
            raise UsageError(f"--param {name}: no selected workload ({where}) has a parameter '{name}'"
                             f"{did_you_mean(name, grids)} (parameters: {known})")
        narrow[name] = tuple(dict.fromkeys(_grid_value(name, v.strip(), grids[name]) for v in values.split(",")))
    return narrow


def _grid_value(name: str, text: str, allowed: tuple):
    for value in allowed:
        try:
            if type(value)(text) == value:
                return value
        except ValueError:
            pass
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in allowed)
    raise UsageError(f"--param {name}={text}: not in the workload's grid ({shown})")


def check_out_dir(path: Path, what: str = "results folder", option: str = "--out") -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create the {what} ({exc.strerror})") from None
    if not path.is_dir():
        raise UsageError(f"{option} {path}: the {what} is not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: the {what} is not writable")


def check_cpu(cpu: int | None) -> int:
    from harness.measure import affinity

    if cpu is None:
        return affinity.default_cpu()
    problem = affinity.validate_cpu(cpu)
    if problem:
        raise UsageError(problem)
    return cpu


def check_python(path: str | None) -> str:
    if path is None:
        return sys.executable
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        raise UsageError(f"--python {path}: not an executable file")
    return str(Path(path).absolute())


def use_data_dir(folder: str | None) -> None:
    from workloads import data

    try:
        data.set_data_dir(folder)
    except data.DataError as exc:
        raise UsageError(f"--data-dir: {exc}") from None
