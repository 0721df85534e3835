"""The authors' BurTorch at a commit (`--env burtorch-authors@COMMIT`): the commit looked for in every
copy of their source the run knows (--upstream, $BURTBENCH_UPSTREAM, the default checkout). A checkout
gives any commit of its history, exported once per commit with `git archive` into
build/upstream/commits/; a `git archive` tarball answers for its own commit. Their engine builds the
tarball as it builds their pinned commit, once per commit (engines/authors/build.py).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engines.authors.source import ARCHIVE_SUFFIXES, _git, archive_commit
from engines.burtorch_authors import DEFAULT_CHECKOUT
from harness.errors import UsageError
from harness.text import clean

THEIRS = "burtorch-authors"
COMMITS = DEFAULT_CHECKOUT.parent / "commits"


@dataclass
class TheirsEnv:
    """burtorch-authors@COMMIT found: the `git archive` tarball of that commit their engine builds from."""
    spec: str
    commit: str | None
    source: str
    subject: str = ""
    problem: str | None = None

    def manifest_record(self) -> dict:
        return {"spec": self.spec, "kind": "authors commit", "commit": self.commit, "source": self.source,
                "name": f"{self.commit[:7]} {self.subject}".strip() if self.commit else None, "problem": self.problem}

    def bind(self, engine):
        return engine.replace(source=self.source)


def their_locations(upstream: str | None) -> list[Path]:
    """Every copy of the authors' source the run knows, first the run's --upstream."""
    places = [upstream, os.environ.get("BURTBENCH_UPSTREAM", "").strip(), str(DEFAULT_CHECKOUT)]
    seen = []
    for place in places:
        if place and Path(place).expanduser().exists() and Path(place).expanduser().resolve() not in seen:
            seen.append(Path(place).expanduser().resolve())
    return seen


def _archives(place: Path) -> list[Path]:
    if place.is_file():
        return [place] if place.name.endswith(ARCHIVE_SUFFIXES) else []
    return sorted(p for p in place.iterdir() if p.is_file() and p.name.endswith(ARCHIVE_SUFFIXES))


def find_theirs(commit: str, upstream: str | None, cache: Path = COMMITS) -> TheirsEnv:
    """Their commit as a `git archive` tarball (made once per commit from a checkout holding it), or UsageError."""
    spec = f"{THEIRS}@{commit}"
    places = their_locations(upstream)
    for place in places:
        if place.is_dir() and (place / ".git").exists():
            found = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}"], cwd=place)
            if found.returncode != 0:
                continue
            full = found.stdout.strip()
            subject = clean(_git(["log", "-1", "--format=%s", full], cwd=place).stdout.strip())  # anyone's words
            tarball = cache / f"{full}.tar"
            if not tarball.is_file():
                cache.mkdir(parents=True, exist_ok=True)
                scratch = Path(tempfile.mkstemp(prefix=f".{full[:12]}-", suffix=".tar", dir=cache)[1])
                done = _git(["archive", "--format=tar", "-o", str(scratch), full], cwd=place)
                if done.returncode != 0:
                    scratch.unlink(missing_ok=True)
                    return TheirsEnv(spec, full, "", subject, f"git archive {full[:12]} in {place}: {done.stderr.strip()}")
                os.replace(scratch, tarball)
            return TheirsEnv(spec, full, str(tarball), subject)
        for archive in _archives(place):
            found = archive_commit(archive)
            if found and found.startswith(commit.lower()):
                return TheirsEnv(spec, found, str(archive), "(their archive)")
    raise UsageError(f"--env {spec}: no commit {commit} in the authors' source the run knows "
                     f"({', '.join(map(str, places)) or 'none: pass --upstream DIR or set $BURTBENCH_UPSTREAM'})")
