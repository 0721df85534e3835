"""Where the authors' BurTorch source comes from: a git fetch at a pinned commit, a checkout, or a tarball.

Nothing of theirs is stored in this project: the user points us at a copy they have (a checkout or
a `git archive` tarball, or lets `fetch` clone it), and we read, build and run it from there.

    fetch(dest_dir, commit=PINNED_COMMIT, url=DEFAULT_URL) -> SourceTree
    open_source(path=None) -> SourceTree      # path defaults to $BURTBENCH_UPSTREAM

Errors are SourceError, whose message is one line meant for the CLI (which prints it and exits 2).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engines import children
from engines.file_lock import exclusive

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The commit the paper's BurTorch rows were produced with (github.com/burlachenkok/burtorch, 2025-03-27).
PINNED_COMMIT = "b1a9d66aae60e7220e19bf9dada45416a731aa8e"
DEFAULT_URL = "https://github.com/burlachenkok/burtorch.git"
# A checkout folder, a `git archive` tarball, or a folder holding exactly one such tarball.
ENV_VAR = "BURTBENCH_UPSTREAM"
# Archives are extracted here, one folder per archive content (sha256).
ARCHIVE_CACHE = PROJECT_ROOT / "build" / "upstream" / "archives"
FETCH_TIMEOUT_S = 900
# What every source tree must contain: the authors' top-level CMake project.
MARKER = Path("burt") / "CMakeLists.txt"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class SourceError(Exception):
    """A source that cannot be had or opened; str(error) is one line."""


@dataclass(frozen=True)
class SourceTree:
    root: Path                 # the folder holding burt/ (and datasets/ in the authors' repository)
    commit: str | None         # 40 hex digits, or None where neither git nor the archive says
    kind: str                  # "checkout" | "archive" | "folder" (a plain copy without git metadata)
    origin: str                # the path or URL it came from
    archive_sha256: str | None = None
    dirty: bool | None = None  # a checkout with local changes (git status), None where unknown

    @property
    def burt_dir(self) -> Path:
        return self.root / "burt"

    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    def as_record(self) -> dict:
        """What a manifest keeps about the source."""
        return {"commit": self.commit, "kind": self.kind, "origin": self.origin,
                "archive_sha256": self.archive_sha256, "dirty": self.dirty, "root": str(self.root)}


def _git(args: list[str], cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
           "LC_ALL": "C"}
    return children.run(["git", *args], f"git {args[0] if args else ''}", timeout, cwd=cwd, env=env,
                        capture_output=True, text=True, stdin=subprocess.DEVNULL)


def _first_git_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else "no message from git"


def _is_commit_id(commit: str) -> bool:
    return len(commit) == 40 and all(c in "0123456789abcdef" for c in commit.lower())


def fetch(dest_dir: str | os.PathLike, commit: str = PINNED_COMMIT, url: str = DEFAULT_URL,
          timeout_s: float = FETCH_TIMEOUT_S) -> SourceTree:
    """Clone url at commit into dest_dir (shallow where the server allows) and verify HEAD is commit.

    A dest_dir that already is a checkout of commit is returned as it is. Raises SourceError with
    one line when git is missing, the network or the server refuses, or the commit is not there.
    """
    if shutil.which("git") is None:
        raise SourceError("git not found on PATH (needed to fetch the authors' BurTorch)")
    if not _is_commit_id(commit):
        raise SourceError(f"commit must be 40 hex digits, got {commit!r}")
    commit = commit.lower()
    dest = Path(dest_dir).resolve()
    if (dest / ".git").exists():
        head = _git(["rev-parse", "HEAD"], cwd=dest)
        if head.returncode == 0 and head.stdout.strip() == commit:
            return _tree_from_checkout(dest, origin=url)
    elif dest.exists() and any(dest.iterdir()):
        raise SourceError(f"cannot fetch into {dest}: the folder exists and is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if not (dest / ".git").exists():
            init = _git(["init", "--quiet", str(dest)])
            if init.returncode != 0:
                raise SourceError(f"git init {dest} failed: {_first_git_error(init.stderr)}")
        # Servers that allow asking for a commit by id (GitHub, git's own for reachable commits) give
        # just that commit; others only their branches and tags, among which the commit must be.
        shallow = _git(["fetch", "--quiet", "--depth", "1", url, commit], cwd=dest, timeout=timeout_s)
        if shallow.returncode != 0:
            full = _git(["fetch", "--quiet", url, "+refs/heads/*:refs/remotes/upstream/*",
                         "+refs/tags/*:refs/tags/*"], cwd=dest, timeout=timeout_s)
            if full.returncode != 0:
                raise SourceError(f"cannot fetch {url} at {commit[:12]}: {_first_git_error(shallow.stderr)}"
                                  f" (give a checkout or `git archive` tarball with --upstream PATH"
                                  f" or ${ENV_VAR} instead)")
        checkout = _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit],
                        cwd=dest)
        if checkout.returncode != 0:
            raise SourceError(f"{url} has no commit {commit[:12]}: {_first_git_error(checkout.stderr)}")
    except subprocess.TimeoutExpired:
        raise SourceError(f"cannot fetch {url} at {commit[:12]}: git gave no answer in {timeout_s:.0f} s") from None
    head = _git(["rev-parse", "HEAD"], cwd=dest)
    if head.returncode != 0 or head.stdout.strip() != commit:
        raise SourceError(f"fetched {url} but HEAD is {head.stdout.strip() or '?'}, not {commit}")
    tree = _tree_from_checkout(dest, origin=url)
    if not (tree.root / MARKER).is_file():
        raise SourceError(f"{url} at {commit[:12]} has no {MARKER.as_posix()}: not the authors' BurTorch")
    return tree


def default_location() -> Path | None:
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


def open_source(path: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None,
                expect_commit: str | None = None) -> SourceTree:
    """A source tree from a checkout folder, a `git archive` tarball, or a folder with one tarball.

    path defaults to $BURTBENCH_UPSTREAM. Archives are extracted once into cache_dir (default
    build/upstream/archives/<sha256>/) and reused. The commit is the checkout's HEAD or the
    archive's git-archive header (what `git get-tar-commit-id` reads). With expect_commit, a
    different (or unknown) commit is an error.
    """
    if path is None:
        path = default_location()
        if path is None:
            raise SourceError(f"no BurTorch source given: pass --upstream PATH (a checkout or a"
                              f" `git archive` tarball) or set ${ENV_VAR}")
    where = Path(path).expanduser().resolve()
    if not where.exists():
        raise SourceError(f"BurTorch source {where} does not exist")
    if where.is_dir():
        if (where / MARKER).is_file():
            tree = _tree_from_folder(where)
        else:
            archives = sorted(p for p in where.iterdir() if p.is_file() and p.name.endswith(ARCHIVE_SUFFIXES))
            if len(archives) != 1:
                raise SourceError(f"{where} holds no {MARKER.as_posix()} and "
                                  f"{'no' if not archives else len(archives)} archives: point at a checkout"
                                  f" or at one `git archive` tarball")
            tree = _tree_from_archive(archives[0], cache_dir)
    elif where.name.endswith(ARCHIVE_SUFFIXES):
        tree = _tree_from_archive(where, cache_dir)
    else:
        raise SourceError(f"{where} is neither a folder nor a .tar.gz/.tgz/.tar archive")
    if expect_commit is not None and tree.commit != expect_commit.lower():
        raise SourceError(f"{tree.origin} is commit {tree.commit or 'unknown'}, expected {expect_commit}")
    return tree


def _tree_from_folder(folder: Path) -> SourceTree:
    # The folder must be the top of its own repository: a plain copy inside some other repository
    # (this project's, say) would otherwise report that repository's HEAD.
    top = _git(["rev-parse", "--show-toplevel"], cwd=folder) if shutil.which("git") else None
    if top is not None and top.returncode == 0 and Path(top.stdout.strip()).resolve() == folder:
        return _tree_from_checkout(folder, origin=str(folder))
    return SourceTree(root=folder, commit=None, kind="folder", origin=str(folder))


def _tree_from_checkout(folder: Path, origin: str) -> SourceTree:
    head = _git(["rev-parse", "HEAD"], cwd=folder)
    commit = head.stdout.strip() if head.returncode == 0 else None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd=folder)
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return SourceTree(root=folder, commit=commit, kind="checkout", origin=origin, dirty=dirty)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def archive_commit(archive: str | os.PathLike) -> str | None:
    """The commit id `git archive` wrote into the tarball's pax global header, or None."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.next()
            comment = tar.pax_headers.get("comment", "").strip()
    except (tarfile.TarError, OSError, EOFError):
        return None
    return comment.lower() if _is_commit_id(comment) else None


