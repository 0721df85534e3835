"""Variants of the authors' programs: one compile-time constant per knob changed, nothing else.

    plan_changes(tree, step, {"batch": 8, "iterations": 20}) -> tuple[Change, ...]
    variant_name(target, changes) -> "original" | "<target>.<symbol>=<value>..."
    changed_bytes(raw, changes) -> the file with those lines replaced (each old line checked)
    prepare_variant_source(tree, dest, changes) -> a copy of their burt/ folder with the changes

A Change records file, line, the line as they wrote it and as the variant has it: what a trial and
the manifest keep, so every number of a variant says exactly how its program differs from theirs.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from engines.authors.source import SourceTree


@dataclass(frozen=True)
class Change:
    """One line of the authors' source changed for a variant: a compile-time constant, nothing else."""
    file: str        # relative to the source root, e.g. burt/bin_gpt_example/src/main_gpt.cpp
    line: int        # 1-based
    old: str         # the line as they wrote it
    new: str         # the line in the variant
    symbol: str      # their name for the constant, e.g. k_batch_size
    knob: str        # ours: iterations, batch, hidden_dim, print_every
    old_value: str
    new_value: str

    def as_record(self) -> dict:
        return {"file": self.file, "line": self.line, "old": self.old, "new": self.new,
                "symbol": self.symbol, "knob": self.knob, "old_value": self.old_value,
                "new_value": self.new_value}



def _int_value(text: str) -> int | None:
    """The value of a constant written as digits and products of digits ("100 * 1000")."""
    text = text.strip()
    if not re.fullmatch(r"\d+(\s*\*\s*\d+)*", text):
        return None
    value = 1
    for factor in text.split("*"):
        value *= int(factor)
    return value


def find_knob(tree_root: Path, knob) -> tuple[int, str, re.Match]:
    """(line number, line, match) of the knob's single defining line in the source tree."""
    path = tree_root / knob.file
    lines = path.read_text(encoding="utf-8-sig", errors="strict").splitlines()
    pattern = re.compile(knob.pattern)
    hits = [(i + 1, line, m) for i, line in enumerate(lines) if (m := pattern.search(line))]
    if len(hits) != 1:
        raise ValueError(f"{knob.file}: expected one line defining {knob.symbol}, found {len(hits)}"
                         f" (pattern {knob.pattern!r}): is this the pinned commit?")
    return hits[0]


def current_values(tree: SourceTree, step) -> dict[str, int | None]:
    """Each knob's value as the authors' source has it."""
    return {name: _int_value(find_knob(tree.root, knob)[2].group("value")) for name, knob in step.knobs.items()}


def plan_changes(tree: SourceTree, step, values: Mapping[str, int]) -> tuple[Change, ...]:
    """The line changes that give `step` these knob values; a value equal to theirs changes nothing."""
    changes = []
    for name, value in sorted(values.items()):
        if name not in step.knobs:
            raise ValueError(f"{step.target} has no compile-time constant for {name!r}"
                             f" (it has: {', '.join(sorted(step.knobs)) or 'none'})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{step.target}: {name} must be a positive integer, got {value!r}")
        knob = step.knobs[name]
        number, line, match = find_knob(tree.root, knob)
        old_value = match.group("value")
        if _int_value(old_value) == value:
            continue
        start, end = match.span("value")
        new_line = line[:start] + str(value) + line[end:]
        changes.append(Change(file=knob.file, line=number, old=line, new=new_line, symbol=knob.symbol,
                              knob=name, old_value=old_value.strip(), new_value=str(value)))
    return tuple(sorted(changes, key=lambda c: (c.file, c.line)))


def variant_name(target: str, changes: tuple[Change, ...]) -> str:
    if not changes:
        return "original"
    parts = [f"{c.symbol}={c.new_value}" for c in changes]
    name = ".".join([target, *parts])
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


def _link_or_copy(src: str, dst: str) -> None:
    # Version.h is written by their CMake into the tree it configures: never share its inode.
    if os.path.basename(src) != "Version.h":
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def changed_bytes(raw: bytes, changes, rel: str = "") -> bytes:
    """A file's bytes with `changes` (all of this file) applied: each change's old line must be
    found as recorded, else ValueError. Line endings and a leading BOM stay as they were."""
    lines = raw.decode("utf-8").splitlines(keepends=True)
    for change in changes:
        current = lines[change.line - 1] if 0 < change.line <= len(lines) else ""
        body = current.rstrip("\r\n")
        if body.lstrip("\ufeff") != change.old.lstrip("\ufeff"):
            raise ValueError(f"{rel or change.file}:{change.line} is {body!r}, expected {change.old!r}")
        ending = current[len(body):]
        prefix = "\ufeff" if body.startswith("\ufeff") and not change.new.startswith("\ufeff") else ""
        lines[change.line - 1] = prefix + change.new + ending
    return "".join(lines).encode("utf-8")


def prepare_variant_source(tree: SourceTree, dest: Path, changes: tuple[Change, ...] = ()) -> Path:
    """Copy their burt/ folder to dest/burt and apply changes; returns dest (the copy's root).

    A changed file is written as a new file (never through a shared hard link). Each change's old
    line must be found as recorded, or ValueError.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("Version.h", ".git")
    shutil.copytree(tree.burt_dir, dest / "burt", copy_function=_link_or_copy, ignore=ignore, symlinks=True)
    for rel in sorted({c.file for c in changes}):
        path = dest / rel
        text = changed_bytes(path.read_bytes(), [c for c in changes if c.file == rel], rel)
        path.unlink()   # break a hard link to the original before writing
        path.write_bytes(text)
    return dest
