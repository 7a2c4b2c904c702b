#!/usr/bin/env python3
"""A stand-in for APNs's provider API, for the tests and tools/bench of `kindly-push send`.

APNs cannot be reached from a test machine, so this server behaves as Apple documents it
("Sending notification requests to APNs", "Handling notification responses from APNs"): HTTP/2
over TLS (ALPN h2) on loopback, built on the `h2` state machine (PyPI) through
tools/lib/stand_in_http.py, with

- the provider token checked: an `authorization: bearer JWT` whose header is
  {"alg": "ES256", "kid": KEY_ID} and claims {"iss": TEAM_ID, "iat": SECONDS}, its ES256
  signature verified with the team's public key (PyPI `cryptography`), its age at most an
  hour (403 ExpiredProviderToken), a new token at most every 20 minutes (429
  TooManyProviderTokenUpdates, on one connection); two teams, each with its key and its one
  topic (TEAMS: a sender of several apps), a connection serving the team of its first token
  only (another team's token on it: 403 InvalidProviderToken) and a topic of its team only
  (400 TopicDisallowed);
- the headers required: apns-topic, apns-push-type (alert or background), apns-priority (10, 5 or
  1; background only 5), apns-expiration (a number), apns-collapse-id (at most 64 bytes), a
  64-hex-digit device token, a body of 1 to 4096 bytes;
- 200 with an apns-id, or APNs's status and {"reason"} body (410 with "timestamp");
- SETTINGS_MAX_CONCURRENT_STREAMS 1 on a new connection, raised after its first request is
  answered (as APNs does once a token is accepted);
- faults on demand from a script: answers per device token (429, 500, 503, 410, ..., each with a
  "retry_after" header value if it says so), the first connection held at one stream with slow
  answers ("hold_first_connection"), a GOAWAY
  (declaring the N-th request never processed) or a dropped connection after N requests, a
  delay before each answer; the initial and raised stream limits; the least time between two
  tokens (for tools/bench, whose runs each sign one); the ALPN protocols offered ("alpn": a
  server without h2);
- a stream past the advertised stream limit refused (RST_STREAM REFUSED_STREAM, RFC 9113
  section 5.1.2), recorded as {"refused": ...};
- everything received recorded, one JSON line per request, in DIR/received.jsonl, with the
  number of the connection it came on ("connection", counted from 1 in the order they were
  accepted); with the
  script's "record_received": true also a line {"note": "received", "status": null} as soon as a
  request has arrived, before its answer (for a test of a server that answers late or never).

Usage:
  apns_test_server.py --make-credentials DIR     the TLS certificate and the team's auth key
  apns_test_server.py --dir DIR [--script FILE] [--clock-file FILE]
The server writes its port to DIR/port once it listens, and stops on SIGTERM. SIGUSR1 sends
GOAWAY on every open connection. Nothing but loopback is ever listened on.
"""

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid

import h2.settings
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stand_in_http  # noqa: E402

KEY_ID = "ABC123DEFG"
TEAM_ID = "DEF123GHIJ"
TOPIC = "ai.kindly.test"
# Every team the server knows: its key id, team id and topic (the first is the one of
# KINDLY_PUSH_TEST_APNS_*; the second, a second app's, AuthKey_KEY_ID.p8 beside it).
TEAMS = [(KEY_ID, TEAM_ID, TOPIC), ("XYZ987WVUT", "TEAM222222", "ai.kindly.second")]
TOKEN_MAX_AGE = 3600
TOKEN_MIN_RENEWAL = 20 * 60
REASON_OF = {
    400: "BadDeviceToken", 403: "InvalidProviderToken", 405: "MethodNotAllowed", 410: "Unregistered",
    413: "PayloadTooLarge", 429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable",
}


def make_credentials(folder):
    """The server's self-signed certificate (for 127.0.0.1 and localhost) and the team's auth
    key, AuthKey_KEYID.p8 (PKCS#8 PEM, as Apple gives it), made with openssl."""
    stand_in_http.make_certificate(folder)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    for key_id, _, _ in TEAMS:
        key = os.path.join(folder, f"AuthKey_{key_id}.p8")
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key], **quiet)
        os.chmod(key, 0o600)
        subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-out", os.path.join(folder, f"{key_id}.pub.pem")], **quiet)


