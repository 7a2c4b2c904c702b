"""Redis servers of a test's own, on loopback: a folder, free ports, processes in groups of
their own (tools/redis-topology-check and tools/bench-redis start their Sentinel and Cluster
topologies with it)."""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from resp import Redis, RedisError

REDIS_SERVER = "/usr/bin/redis-server"
SERVICE = "kindly"


def secret():
    return os.urandom(18).hex()


class Lab:
    """One temporary folder and every process started in it (servers and workers), each the
    leader of a process group of its own: `close` SIGKILLs the groups still running and removes
    the folder."""

    def __init__(self, name):
        self.folder = tempfile.mkdtemp(prefix=f"kindly-push-topology-{name}.")
        self.processes = []
        self.ports = set()

    def port(self, bus=False):
        """A free loopback port nothing of this run uses; with `bus`, port + 10000 (a cluster
        node's bus) free too."""
        while True:
            if bus:
                candidate = random.SystemRandom().randrange(20000, 40000)
            else:
                probe = socket.socket()
                probe.bind(("127.0.0.1", 0))
                candidate = probe.getsockname()[1]
                probe.close()
            wanted = [candidate, candidate + 10000] if bus else [candidate]
            if any(p in self.ports for p in wanted):
                continue
            probes = []
            try:
                for p in wanted:
                    probe = socket.socket()
                    probes.append(probe)
                    probe.bind(("127.0.0.1", p))
            except OSError:
                continue
            finally:
                for probe in probes:
                    probe.close()
            self.ports.update(wanted)
            return candidate

    def spawn(self, command, log, env=None):
        with open(log, "ab") as output:
            process = subprocess.Popen(command, stdout=output, stderr=output, stdin=subprocess.DEVNULL, env=env,
                                       start_new_session=True)
        self.processes.append(process)
        return process

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        shutil.rmtree(self.folder, ignore_errors=True)


class Node:
    """A redis-server (or a sentinel) of the lab: its folder, config file and process."""

    def __init__(self, lab, name, lines, password, sentinel=False, bus=False):
        self.lab, self.name, self.password, self.sentinel = lab, name, password, sentinel
        self.port = lab.port(bus=bus)
        self.folder = os.path.join(lab.folder, name)
        os.makedirs(self.folder, mode=0o700)
        self.conf = os.path.join(self.folder, "sentinel.conf" if sentinel else "redis.conf")
        self.log = os.path.join(self.folder, "server.log")
        base = ["bind 127.0.0.1", f"port {self.port}", f"dir {self.folder}", f"requirepass {password}", "daemonize no",
                f"logfile {self.log}", f"pidfile {self.folder}/server.pid", "save \"\""]
        with open(self.conf, "w") as conf:
            conf.write("\n".join(base + lines) + "\n")
        os.chmod(self.conf, 0o600)
        self.process = None
        self.start()

    def start(self):
        command = [REDIS_SERVER, self.conf] + (["--sentinel"] if self.sentinel else [])
        self.process = self.lab.spawn(command, os.path.join(self.folder, "stdout.log"))
        deadline, last = time.monotonic() + 20, None
        while True:
            try:
                probe = self.client(timeout=2)
                pong = probe.execute("PING")
                probe.close()
                if pong == "PONG":
                    return
            except (OSError, ConnectionError, RedisError) as error:
                last = error
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = open(self.log, errors="replace").read()[-800:] if os.path.exists(self.log) else ""
                raise SystemExit(f"redis-topology-check: {self.name} did not start ({last}): {tail}")
            time.sleep(0.05)

    def kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def client(self, timeout=10.0):
        return Redis(port=self.port, password=self.password, timeout=timeout)

    def execute(self, *command):
        connection = self.client()
        try:
            return connection.execute(*command)
        finally:
            connection.close()

    def address(self):
        return f"127.0.0.1:{self.port}"


def pairs(flat):
    """A flat RESP array [k1, v1, k2, v2...] as a dict of str keys."""
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in zip(flat[::2], flat[1::2])}


def pairs_of_info(text):
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def data_lines(extra=()):
    return ["appendonly yes", "appendfsync everysec", "repl-diskless-sync yes", "repl-diskless-sync-delay 0",
            "repl-diskless-load disabled", *extra]


def sentinel_view(sentinel):
    """(primary address, {field: value} of SENTINEL MASTER) as this sentinel sees it."""
    r = sentinel.client(timeout=3)
    try:
        address = r.execute("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        master = pairs(r.execute("SENTINEL", "MASTER", SERVICE))
    finally:
        r.close()
    return (f"{address[0].decode()}:{address[1].decode()}" if address else None), master


def sentinel_topology(lab, password, sentinel_password):
    """A primary, a replica and three sentinels (quorum 2, down-after 1 s, failover-timeout
    5 s) in `lab`, waited for until the replica is in sync and every sentinel sees it and the two
    others: (primary, replica, sentinels, [(replicas, other sentinels) each sentinel sees])."""
    primary = Node(lab, "primary", data_lines([f"masterauth {password}"]), password)
    replica = Node(lab, "replica", data_lines([f"masterauth {password}", f"replicaof 127.0.0.1 {primary.port}"]), password)
    sentinels = []
    for index in range(3):
        sentinels.append(Node(lab, f"sentinel{index + 1}", [
            f"sentinel sentinel-pass {sentinel_password}",
            "sentinel resolve-hostnames no",
            "sentinel announce-hostnames no",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} 2",
            f"sentinel auth-pass {SERVICE} {password}",
            f"sentinel down-after-milliseconds {SERVICE} 1000",
            f"sentinel failover-timeout {SERVICE} 5000",
            f"sentinel parallel-syncs {SERVICE} 1",
        ], sentinel_password, sentinel=True))
    # The replica in sync, and every sentinel seeing it and the two others.
    deadline = time.monotonic() + 30
    views = []
    while time.monotonic() < deadline:
        views = [sentinel_view(s)[1] for s in sentinels]
        synced = pairs_of_info(replica.execute("INFO", "replication")).get("master_link_status") == "up"
        if synced and all(v.get("num-slaves") == "1" and v.get("num-other-sentinels") == "2" for v in views):
            break
        time.sleep(0.2)
    seen = [(v.get("num-slaves"), v.get("num-other-sentinels")) for v in views]
    return primary, replica, sentinels, seen
