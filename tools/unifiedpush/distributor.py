#!/usr/bin/python3
"""A stand-in for a UnifiedPush distributor on the D-Bus session bus, for the tests of the Linux
receiving side (wire format, section 9.4). The system Python on purpose (#!/usr/bin/python3):
python3-dbus and python3-gi (the GLib main loop) are Debian packages that
tools/lib/ensure-dependencies --with-standins installs.

It follows UnifiedPush's D-Bus specification, DBUS 0.3.0 (specifications/dbus.md and
specifications/dbus/org.unifiedpush.{Distributor2,Connector2}.xml of UnifiedPush's
specifications repository): it owns org.unifiedpush.Distributor.kindlytest (--name) and serves
org.unifiedpush.Distributor2 on /org/unifiedpush/Distributor:

- Register(a{sv}: "service" s, "token" s, optional "description" s, optional "vapid" s) -> a{sv}
  {"success": "REGISTRATION_SUCCEEDED"} or {"success": "REGISTRATION_FAILED", "reason":
  INTERNAL_ERROR | NETWORK | ACTION_REQUIRED | VAPID_REQUIRED | UNAUTHORIZED}. Held to the spec:
  every value a string; service a well-known bus name owned by the caller (UNAUTHORIZED
  otherwise); token 1 to 100 bytes and not another service's; description at most 100 bytes;
  vapid 87 characters, an uncompressed P-256 point in base64url; no other key (each refusal
  INTERNAL_ERROR, its cause in calls.jsonl). A new token gets a subscription on the Web Push
  service stand-in (POST /subscribe with the vapid key, so the service then takes only pushes
  signed by it; NETWORK when the service does not answer 201); a known token keeps its endpoint.
  Either way, once Register has answered, the connector's org.unifiedpush.Connector2.NewEndpoint
  (a{sv}: "token", "endpoint") is called on /org/unifiedpush/Connector of the service name.
- Unregister(a{sv}: "token") -> {}: the subscription is ended on the service (DELETE: its pushes
  then get 410), then the connector's Unregistered(a{sv}: "token") is called (for a known token).
- each message the service accepted for a registration (its DIR/messages/ID/N.bin, polled every
  50 ms, in order) is delivered as the connector's Message(a{sv}: "token", "message" ay, the raw
  body, "id" s, the service's message id); its answer must be {"id": the same id}. Every
  urgency is delivered (the device is taken to be on power and Wi-Fi).
The distributor never waits for a connector's answer (the spec's rule): its calls are
asynchronous, their answers or errors recorded when they come. A call to a connector that is
not on the bus (and cannot be started) is recorded with its error, and the message is not
delivered again.

For the tests, org.kindlytest.Control on the same path: Deliver(s token, ay message, s id) calls
the connector's Message for that registration with that body and id, as if the Web Push service
had accepted it (a body no push service would take, too), from the distributor's own name;
HoldEndpoints(b hold) holds every NewEndpoint call from then on (true) until it is released
(false), when the held ones are made in order, so that a test can act between a Register and
its endpoint.

Script (--script, JSON): "register_answers": [{"success": "REGISTRATION_FAILED", "reason":
"NETWORK"}, ...]: the next Register calls answered so (nothing else done); "require_vapid": true:
a Register without vapid gets VAPID_REQUIRED. SIGUSR1: every registration is ended by the
distributor (Unregistered to its connector, as when a user removes it); SIGUSR2: every
registration gets a new endpoint (a new subscription, NewEndpoint again). SIGTERM stops it.

Every call, in and out, is recorded in DIR/calls.jsonl: {"direction": "in"|"out", "method",
"peer" (the caller's unique name, or the service called), "args" (a message's bytes as
"message_base64" and "message_length"), "answer" | "reply" | "error" | "refused", "time"}.

Usage:
  distributor.py --dir DIR --push-url https://127.0.0.1:PORT --push-ca FILE --push-dir DIR
                 [--name kindlytest] [--script FILE]
"""

import argparse
import base64
import json
import os
import re
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

INTERFACE = "org.unifiedpush.Distributor2"
CONNECTOR = "org.unifiedpush.Connector2"
CONTROL = "org.kindlytest.Control"
BUS_NAME = re.compile(r"(?=.{1,255}$)[A-Za-z_-][A-Za-z0-9_-]*(\.[A-Za-z_-][A-Za-z0-9_-]*)+")
REASONS = ("INTERNAL_ERROR", "NETWORK", "ACTION_REQUIRED", "VAPID_REQUIRED", "UNAUTHORIZED")


