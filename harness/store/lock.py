"""One writer per run folder: a lock file holding the writer's pid; a dead writer's lock is taken over,
so a lock that could not be removed (a read-only disk) stops no later run."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.store.results import ResultsUnwritable

LOCK_FILE = ".lock"


class RunLocked(RuntimeError):
    pass


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":
        import psutil

        return psutil.pid_exists(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        try:
            self._take()
        except OSError as exc:
            raise ResultsUnwritable(f"cannot lock {self.path.parent}: {exc.strerror or exc}") from None

    def _take(self) -> None:
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and pid_alive(holder):
                    raise RunLocked(f"{self.path.parent} is in use by another burtbench run (pid {holder}); "
                                    f"wait for it or stop it") from None
                self.path.unlink(missing_ok=True)
                continue
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(f"{os.getpid()}\n")
            except OSError:
                self.path.unlink(missing_ok=True)  # best effort: an empty lock names no live holder anyway
                raise
            return

    def _holder(self) -> int | None:
        try:
            return self._read_holder()
        except OSError:
            return None

    def _read_holder(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return None

    def release(self) -> None:
        """Remove the lock; where the disk refuses, say so (a later run takes over a dead holder's lock)."""
        try:
            if self._read_holder() == os.getpid():
                self.path.unlink(missing_ok=True)
        except OSError as exc:
            print(f"burtbench: warning: could not remove the lock {self.path} ({exc.strerror or exc}); "
                  f"it names this finished process, so the next run takes it over", file=sys.stderr)