class Server(stand_in_http.Records):
    def __init__(self, folder, script, clock_file):
        self.folder = folder
        self.script = script
        self.team_keys = {}
        for key_id, _, _ in TEAMS:
            with open(os.path.join(folder, f"{key_id}.pub.pem"), "rb") as f:
                self.team_keys[key_id] = serialization.load_pem_public_key(f.read())
        self.answers = {token: list(steps) for token, steps in script.get("answers", {}).items()}
        self.record_received = bool(script.get("record_received", False))
        super().__init__(folder, clock_file)
        self.connections = []
        self.connection_count = 0
        self.token_changes = []

    async def accept(self, reader, writer):
        connection = Connection(self, reader, writer)
        self.connections.append(connection)
        await connection.run()

    def check_token(self, authorization, connection):
        """None when the provider token is good, else (status, reason). A token renewed more
        often than every 20 minutes on one connection is refused, as APNs does."""
        if not authorization:
            return 403, "MissingProviderToken"
        if not authorization.startswith("bearer "):
            return 403, "InvalidProviderToken"
        text = authorization[len("bearer "):]
        try:
            signing_input, header, claims, signature = stand_in_http.jws_parts(text, strict=False)
        except ValueError:
            return 403, "InvalidProviderToken"
        team = next((t for t in TEAMS if header == {"alg": "ES256", "kid": t[0]}), None)
        if team is None or set(claims) != {"iss", "iat"} or claims["iss"] != team[1]:
            return 403, "InvalidProviderToken"
        # A connection serves the team of its first token.
        if connection.team is not None and connection.team != team:
            return 403, "InvalidProviderToken"
        if len(signature) != 64 or not isinstance(claims["iat"], int):
            return 403, "InvalidProviderToken"
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            self.team_keys[team[0]].verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return 403, "InvalidProviderToken"
        connection.team = team
        iat = claims["iat"]
        now = self.now()
        if now - iat > TOKEN_MAX_AGE:
            return 403, "ExpiredProviderToken"
        if iat > now + 60:
            return 403, "InvalidProviderToken"
        last = connection.last_token
        if last is None or last[1] != text:
            if last is not None and iat < last[0]:
                return 403, "ExpiredProviderToken"
            if last is not None and iat - last[0] < self.script.get("token_min_renewal", TOKEN_MIN_RENEWAL):
                return 429, "TooManyProviderTokenUpdates"
            self.token_changes.append(iat)
            connection.last_token = (iat, text)
        return None

    def decide(self, headers, body, connection):
        """(status, reason) for one request, in the order APNs checks."""
        if headers.get(":method") != "POST":
            return 405, "MethodNotAllowed"
        path = headers.get(":path", "")
        if not path.startswith("/3/device/"):
            return 404, "BadPath"
        token = path[len("/3/device/"):]
        refusal = self.check_token(headers.get("authorization"), connection)
        if refusal:
            return refusal
        if len(token) != 64 or any(c not in "0123456789abcdefABCDEF" for c in token):
            return 400, "BadDeviceToken"
        if "apns-topic" not in headers:
            return 400, "MissingTopic"
        if headers["apns-topic"] != connection.team[2]:
            return 400, "TopicDisallowed"
        push_type = headers.get("apns-push-type")
        if push_type not in ("alert", "background"):
            return 400, "InvalidPushType"
        priority = headers.get("apns-priority", "10")
        if priority not in ("10", "5", "1") or (push_type == "background" and priority != "5"):
            return 400, "BadPriority"
        if "apns-expiration" in headers and not headers["apns-expiration"].isdigit():
            return 400, "BadExpirationDate"
        if len(headers.get("apns-collapse-id", "").encode()) > 64:
            return 400, "BadCollapseId"
        if not body:
            return 400, "PayloadEmpty"
        if len(body) > 4096:
            return 413, "PayloadTooLarge"
        steps = self.answers.get(token)
        if steps:
            step = steps.pop(0)
            if "retry_after" in step:
                # Read by answer() right after this call (no await in between).
                connection.extra_headers = [("retry-after", str(step["retry_after"]))]
            return step["status"], step.get("reason", REASON_OF.get(step["status"]))
        return 200, None


