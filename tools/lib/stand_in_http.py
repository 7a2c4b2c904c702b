"""The HTTP side shared by the stand-ins (tools/apns/apns_test_server.py, tools/fcm/fcm_test_server.py,
tools/webpush/push_service.py): a TLS listener on loopback, its port file and its signals; the
HTTP/2 connection's read loop, GOAWAY and answers (on the `h2` state machine, with
RefusingH2Connection); the record file and the test clock; the command line.

The FCM and Web Push stand-ins are served whole by `serve`: HTTP/2 (ALPN h2) and, when the
script's "alpn" offers it, HTTP/1.1; each request whole (headers and body) is handed to the
stand-in's `handle(request)`, which returns (status, headers, body). The APNs stand-in builds its
own connection on H2Base and its own server on `listen`.

What every stand-in served by `serve` gets from its script:
- "delay_ms": a delay before each answer;
- "max_streams": SETTINGS_MAX_CONCURRENT_STREAMS of each connection (100 by default); a stream
  past it is refused with RST_STREAM REFUSED_STREAM (recorded as {"refused": ...});
- "goaway_after": N: a GOAWAY after the N-th request of the first connection, declaring it never
  processed (it is never answered: the client must send it again);
- "alpn": the protocols offered (the stand-in's default otherwise).
SIGUSR1 sends GOAWAY on every open connection (every request received so far is still answered);
SIGTERM and SIGINT stop the server. The port goes to DIR/port once the server listens.
"""

import argparse
import asyncio
import base64
import json
import os
import re
import signal
import ssl
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

REASONS = {
    200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 411: "Length Required", 413: "Payload Too Large",
    415: "Unsupported Media Type", 429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable",
}


def b64url_decode(text, strict=True):
    """The bytes of unpadded base64url; raises ValueError. Not `strict`: what is not of the
    alphabet is passed over, as Python's base64 decoder does."""
    if strict and not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jws_parts(text, strict=True):
    """A compact JWS (a JWT) taken apart: (its signing input, header, claims, signature), the
    header and claims read as JSON, its base64url read as `b64url_decode` does; raises ValueError."""
    header_b64, claims_b64, signature_b64 = text.split(".")
    header = json.loads(b64url_decode(header_b64, strict))
    claims = json.loads(b64url_decode(claims_b64, strict))
    return f"{header_b64}.{claims_b64}".encode(), header, claims, b64url_decode(signature_b64, strict)


class Records:
    """DIR/received.jsonl, one JSON line an entry (`record`), and the time (`now`): the Unix time,
    or the one in the clock file when there is one (the test clock of kindly-push send)."""

    def __init__(self, folder, clock_file=None):
        self.clock_file = clock_file
        self.record_file = open(os.path.join(folder, "received.jsonl"), "a", buffering=1)

    def now(self):
        if self.clock_file:
            try:
                with open(self.clock_file) as f:
                    return int(f.read().strip())
            except (OSError, ValueError):
                pass
        return int(time.time())

    def record(self, entry):
        self.record_file.write(json.dumps(entry, sort_keys=True) + "\n")


class Request:
    """One request, received whole. `headers`: lowercase names (the last of a repeated one);
    `header_list`: every header as received, pseudo-headers included on HTTP/2."""

    def __init__(self, method, path, header_list, body, connection, stream, protocol):
        self.method = method
        self.path = path
        self.header_list = header_list
        self.headers = {name.lower(): value for name, value in header_list}
        self.body = body
        self.connection = connection
        self.stream = stream
        self.protocol = protocol
        self.at = time.monotonic()


