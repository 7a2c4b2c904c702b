#!/usr/bin/env python3
"""The FCM stand-in's self-test: shows that tools/fcm/fcm_test_server.py answers a correct sender
as Google does and refuses what Google refuses, with a client of its own (PyPI `cryptography` signs
the RS256 assertion, `httpx` speaks HTTP/2 over TLS), independent of the Swift sender.

Checks: the key file is Google's shape (0600, token_uri the server's); the JWT bearer grant gives
a Bearer token; a wrong signature, aud or scope is 400 invalid_grant; a good message is 200 with
a name; a `notification` member, a data value that is not a string, a kindly_push of 3990 bytes
(3989 passes), a ttl without "s", priority "high", an unknown member are 400 INVALID_ARGUMENT in
Google's shape; another project is 403; a wrong bearer is 401; the script's 404 UNREGISTERED and
429 QUOTA_EXCEEDED with Retry-After come on their registration tokens; SIGUSR2 revokes the token
(401, then a new one works); a client without h2 is refused; received.jsonl has every request
with the decoded document and never an access token.

Usage: tools/fcm/selftest.py (runs itself inside tools/with-fcm-server with its script); prints
one line per check, exits 1 on the first failure.
"""

import json
import os
import signal
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from selftest_support import b64url, checker, run  # noqa: E402

SCRIPT = {
    "answers": {"gone-device": [{"status": 404}], "busy-device": [{"status": 429, "retry_after": 7}]},
}
check = checker("fcm")


