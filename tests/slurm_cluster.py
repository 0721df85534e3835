"""A real one-node SLURM cluster for the tests, from Debian's packages (slurmctld, slurmd,
slurm-client; `make test` installs them where root and apt allow), in a temporary folder.

No munged and no cgroups: AuthType=auth/none with CredType=cred/none, proctrack/linuxproc,
task/affinity and select/cons_tres by core. The controller's and the node's address are 127.0.0.1
(a host name that does not resolve makes the clients hang for minutes). The node's daemon runs in a
mount namespace of its own where `hidden` is an empty tmpfs: a folder the submitter sees and the
node does not, as a login node's local disk is to a cluster. Stopping cancels the jobs first (else
their slurmstepd is orphaned), then ends the two daemons it started, by their process ids.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
PARTITION = "debug"


@dataclass(frozen=True)
class Cluster:
    conf: Path  # the clients find it through SLURM_CONF
    partition: str
    hidden: Path  # a folder the node cannot see
    folder: Path

    def env(self) -> dict:
        return {**os.environ, "SLURM_CONF": str(self.conf)}


def unavailable() -> str | None:
    """Why no cluster can be started here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "SLURM's daemons run on Linux only"
    missing = [name for name in DAEMONS if not (shutil.which(name) or Path("/usr/sbin", name).exists())]
    if missing:
        return (f"no {', '.join(missing)} on this machine (Debian: apt-get install --no-install-recommends "
                f"slurmctld slurmd slurm-client; `make slurm` does it as root)")
    if os.geteuid() != 0:
        return "the test cluster's daemons run as root (SlurmUser=root), and this is not root"
    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        return "unshare --mount is refused here (the node's daemon needs a mount namespace of its own)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_line() -> str:
    """This machine as slurmd sees it (CPUs, sockets, cores, threads, memory), named as its host."""
    found = subprocess.run([daemon("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
    words = [w for w in found.splitlines()[0].split() if not w.startswith(("NodeName=", "UpTime="))]
    return f"NodeName={socket.gethostname()} NodeAddr=127.0.0.1 {' '.join(words)} State=UNKNOWN"


def daemon(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def write_conf(folder: Path) -> Path:
    host = socket.gethostname()
    for sub in ("state", "spool"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=burtbench-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "AuthType=auth/none", "CredType=cred/none",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/affinity",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
        "SlurmUser=root", "SlurmdUser=root", "ReturnToService=2", "MpiDefault=none",
        "MinJobAge=600", "KillWait=5", "InactiveLimit=0", "MessageTimeout=5",
        "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd.log'}",
        node_line(),
        f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP",
    ]) + "\n")
    return conf


@contextmanager
def local_cluster(folder: Path):
    """A started cluster whose node is idle; stopped on leaving, whatever happened."""
    folder.mkdir(parents=True, exist_ok=True)
    conf, hidden = write_conf(folder), folder / "hidden"
    hidden.mkdir()
    cluster = Cluster(conf, PARTITION, hidden, folder)
    env = cluster.env()
    started = []
    try:
        started.append(subprocess.Popen([daemon("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        node = (f"mount -t tmpfs burtbench-hidden {hidden} && exec {daemon('slurmd')} -D -f {conf}")
        started.append(subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", node],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_idle(cluster, started)
        yield cluster
    finally:
        stop(cluster, started)


def wait_idle(cluster: Cluster, started: list, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in started):
            break
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=cluster.env(),
                               timeout=15).stdout.strip()
        if state == "idle":
            return
        time.sleep(0.2)
    logs = "; ".join(tail(cluster.folder / f"{name}.log") for name in ("slurmctld", "slurmd"))
    raise RuntimeError(f"the test cluster's node did not become idle within {within_s:g} s: {logs}")


def tail(path: Path, lines: int = 3) -> str:
    try:
        return f"{path.name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"{path.name}: none"


def stop(cluster: Cluster, started: list) -> None:
    env = cluster.env()
    if started and started[0].poll() is None:
        subprocess.run(["scancel", "--full", "--user", str(os.geteuid())], env=env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and subprocess.run(
                ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=15).stdout.strip():
            time.sleep(0.2)
    for process in reversed(started):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
