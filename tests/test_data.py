"""The MLP's and GPT's corpora: synthetic by default, the real files from a folder, and fetch-data."""
from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from workloads import data, inputs
from workloads.catalog import gpt, mlp


@pytest.fixture
def real_dir(tmp_path):
    """A data folder with tiny stand-ins for names.txt and input.txt."""
    (tmp_path / data.NAMES_FILE).write_text("emma\nolivia\nav\n", encoding="ascii")
    (tmp_path / data.TEXT_FILE).write_text("First Citizen:\nBefore we proceed, hear me speak.\n", encoding="ascii")
    return tmp_path


def test_synthetic_names_are_deterministic_words_over_a_to_z():
    names = data.synthetic_names()
    assert names == data.synthetic_names()
    assert len(names) == 32_000
    assert set("".join(names)) == set("abcdefghijklmnopqrstuvwxyz")
    assert all(2 <= len(n) <= 12 for n in names)
    assert names != data.synthetic_names(seed=1)


def test_synthetic_text_is_deterministic_and_uses_exactly_the_65_symbols():
    text = data.synthetic_text()
    assert text == data.synthetic_text()
    assert set(text) == set(data.TEXT_ALPHABET)
    assert len(data.TEXT_ALPHABET) == gpt.VOCAB == 65
    assert list(data.TEXT_ALPHABET) == sorted(data.TEXT_ALPHABET)


def test_default_corpora_are_synthetic():
    assert data.names_corpus().name == data.text_corpus().name == "synthetic"
    assert data.names_corpus().path is None


def test_mlp_samples_slide_a_dot_padded_context_over_each_name():
    rows = mlp.samples("ab\nc")
    ab = [[0] * 16 + [1], [0] * 15 + [1, 2], [0] * 14 + [1, 2, 0]]
    c = [[0] * 16 + [3], [0] * 15 + [3, 0]]
    assert rows.tolist() == ab + c


def test_gpt_samples_are_windows_of_nine_with_next_token_targets():
    rows = gpt.samples("abcdefghijk")
    assert rows.shape == (3, 9)
    x, y = gpt.split_rows(rows)
    assert (y[:, :-1] == x[:, 1:]).all()
    assert "".join(data.TEXT_ALPHABET[i] for i in rows[2]) == "cdefghijk"


def test_data_dir_reads_the_real_files(real_dir):
    names = data.names_corpus(real_dir)
    assert (names.name, names.text) == ("names.txt", "emma\nolivia\nav\n")
    assert names.sha256 == hashlib.sha256(names.text.encode()).hexdigest()
    assert data.text_corpus(real_dir).text.startswith("First Citizen:")
    assert names.path == str((real_dir / data.NAMES_FILE).resolve())
    assert len(mlp.samples(names.text)) == 5 + 7 + 3


def test_a_run_on_the_real_files_records_which_corpus_it_used(real_dir, tmp_path):
    gpt.prepare({"batch": 2}, 3, tmp_path / "gpt", str(real_dir))
    config = inputs.read_config(tmp_path / "gpt" / inputs.CONFIG)
    assert config["corpus"] == "input.txt"
    assert config["corpus_path"] == str((real_dir / data.TEXT_FILE).resolve())  # what the authors' GPT reads
    assert config["corpus_sha256"] == hashlib.sha256((real_dir / data.TEXT_FILE).read_bytes()).hexdigest()


def test_burtbench_run_prepares_its_inputs_from_the_plans_data_dir(real_dir, tmp_path):
    from harness.commands.cli import main
    from harness.store.run_plan import read_plan

    out = tmp_path / "results"
    assert main(["run", "--engine", "none/empty", "--workload", "mlp", "--param", "hidden_dim=4", "--param", "batch=1",
                 "--profile", "smoke", "--cpu", "0", "--data-dir", str(real_dir), "--out", str(out)]) == 0
    (run_dir,) = out.iterdir()
    assert read_plan(json.loads((run_dir / "manifest.json").read_text())).data_dir == str(real_dir.resolve())
    (folder,) = (run_dir / "inputs").iterdir()
    assert inputs.read_config(folder / inputs.CONFIG)["corpus"] == "names.txt"
    assert data.names_corpus().name == "synthetic"  # nothing global changed on the way


def test_data_dir_without_the_files_says_which_and_how_to_get_them(tmp_path):
    with pytest.raises(data.DataError, match="lacks names.txt and input.txt.*fetch-data"):
        data.check_dir(tmp_path)


def test_a_real_file_outside_the_alphabet_is_refused(real_dir):
    (real_dir / data.NAMES_FILE).write_text("emma\nZoe\n", encoding="ascii")
    with pytest.raises(data.DataError, match="outside the workload's alphabet: 'Z'"):
        data.names_corpus(real_dir)


class Served:
    """Files served over HTTP on 127.0.0.1, counting the requests."""

    def __init__(self, root: Path):
        self.requests = 0
        served = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):
                served.requests += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "origin"
    root.mkdir()
    (root / data.NAMES_FILE).write_bytes(b"emma\nolivia\n")
    (root / data.TEXT_FILE).write_bytes(b"First Citizen:\n")
    served = Served(root)
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def sources(server: Served, **wrong_sha: str) -> dict:
    origin = {data.NAMES_FILE: b"emma\nolivia\n", data.TEXT_FILE: b"First Citizen:\n"}
    return {name: data.Source(server.url(name), wrong_sha.get(name.split(".")[0], hashlib.sha256(body).hexdigest()))
            for name, body in origin.items()}


def test_fetch_downloads_both_files_and_keeps_good_copies(server, tmp_path):
    target = tmp_path / "data"
    paths = data.fetch(target, sources(server))
    assert [p.name for p in paths] == [data.NAMES_FILE, data.TEXT_FILE]
    assert (target / data.NAMES_FILE).read_bytes() == b"emma\nolivia\n"
    assert server.requests == 2
    data.fetch(target, sources(server))
    assert server.requests == 2, "files with the right checksum are not downloaded again"


def test_fetch_refuses_a_file_with_the_wrong_checksum(server, tmp_path):
    target = tmp_path / "data"
    with pytest.raises(data.DataError) as caught:
        data.fetch(target, sources(server, names="0" * 64))
    message = str(caught.value)
    assert "differs from the expected" in message and "\n" not in message
    assert list(target.iterdir()) == [], "nothing is saved, not even a temporary file"


def test_fetch_from_an_unreachable_origin_fails_with_one_clear_line(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = {data.NAMES_FILE: data.Source(f"http://127.0.0.1:{port}/names.txt", "0" * 64)}
    with pytest.raises(data.DataError) as caught:
        data.fetch(tmp_path, unreachable, timeout_s=5)
    message = str(caught.value)
    assert message.startswith(f"cannot download http://127.0.0.1:{port}/names.txt")
    assert "no network?" in message and "\n" not in message


def test_the_embedded_checksums_match_the_real_files_where_present():
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not shared.is_dir():
        pytest.skip(f"no real data at {shared}")
    for name, source in data.SOURCES.items():
        assert hashlib.sha256((shared / name).read_bytes()).hexdigest() == source.sha256, name
    assert set((shared / data.TEXT_FILE).read_text()) == set(data.TEXT_ALPHABET)
    assert np.isin(mlp.samples((shared / data.NAMES_FILE).read_text()), range(27)).all()
