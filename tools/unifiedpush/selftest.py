#!/usr/bin/env python3
"""The UnifiedPush distributor stand-in's self-test: shows that tools/unifiedpush/distributor.py
speaks UnifiedPush's D-Bus spec (DBUS 0.3.0) to a connector and hands it what a real sender posts,
with a fake connector of its own (python3-dbus on the system Python, on the private bus of
tools/with-unifiedpush-distributor) and PyPI `pywebpush` as the application server.

Checks: the connector (ai.kindly.Push.SelfTest, org.unifiedpush.Connector2 on
/org/unifiedpush/Connector) registers with service, token, description and vapid and gets
REGISTRATION_SUCCEEDED, then NewEndpoint with its token and an endpoint on the Web Push service
stand-in; pywebpush's message to that endpoint (201) comes to the connector as Message with its
token, the very bytes the service recorded and the id of the service's Location, and `http_ece`
decrypts them with the subscription's keys to the text sent; a push signed by another VAPID key
than the one registered is 403; registering again with the same token gives the same endpoint
again; a malformed vapid, a service the caller does not own and a token sent as bytes are
REGISTRATION_FAILED; Unregister is answered {} and confirmed by Unregistered, after which the
endpoint is 410; calls.jsonl has every call in and out with the connector's answers.

Usage: tools/unifiedpush/selftest.py (runs itself inside tools/with-unifiedpush-distributor);
prints one line per check, exits 1 on the first failure.
    selftest.py --connector NAME   the fake connector (run by the test with /usr/bin/python3):
                                   commands as JSON lines on standard input, events on standard output
"""

import base64
import json
import os
import select
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from selftest_support import b64url, checker, run, vapid_key  # noqa: E402

SERVICE = "ai.kindly.Push.SelfTest"
check = checker("unifiedpush")


def connector(service):
    """A connector as an application would run it: serves Connector2, calls Distributor2 as told."""
    import dbus
    import dbus.mainloop.glib
    import dbus.service
    from gi.repository import GLib

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    loop = GLib.MainLoop()

    def emit(event):
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()

    def plain(args):
        return {str(k): ({"bytes": base64.b64encode(bytes(v)).decode()} if isinstance(v, (dbus.ByteArray, dbus.Array))
                         else str(v)) for k, v in args.items()}

    class Connector(dbus.service.Object):
        @dbus.service.method("org.unifiedpush.Connector2", in_signature="a{sv}", out_signature="a{sv}")
        def Message(self, args):
            emit({"event": "Message", "args": plain(args), "types": {str(k): (f"a{v.signature}" if isinstance(v, dbus.Array) else type(v).__name__)
                                                                 for k, v in args.items()}})
            return dbus.Dictionary({"id": args["id"]} if "id" in args else {}, signature="sv")

        @dbus.service.method("org.unifiedpush.Connector2", in_signature="a{sv}", out_signature="a{sv}")
        def NewEndpoint(self, args):
            emit({"event": "NewEndpoint", "args": plain(args)})
            return dbus.Dictionary({}, signature="sv")

        @dbus.service.method("org.unifiedpush.Connector2", in_signature="a{sv}", out_signature="a{sv}")
        def Unregistered(self, args):
            emit({"event": "Unregistered", "args": plain(args)})
            return dbus.Dictionary({}, signature="sv")

    Connector(bus, "/org/unifiedpush/Connector")
    name = dbus.service.BusName(service, bus, do_not_queue=True)
    distributor = bus.get_object(os.environ["KINDLY_PUSH_TEST_UNIFIEDPUSH_DISTRIBUTOR"], "/org/unifiedpush/Distributor",
                                 introspect=False)
    pending = bytearray()

    def command(line):
        order = json.loads(line)
        args = dbus.Dictionary({k: dbus.ByteArray(base64.b64decode(v["bytes"])) if isinstance(v, dict) else dbus.String(v)
                                for k, v in order["args"].items()}, signature="sv")
        distributor.get_dbus_method(order["call"], "org.unifiedpush.Distributor2")(
            args, reply_handler=lambda answer: emit({"event": "answer", "call": order["call"], "answer": plain(answer)}),
            error_handler=lambda error: emit({"event": "error", "call": order["call"], "error": str(error)}))

    def readable(fd, condition):
        data = os.read(fd, 65536)
        if not data:
            loop.quit()
            return False
        pending.extend(data)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            command(line)
        return True

    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, readable)
    emit({"event": "ready", "unique": bus.get_unique_name()})
    loop.run()
    del name