def assertion(account, key=None, **changes):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    key = key or serialization.load_pem_private_key(account["private_key"].encode(), password=None)
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT", "kid": account["private_key_id"]}
    claims = {"iss": account["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
              "aud": account["token_uri"], "iat": now, "exp": now + 3600}
    claims.update(changes)
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def inside():
    import httpx
    from cryptography.hazmat.primitives.asymmetric import rsa

    base = os.environ["KINDLY_PUSH_TEST_FCM_URL"]
    context = ssl.create_default_context(cafile=os.environ["KINDLY_PUSH_TEST_FCM_CA"])
    key_file = os.environ["KINDLY_PUSH_TEST_FCM_SERVICE_ACCOUNT"]
    project = os.environ["KINDLY_PUSH_TEST_FCM_PROJECT_ID"]
    with open(key_file) as f:
        account = json.load(f)
    check(os.stat(key_file).st_mode & 0o777 == 0o600, "the key file is mode 0600")
    check(account["type"] == "service_account" and account["token_uri"] == f"{base}/token"
          and account["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
          and {"project_id", "private_key_id", "client_email", "client_id", "auth_uri"} <= set(account),
          "the key file is Google's shape, its token_uri the server's")

    client = httpx.Client(http2=True, verify=context)

    def token(jwt, grant="urn:ietf:params:oauth:grant-type:jwt-bearer"):
        return client.post(account["token_uri"], data={"grant_type": grant, "assertion": jwt})

    answer = token(assertion(account))
    body = answer.json()
    check(answer.status_code == 200 and answer.http_version == "HTTP/2" and body["token_type"] == "Bearer"
          and body["expires_in"] == 3599 and body["access_token"], "the JWT bearer grant gives a token over HTTP/2", answer.text)
    access = body["access_token"]
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for what, jwt in [("a signature by another key", assertion(account, key=stranger)),
                      ("another aud", assertion(account, aud="https://oauth2.googleapis.com/token")),
                      ("another scope", assertion(account, scope="https://www.googleapis.com/auth/cloud-platform")),
                      ("exp two hours ahead", assertion(account, exp=int(time.time()) + 7200))]:
        answer = token(jwt)
        check(answer.status_code == 400 and answer.json()["error"] == "invalid_grant", f"{what}: 400 invalid_grant", answer.text)
    answer = token(assertion(account), grant="client_credentials")
    check(answer.status_code == 400 and answer.json()["error"] == "unsupported_grant_type", "another grant_type: 400")

    url = f"{base}/v1/projects/{project}/messages:send"
    document = json.dumps({"v": 3, "kid": "k1", "ct": "AAAA"}, separators=(",", ":"))

    def send(message, bearer=None, to=url):
        return client.post(to, json={"message": message}, headers={"authorization": f"Bearer {bearer or access}"})

    def good(fcm_token="device-1", **android):
        message = {"token": fcm_token, "data": {"kindly_push": document}}
        if android:
            message["android"] = android
        return message

    answer = send(good(priority="HIGH", ttl="3600s", collapse_key="c-1"))
    check(answer.status_code == 200 and answer.json()["name"].startswith(f"projects/{project}/messages/"),
          "a good message: 200 with its name", answer.text)

    def refused(message, what, status=400, code="INVALID_ARGUMENT", **options):
        answer = send(message, **options)
        error = answer.json().get("error", {})
        codes = [d.get("errorCode") for d in error.get("details", [])]
        check(answer.status_code == status and error.get("code") == status and (code is None or codes == [code]),
              f"{what}: {status} {code or error.get('status')}", answer.text)

    with_notification = good()
    with_notification["notification"] = {"title": "placeholder"}
    refused(with_notification, "a notification member")
    refused({"token": "device-1", "data": {"kindly_push": {"v": 3}}}, "a data value that is not a string")
    refused({"token": "device-1", "data": {"kindly_push": document, "extra": "x"}}, "a second data key")
    padded = json.dumps({"v": 3, "pad": "x" * (3989 - 16)}, separators=(",", ":"))
    check(len(padded) == 3989, "the budget's edge document is 3989 bytes", str(len(padded)))
    answer = send({"token": "device-1", "data": {"kindly_push": padded}})
    check(answer.status_code == 200, "a kindly_push of 3989 bytes: 200", answer.text)
    refused({"token": "device-1", "data": {"kindly_push": padded[:-2] + "x\"}"}}, "a kindly_push of 3990 bytes")
    refused(good(ttl="3600"), "a ttl without its unit")
    refused(good(priority="high"), "priority high in lowercase")
    refused(dict(good(), apns={}), "a member the contract does not send (apns)")
    refused(good(), "another project", status=403, code=None, to=f"{base}/v1/projects/someone-else/messages:send")
    refused(good(), "a wrong bearer token", status=401, code=None, bearer="ya29.not-issued")
    refused(good("gone-device"), "the script's gone device", status=404, code="UNREGISTERED")
    answer = send(good("busy-device"))
    check(answer.status_code == 429 and answer.headers.get("retry-after") == "7"
          and answer.json()["error"]["details"][0]["errorCode"] == "QUOTA_EXCEEDED", "the script's 429 with Retry-After 7", answer.text)
    check(send(good("gone-device")).status_code == 200, "a script's step is used once")

    os.kill(int(os.environ["KINDLY_PUSH_TEST_FCM_PID"]), signal.SIGUSR2)
    time.sleep(0.2)
    refused(good(), "a revoked token (SIGUSR2)", status=401, code=None)
    access = token(assertion(account)).json()["access_token"]
    check(send(good()).status_code == 200, "a new token after the revocation: 200")

    http1 = httpx.Client(http1=True, http2=False, verify=context)
    try:
        http1.post(account["token_uri"], data={"grant_type": "x"})
        check(False, "a client without h2 is refused")
    except httpx.HTTPError:
        check(True, "a client without h2 is refused")

    with open(os.path.join(os.environ["KINDLY_PUSH_TEST_FCM_DIR"], "received.jsonl")) as f:
        text = f.read()
    records = [json.loads(line) for line in text.splitlines()]
    sends = [r for r in records if r.get("kind") == "send"]
    check(len([r for r in records if r.get("kind") == "token"]) == 7 and len(sends) == 16
          and any("no ALPN" in r.get("note", "") for r in records), "received.jsonl has every request and the refused connection",
          f"{len(records)} records")
    first = sends[0]
    check(first["status"] == 200 and first["document"] == json.loads(document) and first["fcm_token"] == "device-1"
          and first["headers"]["authorization"] == "Bearer <token 1>" and first["protocol"] == "h2",
          "a record has the decoded document, the token's number and the protocol", json.dumps(first))
    check(access not in text and body["access_token"] not in text and account["private_key"].split("\n")[1] not in text,
          "no access token and no key in the records")


def main():
    return run(__file__, "with-fcm-server", "KINDLY_PUSH_TEST_FCM_URL", inside, SCRIPT)


if __name__ == "__main__":
    sys.exit(main())
