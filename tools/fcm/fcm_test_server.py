#!/usr/bin/env python3
"""A stand-in for Firebase Cloud Messaging's HTTP v1 API and Google's OAuth 2.0 token endpoint,
for the tests of `kindly-push send` to FCM (wire format, section 9.3).

FCM cannot be reached from a test machine, so this server behaves as Google documents it
("Send a message using FCM HTTP v1 API", "Using OAuth 2.0 for Server to Server Applications",
the FCM error codes): HTTP/2 over TLS (ALPN h2 only) on loopback, built on tools/lib/stand_in_http.py
(PyPI's `h2`), with

- a service account JSON key file as Google issues it (type, project_id, private_key_id,
  private_key: RSA 2048 PKCS#8 PEM, client_email, client_id, auth_uri, token_uri, ...), mode
  0600, written by the server itself once it listens (DIR/service-account.json: its token_uri is
  https://127.0.0.1:PORT/token, and the port is known only then);
- `POST /token`, the JWT bearer grant (RFC 7523), form-encoded
  grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT: the RS256 assertion is
  verified with the service account's public key (PyPI `cryptography`); its header is
  {"alg": "RS256", "typ": "JWT"} with an optional "kid" that must be the private_key_id; its
  claims are iss = client_email, scope = https://www.googleapis.com/auth/firebase.messaging,
  aud = token_uri, iat within 60 s of now, exp after now and at most iat + 3600 (an optional
  "sub" must be client_email; any other claim is refused). Answer {"access_token", "expires_in":
  3599, "token_type": "Bearer"}; a refusal is Google's 400 {"error": "invalid_grant",
  "error_description"} (unsupported_grant_type, invalid_request for a malformed form);
- `POST /v1/projects/PROJECT_ID/messages:send` with `authorization: Bearer ACCESS_TOKEN` (an
  unknown, expired or revoked token: 401 UNAUTHENTICATED; another project: 403
  PERMISSION_DENIED, as Google answers a token of one project used on another) and a JSON body
  exactly as section 9.3: {"message": {"token", "data": {"kindly_push": STRING},
  "android": {"priority": "HIGH"|"NORMAL", "ttl": "Ns", "collapse_key": STRING}}}, each android
  member optional. Anything else is refused with 400 INVALID_ARGUMENT in Google's error shape
  ({"error": {"code", "message", "status", "details": [{"@type":
  "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode"}]}}): a `notification`
  member or any other member the contract does not send, a data key other than kindly_push, a
  data value that is not a string, a kindly_push over 3989 bytes or that is not a JSON object,
  a ttl not whole seconds ("3600s") or over 28 days, a priority other than HIGH or NORMAL;
- 200 {"name": "projects/P/messages/ID"};
- faults on demand from a JSON script (--script):
  "answers": {FCM_TOKEN: [STEP, ...]}: each send to that registration token takes the next step,
  {"status": 404} (UNREGISTERED), 400 (INVALID_ARGUMENT), 403 (SENDER_ID_MISMATCH), 429
  (QUOTA_EXCEEDED), 500 (INTERNAL), 503 (UNAVAILABLE), 401 (UNAUTHENTICATED), with an optional
  "retry_after" (the Retry-After header) and "error_code" (another errorCode);
  "token_lifetime": SECONDS: the access tokens' lifetime, and their expires_in (3599 by default);
  "revoke_after": N: every access token issued so far is revoked after the N-th accepted
  message, so the next message gets 401 (a sender refreshes its token once on a 401);
  "token_answers": [STEP, ...]: the next token requests answered so ({"status": 500} or
  {"status": 400, "error": "invalid_grant"}), whatever they carry;
  "token_delay_ms": N: each token request answered N ms late (and recorded then), its
  connection's other streams served meanwhile;
  and stand_in_http's "delay_ms", "max_streams", "goaway_after", "alpn".
  SIGUSR2 revokes every access token issued so far; SIGUSR1 sends GOAWAY on every connection.
- everything received recorded, one JSON line per request, in DIR/received.jsonl: {"kind":
  "token"|"send"|"other", "connection", "stream", "method", "path", "headers" (the
  authorization header's token replaced by "<token N>", N the order it was issued in, or
  "<unknown>"), "body", "message" (the body's JSON), "fcm_token", "document" (kindly_push,
  decoded), "status", "answer" (the answer's JSON), "time"}; a token request records the
  assertion's decoded header and claims ("assertion") instead of the assertion, and the token
  it issued as "<token N>" ("issued": N). No access token or key is ever recorded.

Usage:
  fcm_test_server.py --make-credentials DIR     the TLS certificate and the service account's key
  fcm_test_server.py --dir DIR [--script FILE] [--port PORT] [--clock-file FILE]
The server writes DIR/service-account.json, then its port to DIR/port once it listens, and stops
on SIGTERM. Nothing but loopback is ever listened on.
"""

