#!/usr/bin/env python3
"""A stand-in for a Web Push service (RFC 8030) that checks VAPID (RFC 8292), for the tests of
`kindly-push send` to Web Push and of the UnifiedPush distributor stand-in (wire format,
section 9.4).

Browsers' and UnifiedPush's push services cannot be reached from a test machine, so this one
behaves as RFC 8030 and RFC 8292 say and as Mozilla's autopush answers: TLS on loopback, HTTP/2
(ALPN h2, on PyPI's `h2` through tools/lib/stand_in_http.py) and HTTP/1.1 (ALPN http/1.1, or no
ALPN: what `requests` and so pywebpush speak), with

- `POST /subscribe`, body {} or {"vapid": KEY} (the application server's public key, an
  uncompressed P-256 point in unpadded base64url, 87 characters): 201 {"id", "endpoint"} and
  `Location: ENDPOINT`; the endpoint is https://127.0.0.1:PORT/push/ID, ID 20 random bytes in
  base64url (as the UnifiedPush spec recommends), or the body's "id" (a test's chosen id, for
  the script's answers); a subscription made with a key takes pushes
  signed by that key only. `DELETE /push/ID` ends a subscription (204): its pushes then get 410;
- `POST /push/ID`, checked in this order: the subscription (404 unknown, 410 ended); the
  `authorization: vapid t=JWT, k=KEY` header (401 when missing or malformed, its JWT header not
  {"typ": "JWT", "alg": "ES256"} (typ optional), k not a P-256 point, the ES256 signature not
  k's, aud not the endpoint's origin https://127.0.0.1:PORT, exp not a number in the future
  and at most 24 h ahead, sub neither mailto: nor https:; 403 when the subscription has a key and
  k is another); `TTL` (400 when missing or not a whole number >= 0); `content-encoding`
  aes128gcm (415 otherwise); `urgency` very-low, low, normal or high (400 otherwise); `topic` 1
  to 32 characters of the base64url alphabet (400 otherwise); the body, 1 to 4096 bytes (400
  empty, 413 over); then 201 with `Location: https://127.0.0.1:PORT/message/MID` and `TTL`
  echoed. A refusal's body is autopush's JSON {"code", "errno", "error", "message"};
- faults on demand from a JSON script (--script): "answers": {SUBSCRIPTION_ID: [STEP, ...]}: each
  push to that subscription that passes the checks takes the next step, {"status": 404|410|400|
  413|429|500|503, "retry_after": SECONDS (optional)}; and stand_in_http's "delay_ms",
  "max_streams", "goaway_after", "alpn" (["h2"]: a service without HTTP/1.1).
- the hand-over to a subscriber (the UnifiedPush distributor stand-in): each accepted message is
  written to DIR/messages/ID/N.bin (N = 1, 2, ... per subscription; written whole, then renamed
  into place, so a reader never sees half a file) with DIR/messages/ID/N.json beside it
  ({"id": MID, "ttl", "urgency", "topic"}, written first). The subscriber polls the folder; no
  connection to hold open, nothing lost when it starts late.
- everything recorded, one JSON line per request, in DIR/received.jsonl: {"connection",
  "stream", "protocol", "method", "path", "subscription", "headers" (the VAPID JWT kept: it
  proves nothing beyond its exp), "body_base64", "vapid" ({"header", "claims", "k"} decoded),
  "ece" (the aes128gcm header read, never checked: {"rs", "idlen", "keyid_is_p256_point",
  "salt_base64", "ciphertext_length"}),
  "verdict" (why it was refused, or "accepted"), "status", "message_id", "time"}.

Usage:
  push_service.py --make-credentials DIR     the TLS certificate
  push_service.py --dir DIR [--script FILE] [--port PORT]
The service writes its port to DIR/port once it listens, and stops on SIGTERM (SIGUSR1: GOAWAY on
every HTTP/2 connection). Nothing but loopback is ever listened on.
"""

import base64
import json
import os
import re
import secrets
import sys
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stand_in_http  # noqa: E402

BODY_LIMIT = 4096
URGENCIES = ("very-low", "low", "normal", "high")
ERRNO = {400: 110, 401: 109, 403: 109, 404: 102, 410: 103, 413: 104, 415: 110, 429: 999, 500: 999, 503: 999}


def p256_key(text):
    """The public key of an uncompressed P-256 point in unpadded base64url; raises ValueError."""
    raw = stand_in_http.b64url_decode(text)
    if len(raw) != 65 or raw[0] != 4:
        raise ValueError("not an uncompressed P-256 point (65 bytes, 0x04 first)")
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)


