#!/usr/bin/env python3
"""The Web Push service stand-in's self-test: shows that tools/webpush/push_service.py takes what a
real sender sends and refuses what RFC 8030 and RFC 8292 refuse, with independent clients: PyPI
`pywebpush` (RFC 8291 encryption by `http_ece`, VAPID by `py-vapid`, over `requests`: HTTP/1.1)
and `httpx` (HTTP/2), independent of the Swift sender.

Checks: a subscription made with a VAPID key; pywebpush's message to it is 201 with a Location
and the TTL echoed, recorded, handed over as messages/ID/1.bin, and `http_ece` decrypts the
recorded body with the subscription's keys (made here with `cryptography`) back to the text sent;
the same over HTTP/2; a VAPID aud of another origin, an exp 25 hours ahead, a sub that is neither
mailto: nor https:, a signature by another key than k are 401; another VAPID key than the
subscription's is 403; no TTL is 400; Content-Encoding aesgcm is 415; an unknown Urgency and a
33-character Topic are 400; a body of 4097 bytes is 413 (4096 passes); the script's 429 with
Retry-After and 410 come on their subscription; an ended subscription is 410, an unknown one 404.

Usage: tools/webpush/selftest.py (runs itself inside tools/with-webpush-service with its script);
prints one line per check, exits 1 on the first failure.
"""

import base64
import json
import os
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from selftest_support import b64url, checker, run, vapid_key  # noqa: E402

SCRIPT = {"answers": {"scripted-subscription": [{"status": 429, "retry_after": 30}, {"status": 410}]}}
check = checker("webpush")