class Connection(stand_in_http.H2Base):
    def __init__(self, server, reader, writer):
        server.connection_count += 1
        number = server.connection_count
        script = server.script
        first = number == 1
        self.goaway_after = script.get("goaway_after") if first or script.get("faults_every_connection") else None
        self.drop_after = script.get("drop_after") if first or script.get("faults_every_connection") else None
        self.delay = script.get("delay_ms", 0) / 1000
        self.max_streams = script.get("max_streams", 100)
        # "hold_first_connection": {"delay_ms": N}: the first connection stays at one stream (its
        # limit never raised) and answers each request N ms late, as APNs holds a connection
        # after refused pushes; the others are served as usual.
        hold = script.get("hold_first_connection")
        if hold is not None and first:
            self.max_streams = 1
            self.delay = hold.get("delay_ms", 500) / 1000
        super().__init__(server, reader, writer, number, script.get("initial_streams", 1))
        self.answered = 0
        self.open_streams = 0
        self.raised = False
        self.last_token = None  # (iat, text) of the newest token accepted on this connection
        self.team = None  # the TEAMS entry of the first token accepted on this connection

    def goaway(self, last):
        """Sends GOAWAY with `last` as its last stream id: the streams above it are declared never
        processed (RFC 9113 section 6.8) and never answered, so the client must send them again
        on a new connection. The connection closes once every stream up to `last` is answered."""
        # The streams received whole above `last` are recorded unanswered now, not when their
        # delayed answer would have come: by then the connection may be closed (every stream up
        # to `last` answered), and a record made only then would be lost.
        for sid in [sid for sid, stream in self.streams.items() if sid > last and stream.get("ended")]:
            self.record_stream(sid, None, "declared unprocessed by GOAWAY")
            del self.streams[sid]
        super().goaway(last)

    def opened(self, event):
        self.open_streams += 1
        return {"headers": dict(event.headers), "body": b""}

    def refusal(self, event):
        return {"connection": self.number, "stream": event.stream_id, "refused": "over the stream limit",
                "token": dict(event.headers).get(":path", "").rpartition("/")[2], "time": self.server.now()}

    def ended(self, stream_id, stream):
        stream["ended"] = True
        self.received += 1
        stream["open_streams"] = self.open_streams
        stream["limit"] = self.h2.local_settings.max_concurrent_streams
        if self.server.record_received:
            self.record_stream(stream_id, None, "received")
        if self.goaway_sent is not None and stream_id > self.goaway_sent:
            self.record_stream(stream_id, None, "after GOAWAY")
            return
        if self.drop_after is not None and self.received >= self.drop_after:
            self.record_stream(stream_id, None, "connection dropped")
            self.writer.transport.abort()
            self.closed = True
            return
        asyncio.get_running_loop().create_task(self.answer(stream_id))
        self.last_ended = max(self.last_ended, stream_id)
        if self.goaway_after is not None and self.received == self.goaway_after:
            # The request that reached the count is declared unprocessed (and any of a higher
            # stream already received, should requests end out of order): a resend, whatever
            # the timing.
            self.goaway(stream_id - 1)

    def record_stream(self, stream_id, status, note, reason=None, apns_id=None):
        stream = self.streams[stream_id]
        headers = stream["headers"]
        self.server.record({
            "connection": self.number, "stream": stream_id, "token": headers.get(":path", "").rpartition("/")[2],
            "headers": {k: v for k, v in headers.items() if not k.startswith(":") and k != "authorization"},
            "authorization": headers.get("authorization"), "payload": stream["body"].decode("utf-8", "replace"),
            "status": status, "reason": reason, "apns_id": apns_id, "open_streams": stream["open_streams"],
            "limit": stream["limit"], "note": note, "time": self.server.now(), "at": time.monotonic()})

    async def answer(self, stream_id):
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.closed or stream_id not in self.streams:
            return
        if self.goaway_sent is not None and stream_id > self.goaway_sent:
            self.record_stream(stream_id, None, "after GOAWAY")
            return
        stream = self.streams[stream_id]
        status, reason = self.server.decide(stream["headers"], stream["body"], self)
        apns_id = stream["headers"].get("apns-id") or str(uuid.uuid4()).upper()
        body = b""
        if reason:
            document = {"reason": reason}
            if status == 410:
                document["timestamp"] = self.server.now() * 1000
            body = json.dumps(document).encode()
        headers = [(":status", str(status)), ("apns-id", apns_id)] + getattr(self, "extra_headers", [])
        self.extra_headers = []
        if body:
            headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        self.record_stream(stream_id, status, None, reason, apns_id)
        if not self.send(stream_id, headers, body):
            return
        self.open_streams -= 1
        self.answered += 1
        del self.streams[stream_id]
        # The first answer of a connection raises its stream limit, as APNs does.
        if not self.raised:
            self.raised = True
            self.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams})
        await self.sent()


async def main_async(arguments):
    script = stand_in_http.load_script(arguments.script)
    server = Server(arguments.dir, script, arguments.clock_file)
    # "alpn": the protocols offered (h2 only by default; ["http/1.1"] for a server without h2).
    await stand_in_http.listen(server, arguments.dir, arguments.port, script.get("alpn", ["h2"]))
    with open(os.path.join(arguments.dir, "summary.json"), "w") as f:
        json.dump({"connections": server.connection_count, "token_changes": server.token_changes}, f)


if __name__ == "__main__":
    sys.exit(stand_in_http.command_line(__doc__, "the credentials' folder; the port, the records and the summary go there",
                                        make_credentials, main_async))