import asyncio
import json
import os
import re
import secrets
import signal
import sys
import time
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stand_in_http  # noqa: E402

PROJECT_ID = "kindly-push-test"
CLIENT_EMAIL = f"kindly-push-sender@{PROJECT_ID}.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
DOCUMENT_BUDGET = 3989
MAX_TTL = 28 * 24 * 3600
ERROR_OF = {
    400: ("INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", None, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
          "login cookie or other valid authentication credential."),
    403: ("PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch"),
    404: ("NOT_FOUND", "UNREGISTERED", "Requested entity was not found."),
    429: ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for quota metric 'Send requests'."),
    500: ("INTERNAL", "INTERNAL", "Internal error encountered."),
    503: ("UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable."),
}


def make_credentials(folder):
    """The TLS certificate (openssl) and the service account's RSA 2048 key, DIR/service-account.key
    (PKCS#8 PEM, 0600): the server puts it into the JSON key file once it knows its port."""
    stand_in_http.make_certificate(folder)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path = os.path.join(folder, "service-account.key")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(pem)


def google_error(status, message, error_code=None, google_status=None):
    default_status, default_code, _ = ERROR_OF.get(status, ("UNKNOWN", None, ""))
    error = {"code": status, "message": message, "status": google_status or default_status}
    code = error_code if error_code is not None else default_code
    if code and status != 401:
        error["details"] = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]
    return {"error": error}


