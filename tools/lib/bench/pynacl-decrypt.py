#!/usr/bin/env python3
"""What a user would write instead of `kindly-push decrypt --jsonl`: PyNaCl (libsodium) and the
standard library. Reads sealed APNs pushes, one per line, on stdin; writes each decrypted
payload as one compact JSON line on stdout (an error object for a push that fails).

usage: pynacl-decrypt.py KEY_FILE < pushes.jsonl > payloads.jsonl
"""
import base64
import hashlib
import json
import sys

from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_decrypt, crypto_scalarmult, sodium_unpad
from nacl.exceptions import CryptoError

LABEL = b"kindly-push/v1"


def b64(text):
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def main():
    with open(sys.argv[1]) as file:
        key = json.load(file)
    secret, public = b64(key["secret_key"]), b64(key["public_key"])
    out = sys.stdout
    for line in sys.stdin.buffer:
        try:
            envelope = json.loads(line)["kindly"]
            if envelope["v"] != 1:
                raise ValueError("unsupported_version")
            kid, epk, nonce, ct = (b64(envelope[name]) for name in ("kid", "epk", "n", "ct"))
            shared = crypto_scalarmult(secret, epk)
            derived = hashlib.blake2b(LABEL + shared + epk + public, digest_size=32).digest()
            padded = crypto_aead_xchacha20poly1305_ietf_decrypt(ct, LABEL + kid, nonce, derived)
            payload = json.loads(sodium_unpad(padded, 64))
            out.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")
        except (ValueError, KeyError, TypeError, CryptoError) as error:
            out.write(json.dumps({"error": {"code": "failed", "message": str(error)}}) + "\n")


if __name__ == "__main__":
    main()
