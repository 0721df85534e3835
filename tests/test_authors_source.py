"""Getting the authors' source: fetch at a pinned commit (from a local bare repository, no network),
the one-line failure for an unreachable URL, and open_source on checkouts and `git archive` tarballs."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engines.authors import source
from engines.authors.source import PINNED_COMMIT, SourceError, fetch, open_source

ROOT = Path(__file__).resolve().parent.parent
SHARED_ARCHIVE = ROOT.parent / "shared" / "upstream" / "burtorch-b1a9d66.tar.gz"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def upstream_like(tmp_path) -> tuple[Path, str, str]:
    """A bare repository with two commits of a BurTorch-shaped tree: (bare, first commit, second commit)."""
    work = tmp_path / "work"
    (work / "burt").mkdir(parents=True)
    git("init", "-q", str(work), cwd=tmp_path)
    (work / "burt" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.12)\nproject(x)\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "one", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    (work / "burt" / "main.cpp").write_text("int main() { return 0; }\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "two", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "bare.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
    return bare, first, second


def test_fetch_by_commit_from_a_local_bare_repository(tmp_path, upstream_like):
    bare, first, second = upstream_like
    tree = fetch(tmp_path / "dest", commit=first, url=f"file://{bare}")
    assert tree.commit == first and tree.kind == "checkout" and tree.dirty is False
    assert (tree.root / "burt" / "CMakeLists.txt").is_file()
    assert not (tree.root / "burt" / "main.cpp").exists()  # the older commit, not the branch tip
    # Fetching again into the same folder at the same commit does nothing and says the same.
    again = fetch(tmp_path / "dest", commit=first, url="file:///nonexistent")
    assert again.commit == first
    # The tip as well.
    assert fetch(tmp_path / "tip", commit=second, url=f"file://{bare}").commit == second


def test_fetch_refuses_a_commit_the_repository_does_not_have(tmp_path, upstream_like):
    bare, _, _ = upstream_like
    with pytest.raises(SourceError) as info:
        fetch(tmp_path / "dest", commit="0" * 40, url=f"file://{bare}")
    assert "\n" not in str(info.value)


def test_fetch_from_an_unreachable_url_fails_with_one_line(tmp_path):
    with pytest.raises(SourceError) as info:
        fetch(tmp_path / "dest", commit=PINNED_COMMIT, url="file:///nonexistent")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot fetch file:///nonexistent at b1a9d66aae60")
    assert "BURTBENCH_UPSTREAM" in message


def test_fetch_rejects_a_short_commit_and_a_busy_folder(tmp_path):
    with pytest.raises(SourceError):
        fetch(tmp_path / "a", commit="b1a9d66")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file").write_text("x")
    with pytest.raises(SourceError, match="not empty"):
        fetch(busy)


def test_open_source_reads_a_checkout_and_its_head(tmp_path, upstream_like):
    bare, first, _ = upstream_like
    tree = fetch(tmp_path / "dest", commit=first, url=f"file://{bare}")
    opened = open_source(tree.root)
    assert opened.commit == first and opened.kind == "checkout" and opened.dirty is False
    (tree.root / "burt" / "CMakeLists.txt").write_text("changed\n")
    assert open_source(tree.root).dirty is True


def test_a_plain_folder_inside_another_repository_has_no_commit(tmp_path):
    outer = tmp_path / "outer"
    (outer / "copy" / "burt").mkdir(parents=True)
    git("init", "-q", str(outer), cwd=tmp_path)
    (outer / "copy" / "burt" / "CMakeLists.txt").write_text("x\n")
    tree = open_source(outer / "copy")
    assert tree.kind == "folder" and tree.commit is None


def test_open_source_extracts_a_git_archive_once_into_a_cache_keyed_by_content(tmp_path, upstream_like, monkeypatch):
    bare, first, second = upstream_like
    checkout = fetch(tmp_path / "dest", commit=second, url=f"file://{bare}")
    archive = tmp_path / "up.tar.gz"
    git("archive", "--format=tar.gz", "--prefix=burtorch-x/", "-o", str(archive), second, cwd=checkout.root)
    cache = tmp_path / "cache"
    tree = open_source(archive, cache_dir=cache)
    assert tree.kind == "archive" and tree.commit == second
    assert tree.archive_sha256 == source.sha256_of(archive)
    assert tree.root == cache / tree.archive_sha256 / "burtorch-x"
    assert (tree.root / "burt" / "main.cpp").is_file()
    marker = cache / tree.archive_sha256 / ".complete"
    stamp = marker.stat().st_mtime_ns
    assert open_source(archive, cache_dir=cache).root == tree.root
    assert marker.stat().st_mtime_ns == stamp  # not extracted again
    # What git itself reads from the archive.
    got = subprocess.run(f"gzip -dc {archive} | git get-tar-commit-id", shell=True, capture_output=True, text=True)
    assert got.stdout.strip() == tree.commit
    # A folder with exactly one archive, given through the environment variable.
    holder = tmp_path / "holder"
    holder.mkdir()
    shutil.copy(archive, holder / "burtorch.tar.gz")
    monkeypatch.setenv(source.ENV_VAR, str(holder))
    assert open_source(cache_dir=cache).commit == second
    with pytest.raises(SourceError, match="expected"):
        open_source(holder, cache_dir=cache, expect_commit=first)


def test_open_source_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(source.ENV_VAR, raising=False)
    for call in (lambda: open_source(), lambda: open_source(tmp_path / "missing"),
                 lambda: open_source(tmp_path)):
        with pytest.raises(SourceError) as info:
            call()
        assert "\n" not in str(info.value)
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(SourceError, match="cannot extract"):
        open_source(bad, cache_dir=tmp_path / "cache")


@pytest.mark.skipif(not SHARED_ARCHIVE.is_file(), reason=f"no shared copy of the authors' archive at {SHARED_ARCHIVE}")
def test_the_shared_archive_is_the_pinned_commit():
    assert source.archive_commit(SHARED_ARCHIVE) == PINNED_COMMIT
    tree = open_source(SHARED_ARCHIVE, expect_commit=PINNED_COMMIT)
    assert (tree.datasets_dir / "names.txt").is_file() and (tree.datasets_dir / "input.txt").is_file()
