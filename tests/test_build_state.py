"""Issue 48's principle 8 for the build caches: a state file the tool wrote and reads back that holds
valid JSON of the wrong shape (damaged, hand-edited, an older tool's) reads as no state, so the build
runs again, where it once ended in "unexpected AttributeError". Each declared once (engines/state.py).
"""
from __future__ import annotations

import io
import json
import shutil

import pytest
from rich.console import Console

from engines import burn, libtorch
from engines.authors import build as builder
from engines.authors.source import SourceTree
from engines.state import AuthorsState, AuthorsWork, BurnState, read_json
from harness.envs import cache

# Valid JSON, none of it what a writer writes.
WRONG_SHAPES = ['{"failure": "x"}', '{"failure": {"digest": 1, "reason": "r"}}', '{"failure": {"digest": "d"}}',
                '{"built": 7}', '{"configured": "x"}', '{"targets": "x"}', '{"targets": {"bin_good": {"ok": true}}}',
                '{"identity": [], "changed": "abc"}', '{"compiler": {"bin_good": 3}}', '{"ready": "yes"}',
                '{"last_used": "yesterday"}', '{"ready": true, "identity": {"recipe": 3}}', '[1, 2]', '"text"', 'null',
                '{"source": true, "built": false}']


def test_a_declaration_says_what_may_be_missing_and_what_must_be_whole(tmp_path):
    def read(model, data):
        (tmp_path / "state.json").write_text(json.dumps(data))
        return read_json(tmp_path / "state.json", model)

    assert read(BurnState, {}) == {} and read(BurnState, {"built": "d", "newer": 1}) == {"built": "d", "newer": 1}
    assert read(BurnState, {"failure": {"digest": "d", "vendor": None, "reason": "r"}})["failure"]["reason"] == "r"
    assert read(BurnState, {"failure": {"digest": "d", "reason": "r"}}) == {}  # a key the reader reads, missing
    assert read(BurnState, {"built": None}) == {} and read(BurnState, {"built": True}) == {}
    written = {"targets": {"x": {"ok": False, "reason": None}, "y": {"ok": True, "executable": "/b/y"}}}
    assert read(AuthorsState, written) == written
    assert read(AuthorsState, {"targets": {"x": {"ok": 1}}}) == {}  # JSON's 1 is no true
    assert read(AuthorsWork, {"changed": ["a", 1]}) == {} and read(AuthorsWork, {"changed": ["a"]}) == {"changed": ["a"]}


@pytest.mark.parametrize("text", WRONG_SHAPES)
def test_burn_builds_again_over_a_state_of_the_wrong_shape(tmp_path, monkeypatch, text):
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    monkeypatch.setattr(burn, "find_cargo", lambda: "cargo")
    monkeypatch.delenv(burn.VENDOR_ENV, raising=False)
    burn.state_file().parent.mkdir(parents=True)
    burn.state_file().write_text(text)
    assert not burn.is_built() and burn.build_blocker() != "r"  # no remembered failure: a run builds it


@pytest.mark.parametrize("text", WRONG_SHAPES)
def test_libtorch_configures_again_over_a_state_of_the_wrong_shape(tmp_path, monkeypatch, text):
    monkeypatch.setattr(libtorch, "STATE_FILE", tmp_path / "state.json")
    (tmp_path / "state.json").write_text(text)
    blocker = libtorch.build_blocker()  # no remembered failure read from it: what blocks a build is real
    assert blocker is None or "build failed" not in blocker
    assert libtorch.read_state().get("configured") in (None, {})  # configured again before the next build


def test_the_state_a_build_writes_is_read_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(burn, "BUILD_ROOT", tmp_path / "build" / "burn")
    burn.write_state({"failure": {"digest": "d", "vendor": None, "reason": "cargo failed"}})
    assert burn.read_state()["failure"]["reason"] == "cargo failed"
    monkeypatch.setattr(libtorch, "BUILD_DIR", tmp_path / "libtorch")
    monkeypatch.setattr(libtorch, "STATE_FILE", tmp_path / "libtorch" / "state.json")
    libtorch.write_state({"configured": None, "failure": {"digest": "d", "reason": "compile failed"}})
    assert libtorch.read_state()["failure"]["reason"] == "compile failed"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_the_authors_build_runs_again_over_states_of_the_wrong_shape(tmp_path):
    root = tmp_path / "up"
    (root / "burt" / "bin_good" / "src").mkdir(parents=True)
    (root / "burt" / "bin_good" / "src" / "main.cpp").write_text("int main() { return 0; }\n")
    (root / "burt" / "bin_good" / "CMakeLists.txt").write_text("add_executable(bin_good src/main.cpp)\n")
    (root / "burt" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.12)\nproject(toy LANGUAGES CXX)\n"
                                                  "add_subdirectory(bin_good)\n")
    tree, project = SourceTree(root=root, commit=None, kind="folder", origin=str(root)), tmp_path / "project"
    first = builder.build(tree, "bin_good", project_root=project)
    assert first.ok and builder.is_built(tree, "bin_good", project_root=project)
    work_state = first.binary_dir.parent / builder.WORK_STATE
    for text in ('{"targets": {"bin_good": {"ok": true}}}', '{"targets": "x"}', '[1]'):
        (first.build_dir / builder.STATE_NAME).write_text(text)
        work_state.write_text('{"changed": "abc"}')
        assert not builder.is_built(tree, "bin_good", project_root=project)
        again = builder.build(tree, "bin_good", project_root=project)
        assert again.ok and not again.cached and again.executable.is_file()


@pytest.mark.parametrize("text", WRONG_SHAPES)
def test_an_environment_record_of_the_wrong_shape_is_an_unfinished_environment(tmp_path, text):
    folder = tmp_path / "envs" / "autograd-py3.12-0123456789ab"
    folder.mkdir(parents=True)
    (folder / cache.RECORD).write_text(text)
    assert not cache.read_record(folder).get("ready")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    cache.show(tmp_path / "envs", None, console)  # `burtbench envs`: listed, made again by the next run
    assert "(unfinished)" in console.file.getvalue()


def test_an_environment_record_as_written_is_read_back_whole(tmp_path):
    record = {"spec": "autograd==1.7.0", "python_version": "3.12.3", "base_python": "/usr/bin/python3",
              "installer": "uv", "created_at": 1.0, "last_used": 2.0, "freeze": {"autograd": "1.7.0"}, "ready": True}
    built = {**record, "installer": "cmake", "revision": {"commit": "a" * 40}, "identity": {"recipe": 3},
             "python": "/x/bin/python", "driver": "/x/bin/burtorch-bench", "no_module": None}
    for written in (record, built):
        (tmp_path / cache.RECORD).write_text(json.dumps(written))
        assert cache.read_record(tmp_path) == written