def plain(value):
    """A D-Bus value as JSON: bytes as base64."""
    if isinstance(value, (dbus.ByteArray, bytes)):
        return {"base64": base64.b64encode(bytes(value)).decode(), "length": len(value)}
    if isinstance(value, dbus.Array) and value.signature == "y":
        return plain(bytes(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (dbus.Boolean, bool)):
        return bool(value)
    if isinstance(value, (int, float)):
        return value
    return str(value)


def valid_vapid(text):
    try:
        raw = base64.urlsafe_b64decode(text + "=")
    except (ValueError, TypeError):
        return False
    if len(text) != 87 or not re.fullmatch(r"[A-Za-z0-9_-]+", text) or len(raw) != 65 or raw[0] != 4:
        return False
    try:
        from cryptography.hazmat.primitives.asymmetric import ec
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    except ImportError:
        pass
    except ValueError:
        return False
    return True


class Distributor(dbus.service.Object):
    def __init__(self, bus, arguments, script):
        super().__init__(bus, "/org/unifiedpush/Distributor")
        self.bus = bus
        self.push_url = arguments.push_url
        self.push_dir = arguments.push_dir
        self.context = ssl.create_default_context(cafile=arguments.push_ca)
        self.register_answers = list(script.get("register_answers", []))
        self.require_vapid = bool(script.get("require_vapid", False))
        self.registrations = {}  # token -> {"service", "endpoint", "subscription", "vapid", "next"}
        self.holding_endpoints = False
        self.held_endpoints = []  # tokens whose NewEndpoint waits for HoldEndpoints(false)
        self.calls = open(os.path.join(arguments.dir, "calls.jsonl"), "a", buffering=1)
        GLib.timeout_add(50, self.poll)

    def record(self, entry):
        entry["time"] = time.time()
        self.calls.write(json.dumps(entry, sort_keys=True) + "\n")

    # The push service -----------------------------------------------------------------------

    def http(self, method, path, body=None):
        request = urllib.request.Request(self.push_url + path, data=body, method=method,
                                         headers={"content-type": "application/json"} if body else {})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=5) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (OSError, ValueError) as error:
            return None, str(error).encode()

    def subscribe(self, vapid):
        status, body = self.http("POST", "/subscribe", json.dumps({"vapid": vapid} if vapid else {}).encode())
        if status != 201:
            return None
        document = json.loads(body)
        return document["id"], document["endpoint"]

    # Calls to the connector -----------------------------------------------------------------

    def call_connector(self, service, method, args):
        """Calls METHOD on the connector without waiting (the spec's rule); its answer is recorded."""
        entry = {"direction": "out", "method": method, "peer": service, "args": plain(args)}

        def reply(answer):
            entry["reply"] = plain(answer)
            if method == "Message" and plain(answer) != {"id": args["id"]}:
                entry["refused"] = "Message's answer is not {\"id\": the message's id}"
            self.record(entry)

        def error(failure):
            entry["error"] = f"{failure.get_dbus_name()}: {failure.get_dbus_message()}"
            self.record(entry)

        try:
            proxy = self.bus.get_object(service, "/org/unifiedpush/Connector", introspect=False)
            proxy.get_dbus_method(method, CONNECTOR)(dbus.Dictionary(args, signature="sv"),
                                                     reply_handler=reply, error_handler=error)
        except dbus.exceptions.DBusException as failure:
            # No connector owns the name and none can be started for it: recorded, and the
            # distributor goes on (an exception here would end the GLib source that called it).
            error(failure)
        return False

    def new_endpoint(self, token):
        if self.holding_endpoints:
            self.held_endpoints.append(token)
            return False
        registration = self.registrations.get(token)
        if registration is None:
            return False
        self.call_connector(registration["service"], "NewEndpoint",
                            {"token": dbus.String(token), "endpoint": dbus.String(registration["endpoint"])})
        return False

    def poll(self):
        for token, registration in list(self.registrations.items()):
            folder = os.path.join(self.push_dir, "messages", registration["subscription"])
            while os.path.exists(os.path.join(folder, f"{registration['next']}.bin")):
                number = registration["next"]
                registration["next"] += 1
                with open(os.path.join(folder, f"{number}.bin"), "rb") as f:
                    message = f.read()
                with open(os.path.join(folder, f"{number}.json")) as f:
                    meta = json.load(f)
                self.call_connector(registration["service"], "Message", {
                    "token": dbus.String(token), "message": dbus.ByteArray(message), "id": dbus.String(meta["id"])})
        return True

    # Distributor2 ---------------------------------------------------------------------------

    def refuse_register(self, args, sender):
        """None when Register's arguments follow the spec, else (reason, why)."""
        known = {"service", "token", "description", "vapid"}
        if set(args) - known:
            return "INTERNAL_ERROR", f"keys the spec does not define: {sorted(set(args) - known)}"
        if not all(isinstance(value, dbus.String) for value in args.values()):
            return "INTERNAL_ERROR", "every value is a string (s)"
        service, token = args.get("service"), args.get("token")
        if service is None or not BUS_NAME.fullmatch(service):
            return "INTERNAL_ERROR", "service is the connector's well-known bus name"
        if token is None or not 1 <= len(token.encode()) <= 100:
            return "INTERNAL_ERROR", "token is 1 to 100 bytes"
        if len(args.get("description", "").encode()) > 100:
            return "INTERNAL_ERROR", "description is at most 100 bytes"
        if "vapid" in args and not valid_vapid(str(args["vapid"])):
            return "INTERNAL_ERROR", "vapid is an uncompressed P-256 point in base64url (87 characters)"
        if "vapid" not in args and self.require_vapid:
            return "VAPID_REQUIRED", "this distributor requires a VAPID key"
        try:
            owner = self.bus.get_name_owner(service)
        except dbus.DBusException:
            owner = None
        if owner != sender:
            return "UNAUTHORIZED", f"{service} is not owned by the caller {sender}"
        if token in self.registrations and self.registrations[token]["service"] != service:
            return "INTERNAL_ERROR", "the token is another service's"
        return None

    @dbus.service.method(INTERFACE, in_signature="a{sv}", out_signature="a{sv}", sender_keyword="sender")
    def Register(self, args, sender=None):
        entry = {"direction": "in", "method": "Register", "peer": sender, "args": plain(args)}
        answer = {"success": "REGISTRATION_SUCCEEDED"}
        if self.register_answers:
            answer = self.register_answers.pop(0)
            entry["scripted"] = True
        else:
            refusal = self.refuse_register(args, sender)
            if refusal:
                answer = {"success": "REGISTRATION_FAILED", "reason": refusal[0]}
                entry["refused"] = refusal[1]
            else:
                token = str(args["token"])
                if token not in self.registrations:
                    subscription = self.subscribe(str(args["vapid"]) if "vapid" in args else None)
                    if subscription is None:
                        answer = {"success": "REGISTRATION_FAILED", "reason": "NETWORK"}
                        entry["refused"] = "the push service did not make a subscription"
                    else:
                        self.registrations[token] = {
                            "service": str(args["service"]), "subscription": subscription[0], "endpoint": subscription[1],
                            "vapid": str(args.get("vapid", "")), "next": 1}
                if token in self.registrations:
                    # NewEndpoint once Register has answered.
                    GLib.idle_add(self.new_endpoint, token)
        entry["answer"] = answer
        self.record(entry)
        return dbus.Dictionary({k: dbus.String(v) for k, v in answer.items()}, signature="sv")

    @dbus.service.method(INTERFACE, in_signature="a{sv}", out_signature="a{sv}", sender_keyword="sender")
    def Unregister(self, args, sender=None):
        entry = {"direction": "in", "method": "Unregister", "peer": sender, "args": plain(args), "answer": {}}
        token = str(args.get("token", ""))
        registration = self.registrations.get(token)
        if set(args) != {"token"} or not isinstance(args["token"], dbus.String):
            entry["refused"] = "Unregister takes {\"token\": s} only"
        elif registration is None:
            entry["refused"] = "an unknown token"
        else:
            self.end(token)
        self.record(entry)
        return dbus.Dictionary({}, signature="sv")

    @dbus.service.method(CONTROL, in_signature="says", out_signature="")
    def Deliver(self, token, message, id):
        registration = self.registrations.get(str(token))
        if registration is None:
            raise dbus.exceptions.DBusException("no registration has this token",
                                                name="org.kindlytest.Control.Error.UnknownToken")
        self.call_connector(registration["service"], "Message", {
            "token": dbus.String(token), "message": dbus.ByteArray(bytes(message)), "id": dbus.String(id)})

    @dbus.service.method(CONTROL, in_signature="b", out_signature="")
    def HoldEndpoints(self, hold):
        self.holding_endpoints = bool(hold)
        if not self.holding_endpoints:
            held, self.held_endpoints = self.held_endpoints, []
            for token in held:
                self.new_endpoint(token)

    def end(self, token):
        registration = self.registrations.pop(token)
        self.http("DELETE", f"/push/{registration['subscription']}")
        GLib.idle_add(self.call_connector, registration["service"], "Unregistered", {"token": dbus.String(token)})

    def end_all(self):
        for token in list(self.registrations):
            self.end(token)
        return True

    def renew_all(self):
        for token, registration in self.registrations.items():
            subscription = self.subscribe(registration["vapid"] or None)
            if subscription is not None:
                self.http("DELETE", f"/push/{registration['subscription']}")
                registration.update(subscription=subscription[0], endpoint=subscription[1], next=1)
                self.new_endpoint(token)
        return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True, help="where calls.jsonl goes")
    parser.add_argument("--push-url", required=True, help="the Web Push service stand-in's origin")
    parser.add_argument("--push-ca", required=True, help="its certificate")
    parser.add_argument("--push-dir", required=True, help="its folder (messages/ID/N.bin)")
    parser.add_argument("--name", default="kindlytest", help="org.unifiedpush.Distributor.NAME")
    parser.add_argument("--script", help="a JSON file of answers (see the module's text)")
    arguments = parser.parse_args()
    script = {}
    if arguments.script:
        with open(arguments.script) as f:
            script = json.load(f)
    for answer in script.get("register_answers", []):
        if answer.get("success") not in ("REGISTRATION_SUCCEEDED", "REGISTRATION_FAILED") \
                or answer.get("reason", "INTERNAL_ERROR") not in REASONS:
            parser.error(f"register_answers: {answer} is not an answer the spec defines")
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    distributor = Distributor(bus, arguments, script)
    name = dbus.service.BusName(f"org.unifiedpush.Distributor.{arguments.name}", bus, do_not_queue=True)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGINT, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR1, distributor.end_all)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR2, distributor.renew_all)
    loop.run()
    del name
    return 0


if __name__ == "__main__":
    sys.exit(main())