class RefusingH2Connection(h2.connection.H2Connection):
    """h2's server connection with RFC 9113 section 5.1.2's rule for a stream past the advertised
    SETTINGS_MAX_CONCURRENT_STREAMS: a stream error, REFUSED_STREAM, which the client may send
    again (h2 makes it a connection error, TooManyStreamsError). Servers on Go's net/http2 and on
    nghttp2 refuse the stream so; a client meets it when it opens streams before reading the
    server's SETTINGS, as some clients do on a new connection after a reconnect. The stream is
    taken in (its header block decoded, so that HPACK stays in step) and its id put in
    `refused`; the server resets it on its RequestReceived."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.refused = set()
        self._admitting = False

    @property
    def open_inbound_streams(self):
        return 0 if self._admitting else super().open_inbound_streams

    def _receive_headers_frame(self, frame):
        over = (frame.stream_id not in self.streams
                and self.open_inbound_streams + 1 > self.local_settings.max_concurrent_streams)
        if not over:
            return super()._receive_headers_frame(frame)
        self.refused.add(frame.stream_id)
        self._admitting = True
        try:
            return super()._receive_headers_frame(frame)
        finally:
            self._admitting = False


class H2Base:
    """A server's HTTP/2 connection: the read loop, a stream past the limit refused, the request
    bodies gathered, GOAWAY, an answer sent. A stand-in's connection says what a new stream holds
    (`opened(event)`), what a refused stream's record is (`refusal(event)`) and what is done with
    a request received whole (`ended(stream_id, stream)`); `server` has `record(entry)` and
    `connections`."""

    def __init__(self, server, reader, writer, number, max_streams):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.number = number
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.h2 = RefusingH2Connection(config=config)
        self.h2.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams})
        self.streams = {}
        self.received = 0
        self.last_ended = 0  # the newest stream whose request was received whole
        self.goaway_sent = None  # the last stream id of our GOAWAY
        self.closed = False

    def flush(self):
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.writer.write(data)

    async def run(self):
        self.h2.initiate_connection()
        self.flush()
        try:
            while not self.closed:
                data = await self.reader.read(65536)
                if not data:
                    break
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError as error:
                    self.server.record({"connection": self.number, "protocol_error": type(error).__name__})
                    self.flush()
                    break
                for event in events:
                    self.event(event)
                self.flush()
                await self.writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            self.close()

    def close(self):
        if not self.closed:
            self.closed = True
            self.writer.close()
        if self in self.server.connections:
            self.server.connections.remove(self)

    def goaway(self, last):
        self.goaway_sent = last
        self.h2.close_connection(last_stream_id=last)
        self.flush()
        if not any(sid <= last for sid in self.streams):
            self.close()

    def event(self, event):
        if isinstance(event, h2.events.RequestReceived) and event.stream_id in self.h2.refused:
            self.h2.refused.discard(event.stream_id)
            self.h2.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            self.server.record(self.refusal(event))
        elif isinstance(event, h2.events.RequestReceived):
            self.streams[event.stream_id] = self.opened(event)
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                stream["body"] += event.data
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                self.ended(event.stream_id, stream)
        elif isinstance(event, h2.events.StreamReset):
            self.streams.pop(event.stream_id, None)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.close()

    def send(self, stream_id, headers, body):
        """Queues an answer's HEADERS and DATA; False when the stream is gone."""
        try:
            self.h2.send_headers(stream_id, headers, end_stream=not body)
            if body:
                # Bodies here are small (an error document): within the initial window.
                self.h2.send_data(stream_id, body, end_stream=True)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            return False
        return True

    async def sent(self):
        """Sends what is queued; after our GOAWAY, closes the connection once every stream up to
        its last stream id is answered."""
        self.flush()
        if self.goaway_sent is not None and not any(sid <= self.goaway_sent for sid in self.streams):
            try:
                await self.writer.drain()
            except ConnectionError:
                pass
            self.close()


class H2Connection(H2Base):
    def __init__(self, server, reader, writer, number):
        super().__init__(server, reader, writer, number, server.script.get("max_streams", 100))
        self.goaway_after = server.script.get("goaway_after") if number == 1 else None

    def opened(self, event):
        return {"headers": list(event.headers), "body": bytearray()}

    def refusal(self, event):
        return {"connection": self.number, "refused": event.stream_id}

    def ended(self, stream_id, stream):
        self.received += 1
        if self.goaway_sent is not None and stream_id > self.goaway_sent:
            self.server.record({"connection": self.number, "stream": stream_id, "note": "after GOAWAY"})
            del self.streams[stream_id]
            return
        self.last_ended = max(self.last_ended, stream_id)
        headers = stream["headers"]
        pseudo = dict(h for h in headers if h[0].startswith(":"))
        request = Request(pseudo.get(":method"), pseudo.get(":path", ""), headers, bytes(stream["body"]),
                          self.number, stream_id, "h2")
        if self.goaway_after is not None and self.received == self.goaway_after:
            self.server.record({"connection": self.number, "stream": stream_id, "path": request.path,
                                "note": "declared unprocessed by GOAWAY"})
            del self.streams[stream_id]
            self.goaway(stream_id - 1)
            return
        asyncio.get_running_loop().create_task(self.answer(stream_id, request))

    async def answer(self, stream_id, request):
        status, headers, body = await self.server.answer(request)
        if self.closed or stream_id not in self.streams:
            return
        del self.streams[stream_id]
        headers = [(":status", str(status))] + [(k.lower(), str(v)) for k, v in headers]
        if body:
            headers.append(("content-length", str(len(body))))
        if self.send(stream_id, headers, body):
            await self.sent()


class H1Connection:
    """HTTP/1.1 with keep-alive, requests with a Content-Length (or none): what `requests` and
    curl send. Chunked bodies are refused (411)."""

    def __init__(self, server, reader, writer, number):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.number = number
        self.closed = False
        self.busy = False
        self.count = 0

    def goaway(self, last):
        # HTTP/1.1 has no GOAWAY: the connection closes now when idle, else after its current answer.
        self.closed = True
        if not self.busy:
            self.close()

    def close(self):
        self.closed = True
        self.writer.close()
        self.server.connections.discard(self)

    async def run(self):
        try:
            while not self.closed:
                try:
                    head = await self.reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                self.busy = True
                lines = head.decode("latin-1").split("\r\n")
                method, path, version = (lines[0].split(" ") + ["", ""])[:3]
                header_list = []
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        header_list.append((name.strip().lower(), value.strip()))
                headers = dict(header_list)
                self.count += 1
                if "chunked" in headers.get("transfer-encoding", ""):
                    await self.send(411, [], b"", close=True)
                    break
                body = await self.reader.readexactly(int(headers.get("content-length", "0") or 0))
                request = Request(method, path, header_list, body, self.number, self.count, "http/1.1")
                status, answer_headers, answer_body = await self.server.answer(request)
                close = headers.get("connection", "").lower() == "close" or version != "HTTP/1.1" or self.closed
                await self.send(status, answer_headers, answer_body, close)
                self.busy = False
                if close:
                    break
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self.close()

    async def send(self, status, headers, body, close):
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers]
        lines.append(f"content-length: {len(body)}")
        if close:
            lines.append("connection: close")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await self.writer.drain()


