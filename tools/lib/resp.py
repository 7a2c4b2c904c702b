"""A minimal Redis client (RESP2 over TCP or a Unix socket) for the tools that check the
workers from outside: independent of hiredis and of the code under test, standard library only.
"""
import socket


class RedisError(Exception):
    """An error reply (the command failed; the connection is fine)."""


class Redis:
    def __init__(self, socket_path=None, host="127.0.0.1", port=6379, password=None, timeout=10.0):
        self.socket_path, self.host, self.port, self.password, self.timeout = socket_path, host, port, password, timeout
        self.sock = None
        self.connect()

    def connect(self):
        if self.socket_path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(self.timeout)
            self.sock.connect(self.socket_path)
        else:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.buffer = b""
        if self.password:
            self.execute("AUTH", self.password)

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    @staticmethod
    def _encode(args):
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        return b"".join(parts)

    def _line(self):
        while b"\r\n" not in self.buffer:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exact(self, count):
        while len(self.buffer) < count + 2:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self._exact(size)
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._reply() for _ in range(size)]
        raise ConnectionError(f"unexpected reply {line!r}")

    def pipeline(self, commands):
        self.sock.sendall(b"".join(self._encode(c) for c in commands))
        return [self._reply() for _ in commands]

    def execute(self, *args):
        reply = self.pipeline([args])[0]
        if isinstance(reply, RedisError):
            raise reply
        return reply