class Refusal(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class PushService(stand_in_http.Records):
    def __init__(self, folder, script):
        self.folder = folder
        self.script = script
        self.origin = None
        self.subscriptions = {}  # id -> {"vapid": key text or None, "ended": bool, "count": int}
        self.answers = {sid: list(steps) for sid, steps in script.get("answers", {}).items()}
        super().__init__(folder)
        os.makedirs(os.path.join(folder, "messages"), exist_ok=True)

    def listening(self, port):
        self.origin = f"https://127.0.0.1:{port}"

    def subscribe(self, request, entry):
        if request.method != "POST":
            raise Refusal(405, "POST /subscribe")
        try:
            document = json.loads(request.body or b"{}")
        except ValueError:
            raise Refusal(400, "the body is a JSON object: {} or {\"vapid\": KEY}")
        if not isinstance(document, dict) or set(document) - {"vapid", "id"}:
            raise Refusal(400, "the body is a JSON object: {} or {\"vapid\": KEY}")
        vapid = document.get("vapid")
        if vapid is not None:
            try:
                if not isinstance(vapid, str) or len(vapid) != 87:
                    raise ValueError("not 87 characters")
                p256_key(vapid)
            except ValueError as error:
                raise Refusal(400, f"vapid is not a P-256 public key: {error}")
        sid = document.get("id") or secrets.token_urlsafe(20)
        if not isinstance(sid, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", sid) or sid in self.subscriptions:
            raise Refusal(400, "id is 1 to 64 characters of the base64url alphabet, not taken")
        self.subscriptions[sid] = {"vapid": vapid, "ended": False, "count": 0}
        os.makedirs(os.path.join(self.folder, "messages", sid), exist_ok=True)
        entry["subscription"] = sid
        endpoint = f"{self.origin}/push/{sid}"
        return 201, [("location", endpoint), ("content-type", "application/json")], \
            json.dumps({"id": sid, "endpoint": endpoint, "vapid": vapid}).encode()

    def check_vapid(self, authorization, subscription, entry):
        match = re.fullmatch(r"vapid\s+(.*)", authorization or "", re.IGNORECASE)
        if not match:
            raise Refusal(401, "Missing or malformed Authorization: vapid t=JWT, k=KEY")
        parameters = {}
        for part in match.group(1).split(","):
            name, equals, value = part.strip().partition("=")
            if not equals or name.strip().lower() in parameters:
                raise Refusal(401, "Malformed Authorization: vapid t=JWT, k=KEY")
            parameters[name.strip().lower()] = value.strip()
        if set(parameters) != {"t", "k"}:
            raise Refusal(401, "Authorization: vapid takes t and k, once each")
        try:
            key = p256_key(parameters["k"])
        except ValueError as error:
            raise Refusal(401, f"k is not a P-256 public key: {error}")
        try:
            signing_input, header, claims, signature = stand_in_http.jws_parts(parameters["t"])
        except ValueError:
            raise Refusal(401, "t is not a JWS of three base64url parts")
        entry["vapid"] = {"header": header, "claims": claims, "k": parameters["k"]}
        if not isinstance(header, dict) or header.get("alg") != "ES256" or header.get("typ", "JWT") != "JWT" \
                or set(header) - {"alg", "typ"}:
            raise Refusal(401, "the JWT's header is {\"typ\": \"JWT\", \"alg\": \"ES256\"}")
        if len(signature) != 64:
            raise Refusal(401, "an ES256 signature is 64 bytes (r || s)")
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            key.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise Refusal(401, "the JWT's signature is not k's")
        if not isinstance(claims, dict):
            raise Refusal(401, "the JWT's claims are a JSON object")
        if claims.get("aud") != self.origin:
            raise Refusal(401, f"aud is {json.dumps(claims.get('aud'))}, not the endpoint's origin {self.origin}")
        exp, now = claims.get("exp"), time.time()
        if type(exp) is not int or exp <= now or exp > now + 24 * 3600:
            raise Refusal(401, "exp is a whole number of seconds in the future, at most 24 hours ahead")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https:")):
            raise Refusal(401, "sub is a mailto: or https: URI")
        if subscription["vapid"] is not None and parameters["k"] != subscription["vapid"]:
            raise Refusal(403, "k is not the key the subscription was made with")

    def push(self, request, entry, sid):
        subscription = self.subscriptions.get(sid)
        if subscription is None:
            raise Refusal(404, "No such subscription")
        if subscription["ended"]:
            raise Refusal(410, "The subscription has ended")
        if request.method == "DELETE":
            subscription["ended"] = True
            entry["verdict"] = "ended"
            return 204, [], b""
        if request.method != "POST":
            raise Refusal(405, "POST or DELETE")
        headers = request.headers
        self.check_vapid(headers.get("authorization"), subscription, entry)
        ttl = headers.get("ttl")
        if ttl is None or not re.fullmatch(r"[0-9]{1,10}", ttl):
            raise Refusal(400, "TTL is required: a whole number of seconds, 0 or more")
        if headers.get("content-encoding") != "aes128gcm":
            raise Refusal(415, "Content-Encoding is aes128gcm (RFC 8291)")
        urgency = headers.get("urgency", "normal")
        if urgency not in URGENCIES:
            raise Refusal(400, "Urgency is very-low, low, normal or high")
        topic = headers.get("topic")
        if topic is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", topic):
            raise Refusal(400, "Topic is 1 to 32 characters of the base64url alphabet")
        if not request.body:
            raise Refusal(400, "an empty body: a message is 1 to 4096 bytes")
        if len(request.body) > BODY_LIMIT:
            raise Refusal(413, f"the body is {len(request.body)} bytes, at most {BODY_LIMIT}")
        entry["ece"] = self.ece_header(request.body)
        steps = self.answers.get(sid)
        if steps:
            step = steps.pop(0)
            status = step["status"]
            extra = [("retry-after", str(step["retry_after"]))] if "retry_after" in step else []
            entry["verdict"] = "scripted"
            return status, extra + [("content-type", "application/json")], self.error_body(status, "scripted")
        subscription["count"] += 1
        number = subscription["count"]
        mid = secrets.token_urlsafe(16)
        folder = os.path.join(self.folder, "messages", sid)
        with open(os.path.join(folder, f"{number}.json"), "w") as f:
            json.dump({"id": mid, "ttl": int(ttl), "urgency": urgency, "topic": topic}, f)
        with open(os.path.join(folder, f"{number}.bin.tmp"), "wb") as f:
            f.write(request.body)
        os.rename(os.path.join(folder, f"{number}.bin.tmp"), os.path.join(folder, f"{number}.bin"))
        entry["verdict"] = "accepted"
        entry["message_id"] = mid
        entry["message_file"] = f"messages/{sid}/{number}.bin"
        return 201, [("location", f"{self.origin}/message/{mid}"), ("ttl", str(int(ttl)))], b""

    @staticmethod
    def ece_header(body):
        """The RFC 8188 header of an aes128gcm body, for the record: what a push service never
        checks (it cannot decrypt), but section 9.4 fixes (record size 4096, the keyid the sender's
        ephemeral P-256 key, one record) and a test may assert."""
        if len(body) < 21:
            return {"complete": False}
        idlen = body[20]
        keyid = body[21:21 + idlen]
        try:
            key_ok = idlen == 65 and p256_key(base64.urlsafe_b64encode(keyid).rstrip(b"=").decode()) is not None
        except ValueError:
            key_ok = False
        return {"complete": len(body) >= 21 + idlen, "salt_base64": base64.b64encode(body[:16]).decode(),
                "rs": int.from_bytes(body[16:20], "big"), "idlen": idlen, "keyid_is_p256_point": key_ok,
                "ciphertext_length": max(0, len(body) - 21 - idlen)}

    @staticmethod
    def error_body(status, message):
        return json.dumps({"code": status, "errno": ERRNO.get(status, 999),
                           "error": stand_in_http.REASONS.get(status, "Error"), "message": message}).encode()

    def handle(self, request):
        path = request.path.split("?")[0]
        entry = {"connection": request.connection, "stream": request.stream, "protocol": request.protocol,
                 "method": request.method, "path": path, "headers": dict(request.header_list),
                 "body_base64": base64.b64encode(request.body).decode(), "time": int(time.time())}
        try:
            if path == "/subscribe":
                status, headers, body = self.subscribe(request, entry)
                entry["verdict"] = "subscribed"
            elif path.startswith("/push/"):
                entry["subscription"] = path[len("/push/"):]
                status, headers, body = self.push(request, entry, entry["subscription"])
            else:
                raise Refusal(404, "Not found")
        except Refusal as refusal:
            status, headers, body = refusal.status, [("content-type", "application/json")], \
                self.error_body(refusal.status, refusal.message)
            entry["verdict"] = refusal.message
        entry["status"] = status
        self.record(entry)
        return status, headers, body


async def main_async(arguments):
    script = stand_in_http.load_script(arguments.script)
    service = PushService(arguments.dir, script)
    await stand_in_http.serve(arguments.dir, script, service.handle, service.record, port=arguments.port,
                              alpn=("h2", "http/1.1"), on_listening=service.listening)


if __name__ == "__main__":
    sys.exit(stand_in_http.command_line(__doc__, "the certificate's folder; the port, the records and the messages go there",
                                        stand_in_http.make_certificate, main_async, clock=False))
