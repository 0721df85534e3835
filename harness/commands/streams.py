"""Output that cannot be written never stops the work: a command's stdout or stderr closed under it (`burtbench
run … | head -2`, a terminal gone) is noted, what would have gone there is dropped, and the command carries
on to its end (a run's trials, manifest and report all written); it then says once, on whichever stream is
still open, that its output was cut.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

CLOSED = (BrokenPipeError, ConnectionResetError)


class Tolerant:
    """A text stream whose writes and flushes never raise for a reader gone; everything else is the stream's."""

    def __init__(self, stream, name: str):
        self.stream, self.name, self.cut = stream, name, False

    def write(self, text: str) -> int:
        if not self.cut:
            try:
                self.stream.write(text)
            except CLOSED:
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.cut:
            try:
                self.stream.flush()
            except CLOSED:
                self._closed()

    def _closed(self) -> None:
        """From now on the stream's file goes nowhere: the interpreter's last flush at exit cannot fail either."""
        self.cut = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # a stream with no file of its own (a test's capture): dropping its text is enough

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextmanager
def tolerant_streams():
    """sys.stdout and sys.stderr made Tolerant for the command's length; yields them."""
    out, err = Tolerant(sys.stdout, "standard output"), Tolerant(sys.stderr, "standard error")
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved
        cut = [s.name for s in (out, err) if s.cut]
        if cut and not err.cut:
            err.write(f"burtbench: warning: {' and '.join(cut)} closed while the command ran; it went on to "
                      f"its end without it (its files are written)\n")
            err.flush()
