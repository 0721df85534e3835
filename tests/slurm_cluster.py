"""A real SLURM cluster for the tests, of one node or several, from Debian's packages (slurmctld,
slurmd, slurm-client; `make test` installs them where root and apt allow), in a temporary folder.

No munged and no cgroups: AuthType=auth/none with CredType=cred/none, proctrack/linuxproc,
task/affinity and select/cons_tres by core. Every daemon listens on 127.0.0.1, each on a port of its
own (Debian's slurmd allows several on one host: `slurmd -N`); a host name that does not resolve
makes the clients hang for minutes, so each node's name is in its own /etc/hosts.

Each node's slurmd runs in namespaces of its own, as a machine of its own would: its host name (UTS),
its process ids (PID: killing the namespace's first process ends every process of the node at once,
as a node that loses power) and its mounts, where `hidden` is an empty tmpfs: a folder the submitter
sees and the nodes do not, as a login node's local disk is to a cluster. A node of several is given
one core of this machine (CpuSpecList keeps the others from its jobs), node k the core k-1 modulo
the cores there are: on a 2-core machine nodes 1 and 3 share core 0. Stopping cancels the jobs first
(else their slurmstepd is orphaned), then ends the daemons it started, by their process ids.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
PARTITION = "debug"
# Seconds before the controller calls a silent node down and requeues its jobs (SLURM's default: 300).
NODE_TIMEOUT_S = 5


@dataclass
class Cluster:
    conf: Path  # the clients find it through SLURM_CONF
    partition: str
    hidden: Path  # a folder the nodes cannot see
    folder: Path
    nodes: dict = field(default_factory=dict)  # node name → its namespaces' first process (Popen)

    def env(self) -> dict:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def kill_node(self, name: str) -> None:
        """The node and everything on it (slurmd, its jobs' slurmstepd, their trials) ends at once."""
        self.nodes[name].kill()
        self.nodes[name].wait(timeout=15)

    def freeze_node(self, name: str, frozen: bool) -> None:
        """The node's slurmd stops answering (or answers again); its jobs' processes run on."""
        os.kill(daemon_pid(self.nodes[name].pid), signal.SIGSTOP if frozen else signal.SIGCONT)

    def restore(self) -> None:
        """Every node up and idle again: a lost one started anew, a frozen one let go."""
        for name, process in self.nodes.items():
            if process.poll() is None:
                self.freeze_node(name, False)
            else:
                self.nodes[name] = start_node(self, name)
        wait_idle(self, list(self.nodes.values()))

    def states(self) -> dict[str, str]:
        """Each node's state as sinfo says it ('idle', 'allocated', 'down*', ...)."""
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, env=self.env(),
                             timeout=15).stdout
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


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
    if subprocess.run(["unshare", *NAMESPACES, "true"], capture_output=True).returncode != 0:
        return "unshare is refused here (each node's daemon needs mount, UTS and PID namespaces of its own)"
    return None


NAMESPACES = ["--mount", "--propagation", "private", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_lines(names: list[str]) -> list[str]:
    """This machine as slurmd sees it (CPUs, sockets, cores, threads, memory), once per node; where
    there are several, each keeps one core for its jobs."""
    found = subprocess.run([daemon("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
    words = [w for w in found.splitlines()[0].split() if not w.startswith(("NodeName=", "UpTime="))]
    cpus = os.cpu_count() or 1
    lines = []
    for k, name in enumerate(names):
        others = ",".join(str(c) for c in range(cpus) if c != k % cpus)
        spec = [f"CpuSpecList={others}"] if len(names) > 1 and others else []
        lines.append(" ".join([f"NodeName={name}", f"NodeHostname={name}", "NodeAddr=127.0.0.1",
                               f"Port={free_port()}", *words, *spec, "State=UNKNOWN"]))
    return lines


def daemon(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def daemon_pid(first: int) -> int:
    """The node's slurmd: the child of `unshare` (the namespaces' first process, which exec'd it)."""
    children = Path(f"/proc/{first}/task/{first}/children").read_text().split()
    return int(children[0])


def write_conf(folder: Path, names: list[str]) -> Path:
    host = socket.gethostname()
    for sub in ("state", "spool"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=burtbench-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        "AuthType=auth/none", "CredType=cred/none",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/affinity",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
        "SlurmUser=root", "SlurmdUser=root", "ReturnToService=2", "MpiDefault=none",
        "MinJobAge=600", "KillWait=5", "InactiveLimit=0", "MessageTimeout=5", f"SlurmdTimeout={NODE_TIMEOUT_S}",
        "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool' / '%n'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd-%n.log'}",
        *node_lines(names),
        f"PartitionName={PARTITION} Nodes={','.join(names)} Default=YES MaxTime=INFINITE State=UP",
    ]) + "\n")
    return conf


def start_node(cluster: Cluster, name: str) -> subprocess.Popen:
    """slurmd for node `name`, in namespaces of its own: its host name, its /etc/hosts, `hidden` empty."""
    hosts = cluster.folder / f"hosts-{name}"
    hosts.write_text(Path("/etc/hosts").read_text() + f"\n127.0.0.1 {name}\n")
    (cluster.folder / "spool" / name).mkdir(parents=True, exist_ok=True)
    q = shlex.quote
    node = (f"hostname {q(name)} && mount --bind {q(str(hosts))} /etc/hosts && "
            f"mount -t tmpfs burtbench-hidden {q(str(cluster.hidden))} && "
            f"exec {daemon('slurmd')} -D -N {q(name)} -f {q(str(cluster.conf))}")
    return subprocess.Popen(["unshare", *NAMESPACES, "sh", "-c", node], env=cluster.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextmanager
def local_cluster(folder: Path, nodes: int = 1):
    """A started cluster whose nodes are idle; stopped on leaving, whatever happened."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"burtbench-n{k}" for k in range(1, nodes + 1)]
    conf, hidden = write_conf(folder, names), folder / "hidden"
    hidden.mkdir()
    cluster = Cluster(conf, PARTITION, hidden, folder)
    controller = None
    try:
        controller = subprocess.Popen([daemon("slurmctld"), "-D", "-i", "-f", str(conf)], env=cluster.env(),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cluster.nodes = {name: start_node(cluster, name) for name in names}
        wait_idle(cluster, [controller, *cluster.nodes.values()])
        yield cluster
    finally:
        stop(cluster, controller)


def wait_idle(cluster: Cluster, started: list, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in started):
            break
        if set(cluster.states().values()) == {"idle"}:
            return
        time.sleep(0.2)
    logs = "; ".join(tail(path) for path in sorted(cluster.folder.glob("slurm*.log")))
    raise RuntimeError(f"the test cluster's nodes did not become idle within {within_s:g} s: {logs}")


def tail(path: Path, lines: int = 3) -> str:
    try:
        return f"{path.name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"{path.name}: none"


def stop(cluster: Cluster, controller: subprocess.Popen | None) -> None:
    env = cluster.env()
    if controller is not None and controller.poll() is None:
        subprocess.run(["scancel", "--full", "--user", str(os.geteuid())], env=env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and subprocess.run(
                ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=15).stdout.strip():
            time.sleep(0.2)
    for process in cluster.nodes.values():  # unshare ignores SIGTERM; its jobs are cancelled already
        if process.poll() is None:
            process.kill()
            process.wait(timeout=15)
    if controller is not None and controller.poll() is None:
        controller.terminate()
        try:
            controller.wait(timeout=15)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait(timeout=15)