class Server:
    """`handle(request)` (plain or async) returns (status, [(name, value)], body bytes);
    `record(entry)` writes one line of DIR/received.jsonl."""

    def __init__(self, folder, script, handle, record):
        self.folder = folder
        self.script = script
        self.handle = handle
        self.record = record
        self.connections = set()
        self.connection_count = 0

    async def answer(self, request):
        delay = self.script.get("delay_ms", 0) / 1000
        if delay:
            await asyncio.sleep(delay)
        result = self.handle(request)
        if asyncio.iscoroutine(result):
            result = await result
        return result

    async def accept(self, reader, writer):
        self.connection_count += 1
        protocol = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        if protocol is None and "http/1.1" not in self.alpn:
            # A client that offered none of our protocols (a server's TLS stack then answers
            # without ALPN): an h2-only service closes the connection, as one behind ALPN does.
            self.record({"connection": self.connection_count, "note": "no ALPN protocol in common: closed"})
            writer.close()
            return
        kind = H2Connection if protocol == "h2" else H1Connection
        connection = kind(self, reader, writer, self.connection_count)
        self.connections.add(connection)
        await connection.run()


async def listen(server, folder, port, alpn, on_listening=None):
    """Serves `server` (its `accept(reader, writer)` and its open `connections`) on 127.0.0.1,
    TLS with DIR/server.crt and DIR/server.key offering the protocols `alpn`, until SIGTERM or
    SIGINT; then closes every connection. `on_listening(port)` runs before the port is written to
    DIR/port (a stand-in writes what needs the port there). SIGUSR1: GOAWAY on every connection."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(folder, "server.crt"), os.path.join(folder, "server.key"))
    context.set_alpn_protocols(alpn)
    listener = await asyncio.start_server(server.accept, "127.0.0.1", port, ssl=context)
    port = listener.sockets[0].getsockname()[1]
    if on_listening:
        on_listening(port)
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
    loop.add_signal_handler(signal.SIGINT, lambda: stop.done() or stop.set_result(None))
    loop.add_signal_handler(signal.SIGUSR1, lambda: [c.goaway(getattr(c, "last_ended", 0)) for c in list(server.connections)])
    with open(os.path.join(folder, "port.tmp"), "w") as f:
        f.write(f"{port}\n")
    os.rename(os.path.join(folder, "port.tmp"), os.path.join(folder, "port"))
    await stop
    listener.close()
    for connection in list(server.connections):
        connection.close()


async def serve(folder, script, handle, record, port=0, alpn=("h2",), on_listening=None):
    """Listens on 127.0.0.1 (`listen`) until SIGTERM, HTTP/2 and, when the protocols offered
    (the script's "alpn", else `alpn`) include it, HTTP/1.1."""
    server = Server(folder, script, handle, record)
    server.alpn = list(script.get("alpn", alpn))
    await listen(server, folder, port, server.alpn, on_listening)
    return server


def load_script(path):
    """The script of answers and faults, a JSON file; {} without one."""
    if not path:
        return {}
    with open(path) as f:
        return json.load(f)


def command_line(text, dir_help, make_credentials, serve_arguments, clock=True):
    """A stand-in's command line, described by the first line of its module's `text`:
    --make-credentials DIR (`make_credentials(DIR)`), or --dir DIR [--port PORT] [--script FILE]
    [--clock-file FILE] served by `serve_arguments(arguments)`, a coroutine function. Returns the
    exit status."""
    parser = argparse.ArgumentParser(description=text.split("\n")[0])
    parser.add_argument("--make-credentials", metavar="DIR")
    parser.add_argument("--dir", help=dir_help)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="a JSON file of answers and faults (see the module's text)")
    if clock:
        parser.add_argument("--clock-file", help="read the Unix time from this file (the test clock of kindly-push send)")
    arguments = parser.parse_args()
    if arguments.make_credentials:
        make_credentials(arguments.make_credentials)
        return 0
    if not arguments.dir:
        parser.error("--dir or --make-credentials")
    asyncio.run(serve_arguments(arguments))
    return 0


def make_certificate(folder):
    """A self-signed certificate for 127.0.0.1 and localhost (openssl), DIR/server.crt and
    DIR/server.key (0600)."""
    import subprocess
    os.makedirs(folder, mode=0o700, exist_ok=True)
    subprocess.run([
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", os.path.join(folder, "server.key"), "-out", os.path.join(folder, "server.crt"),
        "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    os.chmod(os.path.join(folder, "server.key"), 0o600)
