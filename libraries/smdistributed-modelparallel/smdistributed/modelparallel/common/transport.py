"""Pickled objects between the processes of a job over plain TCP, for a variant without
torch.distributed (the TensorFlow one).

Why TCP of our own rather than TensorFlow's collectives: tf.distribute's MultiWorkerMirrored
strategy needs TF_CONFIG naming every worker's host:port before TensorFlow starts (no launcher
sets it, and ports cannot be known in advance), runs one gRPC server per process, has no
subgroups (MP/DP groups), and carries tensors only, not the picklable objects of the seed's
primitives. A TCP mesh set up from the variables the launchers already set (launch_env) carries
objects, tensors as numpy arrays and any subgroup, and starts in milliseconds on a CPU.

Rendezvous: rank 0 listens on the job's rendezvous address; every other rank connects there and
tells its rank and the address of its own listening socket (the host address its connection to
rank 0 went out from, an ephemeral port); rank 0 answers every rank with the table of all
addresses. Then every rank connects to each lower rank, so each pair of processes shares one
connection. A reader thread per connection unpickles frames into one queue per (peer, channel):
a receiver never blocks a sender (no deadlock on full socket buffers), and messages of different
channels (point-to-point objects, acknowledgements, one group's collectives) never overtake one
another's matching.
"""

import pickle
import queue
import socket
import struct
import threading
import time

_LENGTH = struct.Struct("!Q")
CONNECT_TIMEOUT = 300.0  # ranks start minutes apart when containers or images are slow to start


class PeerLost(RuntimeError):
    pass


class Transport:
    def __init__(self, rank, world_size, master_addr, master_port, timeout):
        self.rank = rank
        self.world_size = world_size
        self._timeout = timeout
        self._queues = {}
        self._lost = {}  # peer -> PeerLost, once its connection closed
        self._queues_lock = threading.Lock()
        self._connections = {}
        self._send_locks = {}
        if world_size > 1:
            self._connect_mesh(master_addr, master_port)

    # ---- messages ----

    def send(self, peer, channel, obj):
        """Put `obj` on `channel` towards `peer`; returns once the bytes are with the kernel."""
        frame = pickle.dumps((channel, obj), protocol=pickle.HIGHEST_PROTOCOL)
        with self._send_locks[peer]:
            self._connections[peer].sendall(_LENGTH.pack(len(frame)) + frame)

    def receive(self, peer, channel):
        """The next object `peer` put on `channel`, waiting for it."""
        try:
            item = self._queue(peer, channel).get(timeout=self._timeout)
        except queue.Empty:
            raise TimeoutError(f"rank {self.rank}: nothing arrived from rank {peer} on {channel!r} within "
                               f"{self._timeout:g} s") from None
        if isinstance(item, PeerLost):
            raise PeerLost(str(item))
        return item

    def exchange(self, peers, channel, obj):
        """Send `obj` to every peer, then one object from each, in `peers` order."""
        for peer in peers:
            self.send(peer, channel, obj)
        return [self.receive(peer, channel) for peer in peers]

    def close(self):
        for connection in self._connections.values():
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        self._connections.clear()

    def _queue(self, peer, channel):
        with self._queues_lock:
            if (peer, channel) not in self._queues:
                self._queues[(peer, channel)] = queue.Queue()
                if peer in self._lost:
                    self._queues[(peer, channel)].put(self._lost[peer])
            return self._queues[(peer, channel)]

    # ---- setup ----

    def _connect_mesh(self, master_addr, master_port):
        listener = socket.create_server(("", 0), backlog=self.world_size)
        try:
            addresses = self._rendezvous(master_addr, master_port, listener.getsockname()[1])
            for peer in range(self.rank):  # dial every lower rank
                connection = _connect(addresses[peer])
                _send_frame(connection, self.rank)
                self._adopt(peer, connection)
            listener.settimeout(CONNECT_TIMEOUT)
            for _ in range(self.rank + 1, self.world_size):  # every higher rank dials us
                connection, _ = listener.accept()
                connection.settimeout(None)
                self._adopt(_receive_frame(connection), connection)
        finally:
            listener.close()

    def _rendezvous(self, master_addr, master_port, own_port):
        """Every rank's (host, port), from rank 0."""
        if self.rank != 0:
            with _connect((master_addr, master_port)) as connection:
                _send_frame(connection, (self.rank, connection.getsockname()[0], own_port))
                table = _receive_frame(connection)
            return [(host or master_addr, port) for host, port in table]
        server = socket.create_server(("", master_port), backlog=self.world_size)
        server.settimeout(CONNECT_TIMEOUT)
        try:
            # rank 0's host is the rendezvous address itself, as the other ranks reach it
            addresses, clients = {0: (None, own_port)}, []
            while len(addresses) < self.world_size:
                client, _ = server.accept()
                client.settimeout(CONNECT_TIMEOUT)
                rank, host, port = _receive_frame(client)
                addresses[rank] = (host, port)
                clients.append(client)
            table = [addresses[r] for r in range(self.world_size)]
            for client in clients:
                _send_frame(client, table)
                client.close()
            return table
        finally:
            server.close()

    def _adopt(self, peer, connection):
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._connections[peer] = connection
        self._send_locks[peer] = threading.Lock()
        threading.Thread(target=self._read, args=(peer, connection), daemon=True,
                         name=f"smp-transport-{peer}").start()

    def _read(self, peer, connection):
        try:
            while True:
                channel, obj = _receive_frame(connection)
                self._queue(peer, channel).put(obj)
        except Exception as exc:  # a closed or broken connection: every waiter on the peer fails
            lost = PeerLost(f"rank {self.rank}: the connection to rank {peer} closed ({exc})")
            with self._queues_lock:
                self._lost[peer] = lost
                for (source, _), waiting in self._queues.items():
                    if source == peer:
                        waiting.put(lost)


def _connect(address):
    """A connection to `address`, retried until the peer listens (ranks start in any order)."""
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        try:
            connection = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
            connection.settimeout(None)
            return connection
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _send_frame(connection, obj):
    frame = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    connection.sendall(_LENGTH.pack(len(frame)) + frame)


def _receive_frame(connection):
    (length,) = _LENGTH.unpack(_receive_exactly(connection, _LENGTH.size))
    return pickle.loads(_receive_exactly(connection, length))


def _receive_exactly(connection, size):
    chunks, remaining = [], size
    while remaining:
        chunk = connection.recv(min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("end of stream")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
