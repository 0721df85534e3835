"""The corpora the MLP and the GPT train on: synthetic by default, the real files on request.

- names: words over a-z, the MLP's corpus (makemore's names.txt: one lowercase name a line).
  Tokens: '.' = 0 (word boundary), 'a'..'z' = 1..26.
- text: the GPT's corpus over tiny-shakespeare's 65 symbols (input.txt). Tokens: the index of
  the character in TEXT_ALPHABET (its characters sorted by code point).

The synthetic corpora are built from a seed with numpy alone, the same on every machine, and
use the same alphabets, so a run needs no download. Given a folder (the run's `--data-dir`, which
the plan keeps and prepare() receives), the corpora are DIR/names.txt and DIR/input.txt instead;
`fetch(DIR)` downloads both from their public origins and checks their sha256.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NAMES_ALPHABET = ".abcdefghijklmnopqrstuvwxyz"
TEXT_ALPHABET = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
NAMES_FILE, TEXT_FILE = "names.txt", "input.txt"
SEED = 2503_13795  # the paper's arXiv number: any fixed value does

VOWELS, CONSONANTS = "aeiouy", "bcdfghjklmnpqrstvwxz"


@dataclass(frozen=True)
class Source:
    url: str
    sha256: str


SOURCES = {
    NAMES_FILE: Source("https://raw.githubusercontent.com/karpathy/makemore/master/names.txt",
                       "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"),
    TEXT_FILE: Source("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
                      "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),
}

class DataError(RuntimeError):
    """A corpus that cannot be read or fetched; the message is one line meant for the user."""


@dataclass(frozen=True)
class Corpus:
    name: str      # "synthetic" or the file name
    text: str      # the names one a line, or the text
    sha256: str
    path: str | None = None  # the real file's absolute path; None: synthetic


def check_dir(folder: Path | str) -> None:
    """Raises DataError (one line) unless `folder` holds both real corpora."""
    folder = Path(folder)
    missing = [f for f in (NAMES_FILE, TEXT_FILE) if not (folder / f).is_file()]
    if missing:
        raise DataError(f"{folder} lacks {' and '.join(missing)} (burtbench fetch-data --data-dir {folder})")


def names_corpus(data_dir: Path | str | None = None) -> Corpus:
    """The MLP's names: data_dir/names.txt, or the synthetic ones without a folder."""
    return _real(data_dir, NAMES_FILE, NAMES_ALPHABET[1:] + "\n") if data_dir else _corpus("\n".join(synthetic_names()))


def text_corpus(data_dir: Path | str | None = None) -> Corpus:
    """The GPT's text: data_dir/input.txt, or the synthetic one without a folder."""
    return _real(data_dir, TEXT_FILE, TEXT_ALPHABET) if data_dir else _corpus(synthetic_text())


def _corpus(text: str, name: str = "synthetic", path: str | None = None) -> Corpus:
    return Corpus(name, text, hashlib.sha256(text.encode("ascii")).hexdigest(), path)


def _real(folder: Path | str, file: str, alphabet: str) -> Corpus:
    path = Path(folder) / file
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    stray = set(text) - set(alphabet)
    if stray:
        raise DataError(f"{path} has characters outside the workload's alphabet: {''.join(sorted(stray))!r}")
    return _corpus(text, file, str(path.resolve()))


def synthetic_words(rng: np.random.Generator, count: int, shortest: int, longest: int) -> list[str]:
    """Pronounceable lowercase words: consonants and vowels alternate, either may start."""
    lengths = rng.integers(shortest, longest + 1, count)
    total = int(lengths.sum())
    vowels = np.array(list(VOWELS))[rng.integers(0, len(VOWELS), total)]
    consonants = np.array(list(CONSONANTS))[rng.integers(0, len(CONSONANTS), total)]
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    position = np.arange(total) - starts
    vowel_first = np.repeat(rng.random(count) < 0.4, lengths)
    letters = np.where((position % 2 == 0) == vowel_first, vowels, consonants)
    flat = "".join(letters)
    ends = np.cumsum(lengths)
    return [flat[end - n:end] for n, end in zip(lengths, ends)]


def synthetic_names(count: int = 32_000, seed: int = SEED) -> list[str]:
    """As many names as names.txt has (32,033), 2 to 12 letters like most of them."""
    return synthetic_words(np.random.default_rng([seed, 1]), count, 2, 12)


# What follows a word in the synthetic text, and how often: tiny-shakespeare's separators.
SEPARATORS = (" ", ", ", ". ", ";\n", ":\n", "!\n", "?\n", "'", "-", " & ", " $", " 3 ", "\n", ".\n\n")
SEPARATOR_WEIGHTS = (70, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 3, 2)


def synthetic_text(words: int = 200_000, seed: int = SEED) -> str:
    """About a megabyte of text over all 65 symbols: words, some capitalised or in capitals, and punctuation."""
    rng = np.random.default_rng([seed, 2])
    vocabulary = synthetic_words(rng, words, 1, 9)
    case = rng.choice(3, words, p=(0.8, 0.17, 0.03))  # as is, Capitalised, UPPER (speakers' names)
    weights = np.array(SEPARATOR_WEIGHTS, dtype=float)
    separators = rng.choice(len(SEPARATORS), words, p=weights / weights.sum())
    styled = (w if c == 0 else w.capitalize() if c == 1 else w.upper() for w, c in zip(vocabulary, case))
    return "".join(w + SEPARATORS[s] for w, s in zip(styled, separators))


def encode(text: str, alphabet: str) -> np.ndarray:
    table = np.full(128, 255, dtype=np.uint8)
    table[np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)] = np.arange(len(alphabet))
    ids = table[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    if (ids == 255).any():
        raise DataError("text has characters outside the alphabet")
    return ids


def fetch(data_dir: Path | str, sources: dict[str, Source] | None = None, timeout_s: float = 30.0) -> list[Path]:
    """Download names.txt and input.txt into `data_dir`, each checked against its sha256.

    A file already there with the right checksum is kept. Raises DataError with a one-line
    message on a network failure or a checksum mismatch; nothing half-written is left behind.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, source in (sources or SOURCES).items():
        path = data_dir / name
        if not (path.is_file() and _sha256(path.read_bytes()) == source.sha256):
            _save(path, _download(source, timeout_s))
        paths.append(path)
    return paths


def _download(source: Source, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(source.url, timeout=timeout_s) as response:
            body = response.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DataError(f"cannot download {source.url}: {reason} "
                        "(no network? copy the file into the data folder)") from None
    digest = _sha256(body)
    if digest != source.sha256:
        raise DataError(f"{source.url}: sha256 {digest} differs from the expected {source.sha256}; file not saved")
    return body


def _save(path: Path, body: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(body)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
