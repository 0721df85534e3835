"""One writer per run folder: a lock file holding the writer's pid; a dead writer's lock is taken over."""
from __future__ import annotations

import os
from pathlib import Path

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
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{os.getpid()}\n")
            return

    def _holder(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        if self._holder() == os.getpid():
            self.path.unlink(missing_ok=True)