class Refusal(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message


class FCM(stand_in_http.Records):
    def __init__(self, folder, script, clock_file):
        self.folder = folder
        self.script = script
        with open(os.path.join(folder, "service-account.key"), "rb") as f:
            self.pem = f.read()
        self.public_key = serialization.load_pem_private_key(self.pem, password=None).public_key()
        self.private_key_id = secrets.token_hex(20)
        self.token_uri = None
        self.answers = {token: list(steps) for token, steps in script.get("answers", {}).items()}
        self.token_answers = list(script.get("token_answers", []))
        self.lifetime = int(script.get("token_lifetime", 3599))
        self.token_delay = int(script.get("token_delay_ms", 0))
        self.tokens = {}  # access token -> {"number", "expires", "revoked"}
        self.accepted = 0
        super().__init__(folder, clock_file)

    def write_key_file(self, port):
        """DIR/service-account.json, as the Google Cloud console gives it (mode 0600)."""
        self.token_uri = f"https://127.0.0.1:{port}/token"
        document = {
            "type": "service_account",
            "project_id": PROJECT_ID,
            "private_key_id": self.private_key_id,
            "private_key": self.pem.decode(),
            "client_email": CLIENT_EMAIL,
            "client_id": str(100000000000000000000 + secrets.randbelow(10 ** 20)),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
                                    + urllib.parse.quote(CLIENT_EMAIL),
            "universe_domain": "googleapis.com",
        }
        path = os.path.join(self.folder, "service-account.json")
        with open(os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        os.rename(path + ".tmp", path)

    def revoke_all(self):
        for token in self.tokens.values():
            token["revoked"] = True

    # The token endpoint -------------------------------------------------------------------

    def check_assertion(self, assertion):
        """(header, claims) of a good assertion; raises Refusal with Google's description."""
        try:
            signing_input, header, claims, signature = stand_in_http.jws_parts(assertion)
        except ValueError:
            raise Refusal("Invalid JWT: the assertion is not a JWS of three base64url parts")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise Refusal("Invalid JWT: header and claims must be JSON objects")
        extra = set(header) - {"alg", "typ", "kid"}
        if header.get("alg") != "RS256" or header.get("typ") != "JWT" or extra:
            raise Refusal(f"Invalid JWT header: {json.dumps(header)} (alg RS256, typ JWT, kid only)")
        if "kid" in header and header["kid"] != self.private_key_id:
            raise Refusal("Invalid JWT Signature.")
        try:
            self.public_key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise Refusal("Invalid JWT Signature.")
        unknown = set(claims) - {"iss", "scope", "aud", "iat", "exp", "sub"}
        if unknown:
            raise Refusal(f"Invalid JWT: claims not allowed here: {sorted(unknown)}")
        if claims.get("iss") != CLIENT_EMAIL or claims.get("sub", CLIENT_EMAIL) != CLIENT_EMAIL:
            raise Refusal("Invalid grant: account not found")
        if claims.get("scope") != SCOPE:
            raise Refusal(f"Invalid JWT: scope must be {SCOPE}")
        if claims.get("aud") != self.token_uri:
            raise Refusal(f"Invalid JWT: aud must be {self.token_uri}")
        iat, exp = claims.get("iat"), claims.get("exp")
        now = self.now()
        if (type(iat) is not int or type(exp) is not int or abs(iat - now) > 60 or exp <= now
                or exp <= iat or exp - iat > 3600):
            raise Refusal("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                          "Check your iat and exp values in the JWT claim.")
        return header, claims

    def token(self, request, entry):
        fields = None
        if request.method != "POST":
            return 405, {"error": "invalid_request", "error_description": "POST only"}
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            return 400, {"error": "invalid_request", "error_description": "Content-Type must be application/x-www-form-urlencoded"}
        try:
            fields = urllib.parse.parse_qs(request.body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
        except (ValueError, UnicodeDecodeError):
            return 400, {"error": "invalid_request", "error_description": "a form-encoded body"}
        if any(len(values) != 1 for values in fields.values()) or set(fields) - {"grant_type", "assertion"}:
            return 400, {"error": "invalid_request", "error_description": "grant_type and assertion, once each"}
        grant = fields.get("grant_type", [""])[0]
        if grant != GRANT_TYPE:
            return 400, {"error": "unsupported_grant_type", "error_description": f"Invalid grant_type: {grant}"}
        if "assertion" not in fields:
            return 400, {"error": "invalid_request", "error_description": "Missing required parameter: assertion"}
        try:
            header, claims = self.check_assertion(fields["assertion"][0])
        except Refusal as refusal:
            return 400, {"error": "invalid_grant", "error_description": refusal.message}
        entry["assertion"] = {"header": header, "claims": claims}
        if self.token_answers:
            step = self.token_answers.pop(0)
            status = step["status"]
            if status == 400:
                return 400, {"error": step.get("error", "invalid_grant"), "error_description": step.get("description", "scripted")}
            return status, {"error": "internal_failure", "error_description": "scripted"}
        access_token = "ya29.c." + secrets.token_urlsafe(96)
        self.tokens[access_token] = {"number": len(self.tokens) + 1, "expires": self.now() + self.lifetime, "revoked": False}
        entry["issued"] = len(self.tokens)
        return 200, {"access_token": access_token, "expires_in": self.lifetime, "token_type": "Bearer"}

    # The send endpoint --------------------------------------------------------------------

    def check_message(self, body):
        """(fcm_token, document) of a good body; raises Refusal."""
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as error:
            raise Refusal(f"Invalid JSON payload received. {error}")
        if not isinstance(document, dict) or set(document) != {"message"} or not isinstance(document["message"], dict):
            raise Refusal('Invalid JSON payload received. The body is {"message": {...}} and nothing else.')
        message = document["message"]
        if "notification" in message:
            raise Refusal("Invalid JSON payload received. A Kindly push is data only: no \"notification\" member.")
        unknown = set(message) - {"token", "data", "android"}
        if unknown:
            raise Refusal(f"Invalid JSON payload received. Unknown name(s) {sorted(unknown)} at 'message' (not in section 9.3).")
        token = message.get("token")
        if not isinstance(token, str) or not re.fullmatch(r"[A-Za-z0-9_:.-]{1,4096}", token):
            raise Refusal("The registration token is not a valid FCM registration token")
        data = message.get("data")
        if not isinstance(data, dict) or set(data) != {"kindly_push"}:
            raise Refusal("Invalid JSON payload received. message.data is {\"kindly_push\": STRING} and nothing else.")
        if not all(isinstance(value, str) for value in data.values()):
            raise Refusal("Invalid value at 'message.data[0].value' (TYPE_STRING)")
        kindly_push = data["kindly_push"]
        if len(kindly_push.encode()) > DOCUMENT_BUDGET:
            raise Refusal(f"Android message is too big: kindly_push is {len(kindly_push.encode())} bytes, at most {DOCUMENT_BUDGET}")
        try:
            decoded = json.loads(kindly_push)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise Refusal("kindly_push is not a JSON object (the document, compact, as one string)")
        if "android" in message:
            android = message["android"]
            if not isinstance(android, dict) or set(android) - {"priority", "ttl", "collapse_key"}:
                raise Refusal("Invalid JSON payload received. message.android has priority, ttl and collapse_key only.")
            if "priority" in android and android["priority"] not in ("HIGH", "NORMAL"):
                raise Refusal(f"Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), {json.dumps(android['priority'])}")
            if "ttl" in android:
                ttl = android["ttl"]
                if not isinstance(ttl, str) or not re.fullmatch(r"(0|[1-9][0-9]*)s", ttl):
                    raise Refusal(f"Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), {json.dumps(ttl)}")
                if int(ttl[:-1]) > MAX_TTL:
                    raise Refusal("message.android.ttl is at most 2419200s (28 days)")
            if "collapse_key" in android and (not isinstance(android["collapse_key"], str) or not android["collapse_key"]):
                raise Refusal("Invalid value at 'message.android.collapse_key' (TYPE_STRING)")
        return token, decoded

    def send(self, request, entry, project):
        authorization = request.headers.get("authorization", "")
        scheme, _, value = authorization.partition(" ")
        known = self.tokens.get(value) if scheme == "Bearer" else None
        if known is None or known["revoked"] or known["expires"] <= self.now():
            return 401, google_error(401, ERROR_OF[401][2])
        if project != PROJECT_ID:
            return 403, google_error(403, f"Permission 'cloudmessaging.messages.create' denied on resource "
                                          f"'//cloudresourcemanager.googleapis.com/projects/{project}' (or it may not exist).",
                                     error_code="", google_status="PERMISSION_DENIED")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return 400, google_error(400, "Content-Type must be application/json")
        try:
            token, document = self.check_message(request.body)
        except Refusal as refusal:
            return 400, google_error(400, refusal.message)
        entry["fcm_token"] = token
        entry["document"] = document
        steps = self.answers.get(token)
        if steps:
            step = steps.pop(0)
            status = step["status"]
            if "retry_after" in step:
                entry["retry_after"] = str(step["retry_after"])
            return status, google_error(status, ERROR_OF.get(status, ("", "", "scripted"))[2], step.get("error_code"))
        self.accepted += 1
        if self.script.get("revoke_after") == self.accepted:
            self.revoke_all()
        return 200, {"name": f"projects/{PROJECT_ID}/messages/0:{int(time.time() * 1e6)}%{secrets.token_hex(8)}"}

    def handle(self, request):
        entry = {"connection": request.connection, "stream": request.stream, "protocol": request.protocol,
                 "method": request.method, "path": request.path, "headers": self.recorded_headers(request),
                 "time": self.now()}
        path = request.path.split("?")[0]
        if path == "/token" and self.token_delay and not getattr(request, "delayed", False):
            async def later():
                await asyncio.sleep(self.token_delay / 1000)
                request.delayed = True
                return self.handle(request)
            return later()
        match = re.fullmatch(r"/v1/projects/([^/]+)/messages:send", path)
        extra = []
        if path == "/token":
            entry["kind"] = "token"
            status, answer = self.token(request, entry)
        elif match and request.method == "POST":
            entry["kind"] = "send"
            entry["body"] = request.body.decode("utf-8", "replace")
            try:
                entry["message"] = json.loads(request.body)
            except ValueError:
                pass
            status, answer = self.send(request, entry, match.group(1))
            if "retry_after" in entry:
                extra.append(("retry-after", entry["retry_after"]))
            if status == 401:
                extra.append(("www-authenticate", 'Bearer realm="https://accounts.google.com/", error="invalid_token"'))
        else:
            entry["kind"] = "other"
            status, answer = 404, google_error(404, f"The requested URL {path} was not found on this server.",
                                               error_code="", google_status="NOT_FOUND")
        entry["status"] = status
        entry["answer"] = answer
        if "access_token" in answer:
            entry["answer"] = dict(answer, access_token=f"<token {entry['issued']}>")
        self.record(entry)
        body = json.dumps(answer, indent=2).encode()
        return status, [("content-type", "application/json; charset=UTF-8")] + extra, body

    def recorded_headers(self, request):
        headers = {}
        for name, value in request.header_list:
            if name == "authorization":
                scheme, _, token = value.partition(" ")
                known = self.tokens.get(token)
                value = f"{scheme} <token {known['number']}>" if known else f"{scheme} <unknown>"
            headers[name] = value
        return headers


async def main_async(arguments):
    script = stand_in_http.load_script(arguments.script)
    fcm = FCM(arguments.dir, script, arguments.clock_file)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, fcm.revoke_all)
    await stand_in_http.serve(arguments.dir, script, fcm.handle, fcm.record, port=arguments.port,
                              alpn=("h2",), on_listening=fcm.write_key_file)


if __name__ == "__main__":
    sys.exit(stand_in_http.command_line(__doc__, "the credentials' folder; the key file, the port and the records go there",
                                        make_credentials, main_async))