def subscription_keys():
    """A browser's subscription keys: a P-256 key pair and a 16-byte auth secret."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return private, {"p256dh": b64url(public), "auth": b64url(os.urandom(16))}


def es256_jwt(private_key, claims):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    signing_input = f"{b64url(json.dumps({'typ': 'JWT', 'alg': 'ES256'}).encode())}.{b64url(json.dumps(claims).encode())}"
    r, s = decode_dss_signature(private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def inside():
    import http_ece
    import httpx
    import requests
    from pywebpush import WebPushException, webpush

    origin = os.environ["KINDLY_PUSH_TEST_WEBPUSH_URL"]
    ca = os.environ["KINDLY_PUSH_TEST_WEBPUSH_CA"]
    folder = os.environ["KINDLY_PUSH_TEST_WEBPUSH_DIR"]
    session = requests.Session()
    session.verify = ca
    session.trust_env = False  # REQUESTS_CA_BUNDLE in the environment would win over verify
    h2 = httpx.Client(http2=True, verify=ssl.create_default_context(cafile=ca))

    vapid, vapid_public = vapid_key()
    answer = h2.post(f"{origin}/subscribe", json={"vapid": vapid_public})
    check(answer.status_code == 201 and answer.json()["endpoint"].startswith(f"{origin}/push/")
          and answer.headers["location"] == answer.json()["endpoint"], "a subscription with a VAPID key: 201", answer.text)
    sid, endpoint = answer.json()["id"], answer.json()["endpoint"]
    private, keys = subscription_keys()
    subscription = {"endpoint": endpoint, "keys": keys}
    text = json.dumps({"v": 3, "ct": "the document"}, separators=(",", ":"))

    def push(data=text, key=None, claims=None, **options):
        try:
            return webpush(subscription, data, vapid_private_key=key or vapid,
                           vapid_claims=dict(claims or {"sub": "mailto:tests@kindly.invalid"}),
                           requests_session=session, **options)
        except WebPushException as error:
            return error.response

    answer = push(ttl=60, headers={"Urgency": "high", "Topic": "c-1"})
    check(answer.status_code == 201 and answer.headers["location"].startswith(f"{origin}/message/")
          and answer.headers["ttl"] == "60", "pywebpush's message: 201 with a Location, TTL echoed", answer.text)
    with open(os.path.join(folder, "received.jsonl")) as f:
        record = [json.loads(line) for line in f][-1]
    body = base64.b64decode(record["body_base64"])
    check(record["verdict"] == "accepted" and record["protocol"] == "http/1.1" and record["vapid"]["claims"]["aud"] == origin
          and record["headers"]["urgency"] == "high" and record["ece"]["rs"] == 4096 and record["ece"]["keyid_is_p256_point"],
          "the message is recorded with its verdict, VAPID claims and aes128gcm header", json.dumps(record))
    with open(os.path.join(folder, "messages", sid, "1.bin"), "rb") as f:
        check(f.read() == body, "the message is handed over as messages/ID/1.bin")
    plain = http_ece.decrypt(body, private_key=private, auth_secret=base64.urlsafe_b64decode(keys["auth"] + "=="),
                             version="aes128gcm")
    check(plain.decode() == text, "http_ece decrypts the recorded body with the subscription's keys")

    # HTTP/2, with pywebpush's encryption and VAPID headers.
    from pywebpush import WebPusher
    encoded = WebPusher(subscription).encode(text.encode())["body"]

    def raw(body=encoded, signer=None, claims=None, **headers):
        # The VAPID header signed here with `cryptography` (py-vapid refuses the bad claims tried).
        signer = signer or vapid
        jwt = es256_jwt(signer.private_key, claims or {"aud": origin, "sub": "https://kindly.invalid/",
                                                       "exp": int(time.time()) + 3600})
        k = vapid_public if signer is vapid else other_public
        sent = {"content-encoding": "aes128gcm", "ttl": "0", "authorization": f"vapid t={jwt}, k={k}"}
        sent.update({k.replace("_", "-"): v for k, v in headers.items()})
        sent = {k: v for k, v in sent.items() if v is not None}
        return h2.post(endpoint, content=body, headers=sent)

    other, other_public = vapid_key()
    answer = raw()
    check(answer.status_code == 201 and answer.http_version == "HTTP/2", "the same over HTTP/2: 201", answer.text)

    def refused(answer, status, what):
        check(answer.status_code == status and answer.json()["code"] == status, f"{what}: {status}", answer.text)

    refused(push(claims={"sub": "mailto:tests@kindly.invalid", "aud": "https://push.example.net"}), 401, "a VAPID aud of another origin")
    refused(raw(claims={"aud": origin, "sub": "mailto:t@kindly.invalid", "exp": int(time.time()) + 25 * 3600}), 401,
            "a VAPID exp 25 hours ahead")
    refused(raw(claims={"aud": origin, "sub": "tests@kindly.invalid", "exp": int(time.time()) + 60}), 401,
            "a VAPID sub without mailto: or https:")
    forged = raw(signer=other).request.headers["authorization"].replace(other_public, vapid_public)
    refused(h2.post(endpoint, content=encoded, headers={"content-encoding": "aes128gcm", "ttl": "0", "authorization": forged}),
            401, "a JWT signed by another key than k")
    refused(push(key=other), 403, "another VAPID key than the subscription's")
    refused(raw(ttl=None), 400, "no TTL")
    refused(raw(ttl="-1"), 400, "a negative TTL")
    refused(push(content_encoding="aesgcm"), 415, "Content-Encoding aesgcm")
    refused(raw(urgency="urgent"), 400, "an unknown Urgency")
    refused(raw(topic="a" * 33), 400, "a Topic of 33 characters")
    refused(raw(body=b"\0" * 4097), 413, "a body of 4097 bytes")
    check(raw(body=b"\0" * 4096).status_code == 201, "a body of 4096 bytes: 201")

    answer = h2.post(f"{origin}/subscribe", json={"id": "scripted-subscription"})
    scripted = {"endpoint": answer.json()["endpoint"], "keys": keys}
    first = None
    try:
        webpush(scripted, text, vapid_private_key=vapid, vapid_claims={"sub": "mailto:t@kindly.invalid"}, requests_session=session)
    except WebPushException as error:
        first = error.response
    check(first is not None and first.status_code == 429 and first.headers.get("retry-after") == "30",
          "the script's 429 with Retry-After", getattr(first, "text", ""))
    try:
        webpush(scripted, text, vapid_private_key=vapid, vapid_claims={"sub": "mailto:t@kindly.invalid"}, requests_session=session)
        second = None
    except WebPushException as error:
        second = error.response
    check(second is not None and second.status_code == 410, "the script's 410 next")

    check(h2.delete(endpoint).status_code == 204, "DELETE ends the subscription")
    refused(raw(), 410, "an ended subscription")
    refused(h2.post(f"{origin}/push/no-such-subscription", content=encoded, headers={"ttl": "0"}), 404, "an unknown subscription")


def main():
    return run(__file__, "with-webpush-service", "KINDLY_PUSH_TEST_WEBPUSH_URL", inside, SCRIPT)


if __name__ == "__main__":
    sys.exit(main())