class Connection:
    """The test's side of the fake connector: commands out, events in (kept until asked for)."""

    def __init__(self):
        self.process = subprocess.Popen(["/usr/bin/python3", os.path.abspath(__file__), "--connector", SERVICE],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.events = []
        self.buffer = b""

    def expect(self, kind, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event["event"] == kind or (kind == "answer" and event["event"] == "error"):
                    self.events.remove(event)
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                data = os.read(self.process.stdout.fileno(), 65536)
                if not data:
                    return None
                self.buffer += data
                while b"\n" in self.buffer:
                    line, _, self.buffer = self.buffer.partition(b"\n")
                    self.events.append(json.loads(line))

    def call(self, method, **args):
        self.process.stdin.write((json.dumps({"call": method, "args": args}) + "\n").encode())
        self.process.stdin.flush()
        return self.expect("answer")

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=5)


def inside():
    # The connector starts first: its Python starts while this one imports pywebpush.
    connection = Connection()
    import http_ece
    import requests
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from pywebpush import WebPushException, webpush

    origin = os.environ["KINDLY_PUSH_TEST_WEBPUSH_URL"]
    session = requests.Session()
    session.verify = os.environ["KINDLY_PUSH_TEST_WEBPUSH_CA"]
    session.trust_env = False  # REQUESTS_CA_BUNDLE in the environment would win over verify

    vapid, vapid_public = vapid_key()
    private = ec.generate_private_key(ec.SECP256R1())
    auth = os.urandom(16)
    keys = {"p256dh": b64url(private.public_key().public_bytes(serialization.Encoding.X962,
                                                                serialization.PublicFormat.UncompressedPoint)),
            "auth": b64url(auth)}

    try:
        check(connection.expect("ready") is not None, "the fake connector is on the bus")
        token = str(uuid.uuid4())
        answer = connection.call("Register", service=SERVICE, token=token, description="Kindly self-test", vapid=vapid_public)
        check(answer and answer.get("answer") == {"success": "REGISTRATION_SUCCEEDED"}, "Register: REGISTRATION_SUCCEEDED", answer)
        event = connection.expect("NewEndpoint")
        endpoint = event and event["args"].get("endpoint", "")
        check(event and event["args"].get("token") == token and endpoint.startswith(f"{origin}/push/"),
              "NewEndpoint with the token and an endpoint on the push service", event)

        text = json.dumps({"v": 3, "ct": "through the distributor"}, separators=(",", ":"))
        subscription = {"endpoint": endpoint, "keys": keys}

        def push(key=vapid):
            try:
                return webpush(subscription, text, vapid_private_key=key, vapid_claims={"sub": "mailto:tests@kindly.invalid"},
                               requests_session=session, ttl=60)
            except WebPushException as error:
                return error.response

        answer = push()
        check(answer.status_code == 201, "pywebpush's message to the endpoint: 201", answer.text)
        message_id = answer.headers["location"].rsplit("/", 1)[1]
        event = connection.expect("Message")
        check(event is not None and event["args"].get("token") == token and event["args"].get("id") == message_id
              and event["types"].get("message") == "ay", "Message with the token, the service's message id, and bytes (ay)", event)
        delivered = base64.b64decode(event["args"]["message"]["bytes"])
        with open(os.path.join(os.environ["KINDLY_PUSH_TEST_WEBPUSH_DIR"], "received.jsonl")) as f:
            recorded = [json.loads(line) for line in f if '"accepted"' in line][-1]
        check(delivered == base64.b64decode(recorded["body_base64"]), "Message carries the very bytes the service received")
        check(http_ece.decrypt(delivered, private_key=private, auth_secret=auth, version="aes128gcm").decode() == text,
              "http_ece decrypts them with the subscription's keys")

        other, _ = vapid_key()
        check(push(other).status_code == 403, "a push signed by another VAPID key than the registered one: 403")

        answer = connection.call("Register", service=SERVICE, token=token, description="Kindly self-test", vapid=vapid_public)
        event = connection.expect("NewEndpoint")
        check(answer["answer"]["success"] == "REGISTRATION_SUCCEEDED" and event and event["args"]["endpoint"] == endpoint,
              "Register again with the same token: the same endpoint again", event)

        for what, args in [("a malformed vapid", dict(service=SERVICE, token=str(uuid.uuid4()), vapid="abc")),
                           ("a service the caller does not own", dict(service="ai.kindly.Other", token=str(uuid.uuid4()))),
                           ("a token sent as bytes", dict(service=SERVICE, token={"bytes": base64.b64encode(b"t").decode()})),
                           ("a token of 101 bytes", dict(service=SERVICE, token="t" * 101))]:
            answer = connection.call("Register", **args)
            check(answer and answer["answer"].get("success") == "REGISTRATION_FAILED" and answer["answer"].get("reason"),
                  f"{what}: REGISTRATION_FAILED", answer)
        check(connection.expect("NewEndpoint", timeout=0.3) is None, "no NewEndpoint after a failed Register")

        answer = connection.call("Unregister", token=token)
        check(answer and answer["answer"] == {}, "Unregister: {}", answer)
        event = connection.expect("Unregistered")
        check(event and event["args"] == {"token": token}, "Unregistered with the token", event)
        check(push().status_code == 410, "the endpoint is gone after Unregister: 410")
    finally:
        connection.close()

    with open(os.path.join(os.environ["KINDLY_PUSH_TEST_UNIFIEDPUSH_DIR"], "calls.jsonl")) as f:
        calls = [json.loads(line) for line in f]
    out = {c["method"]: c for c in calls if c["direction"] == "out"}
    check([c["method"] for c in calls if c["direction"] == "in"] == ["Register"] * 6 + ["Unregister"]
          and out["NewEndpoint"].get("reply") == {} and out["Message"].get("reply") == {"id": message_id}
          and out["Message"]["args"]["message"]["length"] == len(delivered) and out["Unregistered"].get("reply") == {},
          "calls.jsonl has every call in and out with the connector's answers", json.dumps(calls)[:2000])


def main():
    if sys.argv[1:2] == ["--connector"]:
        connector(sys.argv[2])
        return 0
    return run(__file__, "with-unifiedpush-distributor", "KINDLY_PUSH_TEST_UNIFIEDPUSH_DISTRIBUTOR", inside)


if __name__ == "__main__":
    sys.exit(main())