def _tree_from_archive(archive: Path, cache_dir: str | os.PathLike | None) -> SourceTree:
    digest = sha256_of(archive)
    commit = archive_commit(archive)
    cache = Path(cache_dir) if cache_dir is not None else ARCHIVE_CACHE
    target = cache / digest
    with exclusive(cache / "extract.lock", f"burtbench: waiting for another process to extract {archive.name}"):
        if not (target / ".complete").is_file():
            shutil.rmtree(target, ignore_errors=True)
            cache.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=cache))
            try:
                with tarfile.open(archive, "r:*") as tar:
                    if hasattr(tarfile, "data_filter"):
                        tar.extractall(scratch, filter="data")
                    else:  # Python < 3.11.4: refuse anything that would land outside the folder
                        for member in tar.getmembers():
                            resolved = (scratch / member.name).resolve()
                            if scratch.resolve() not in resolved.parents and resolved != scratch.resolve():
                                raise SourceError(f"{archive} has a member outside its folder: {member.name}")
                        tar.extractall(scratch)
            except (tarfile.TarError, OSError, EOFError) as exc:
                shutil.rmtree(scratch, ignore_errors=True)
                raise SourceError(f"cannot extract {archive}: {exc}") from None
            (scratch / ".complete").write_text(f"{archive}\n{commit or ''}\n")
            scratch.rename(target)
    roots = [target] if (target / MARKER).is_file() else [
        p for p in sorted(target.iterdir()) if p.is_dir() and (p / MARKER).is_file()]
    if len(roots) != 1:
        raise SourceError(f"{archive} holds no {MARKER.as_posix()}: not the authors' BurTorch")
    return SourceTree(root=roots[0], commit=commit, kind="archive", origin=str(archive), archive_sha256=digest)
