"""burtbench-env.json in each environment's folder (harness/envs/cache.py): an installed environment's record
(envs/install.py) or a revision's build's (envs/revisions.py). A cache: what no writer writes reads as no
record (the environment is made again)."""
from __future__ import annotations

from typing import Any

from harness.records.base import Record, When


class EnvRecord(Record):
    spec: str | None = None
    python_version: str | None = None
    installer: str | None = None
    created_at: When | None = None
    last_used: When | None = None
    freeze: dict[str, Any] | None = None
    ready: bool | None = None
    revision: dict[str, Any] | None = None
    # A revision's build: its identity, and where its interpreter and driver are.
    identity: dict[str, Any] | None = None
    python: str | None = None
    driver: str | None = None
    no_module: str | None = None

    def cross_check(self) -> list[tuple[str, str]]:
        if self.identity is not None and (self.python is None or self.driver is None):
            return [("identity", "a revision's build without its interpreter or driver")]
        return []
