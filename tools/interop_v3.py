#!/usr/bin/env python3
"""Interop of wire format version 3 (wire-format.md section 8) between the
`kindly-push` binary and an independent HPKE implementation, pyhpke (PyPI, on
`cryptography`; never libsodium): both directions, both modes.

  1. pyhpke seals N random plaintexts in mode_base and N in mode_auth (section
     8.1 written here from the spec, not from kindly_ref); `kindly-push decrypt
     --jsonl` opens every one (mode_auth with the sender pinned) and gives each
     plaintext back exactly.
  2. `kindly-push seal --wire 3 --jsonl` seals N random plaintexts in each mode;
     pyhpke opens every one (OpenBase / OpenAuth with the sender's public key),
     and in mode_auth every open with another sender's public key fails.
  3. The Python backend example of Sources/KindlyPush/KindlyPush.docc/VersionThree.md
     (the code between its `# example:` markers) is run as it is: what it seals
     decrypts with the binary.

    python3 tools/interop_v3.py [--binary PATH] [--count N]      (N >= 200, default 200)

Prints one line per direction and mode, and exits 0 only when everything held.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

ROOT = Path(__file__).resolve().parents[1]
LABEL3 = b"kindly-push/v3"
SUITE = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.CHACHA20_POLY1305)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(public_key: bytes) -> bytes:
    return hashlib.blake2b(public_key, digest_size=8).digest()


def pad(data: bytes) -> bytes:
    padded = data + b"\x80"
    return padded + b"\x00" * (-len(padded) % 64)


def unpad(data: bytes) -> bytes:
    end = data.rstrip(b"\x00")
    assert end.endswith(b"\x80") and len(data) - len(end) < 64, "bad padding"
    return end[:-1]


def private(raw: bytes):
    return KEMKey.from_pyca_cryptography_key(X25519PrivateKey.from_private_bytes(raw))


def public(raw: bytes):
    return KEMKey.from_pyca_cryptography_key(X25519PublicKey.from_public_bytes(raw))


def random_plaintext(rng: random.Random, index: int) -> dict:
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789äöüß€✓👩‍👧\"\\/\n\t"
    body = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 900)))
    message = {"chat_id": f"c-{index}", "title": "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))),
               "body": body}
    if rng.random() < 0.5:
        message["message_id"] = f"m-{rng.randrange(10**9)}"
    if rng.random() < 0.5:
        message["sent_at"] = rng.randrange(2**53)
    if rng.random() < 0.3:
        message["extra"] = rng.choice(["x", 1, True, None])
    return message


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def pyhpke_seal(message: dict, pk: bytes, ssk: bytes | None) -> dict:
    """Section 8.1 with pyhpke: info = LABEL3, aad = LABEL3 || kid (|| sid), m padded."""
    kid = key_id(pk)
    envelope = {"v": 3, "kid": b64url(kid)}
    aad = LABEL3 + kid
    if ssk is not None:
        sid = key_id(X25519PrivateKey.from_private_bytes(ssk).public_key().public_bytes_raw())
        envelope["sid"] = b64url(sid)
        aad += sid
    enc, context = SUITE.create_sender_context(public(pk), LABEL3, sks=None if ssk is None else private(ssk))
    ct = context.seal(pad(compact(message).encode()), aad)   # sequence number 0: single-shot
    envelope.update({"enc": b64url(enc), "ct": b64url(ct)})
    return {"aps": {"content-available": 1}, "kindly": envelope}


def pyhpke_open(push: dict, sk: bytes, spk: bytes | None) -> dict:
    kindly = push["kindly"]
    aad = LABEL3 + unb64(kindly["kid"]) + (unb64(kindly["sid"]) if "sid" in kindly else b"")
    context = SUITE.create_recipient_context(unb64(kindly["enc"]), private(sk), LABEL3,
                                             pks=None if spk is None else public(spk))
    padded = context.open(unb64(kindly["ct"]), aad)
    return json.loads(unpad(padded))


def run(binary: str, args: list[str], lines: list[str]) -> list[str]:
    result = subprocess.run([binary, *args], input="".join(line + "\n" for line in lines).encode(),
                            capture_output=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"interop: {' '.join(args)} exited {result.returncode}: {result.stderr.decode()[:300]}")
    return result.stdout.decode().splitlines()


def doc_example() -> str:
    text = (ROOT / "Sources/KindlyPush/KindlyPush.docc/VersionThree.md").read_text()
    found = re.search(r"# example: start\n(.*?)# example: end\n", text, re.S)
    if not found:
        raise SystemExit("interop: VersionThree.md has no '# example: start' ... '# example: end' block")
    return found.group(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.environ.get("KINDLY_PUSH_BINARY", str(ROOT / ".build/debug/kindly-push")))
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    if args.count < 200:
        parser.error("--count is at least 200")
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    failures = 0
    with tempfile.TemporaryDirectory() as folder:
        device, sender, other = (Path(folder) / name for name in ("device.json", "sender.json", "other.json"))
        subprocess.run([args.binary, "keygen", "--key-file", str(device)], check=True, capture_output=True)
        subprocess.run([args.binary, "sender-keygen", "--key-file", str(sender)], check=True, capture_output=True)
        subprocess.run([args.binary, "sender-keygen", "--key-file", str(other)], check=True, capture_output=True)
        dev, snd, oth = (json.loads(path.read_text()) for path in (device, sender, other))
        sk, pk = unb64(dev["secret_key"]), unb64(dev["public_key"])
        ssk, spk, ospk = unb64(snd["secret_key"]), unb64(snd["public_key"]), unb64(oth["public_key"])

        for mode, sender_key in (("mode_base", None), ("mode_auth", ssk)):
            # 1. pyhpke seals, the binary decrypts.
            messages = [random_plaintext(rng, i) for i in range(args.count)]
            pushes = [compact(pyhpke_seal(m, pk, sender_key)) for m in messages]
            pin = [] if sender_key is None else ["--sender-key", snd["public_key"]]
            outputs = run(args.binary, ["decrypt", "--jsonl", "--key-file", str(device), *pin], pushes)
            bad = sum(1 for m, out in zip(messages, outputs) if json.loads(out) != m) + abs(len(outputs) - len(messages))
            print(f"pyhpke seal -> kindly-push decrypt, {mode}: {len(messages) - bad}/{len(messages)} opened")
            failures += bad
            # 2. The binary seals, pyhpke opens (mode_auth: only with the right sender key).
            messages = [random_plaintext(rng, i) for i in range(args.count)]
            with_sender = [] if sender_key is None else ["--sender-key-file", str(sender)]
            sealed = run(args.binary, ["seal", "--wire", "3", "--jsonl", "--key-file", str(device), *with_sender],
                         [compact(m) for m in messages])
            bad = abs(len(sealed) - len(messages))
            wrong_opened = 0
            for m, line in zip(messages, sealed):
                push = json.loads(line)
                try:
                    if pyhpke_open(push, sk, None if sender_key is None else spk) != m:
                        bad += 1
                except Exception:
                    bad += 1
                if sender_key is not None:
                    try:
                        pyhpke_open(push, sk, ospk)
                        wrong_opened += 1
                    except Exception:
                        pass
                    try:   # nor as mode_base
                        pyhpke_open({"kindly": {k: v for k, v in push["kindly"].items() if k != "sid"}}, sk, None)
                        wrong_opened += 1
                    except Exception:
                        pass
            extra = "" if sender_key is None else f", {wrong_opened} opened with a wrong sender key or none"
            print(f"kindly-push seal --wire 3 -> pyhpke open, {mode}: {len(messages) - bad}/{len(messages)} opened{extra}")
            failures += bad + wrong_opened

        # 3. The documented Python backend example, run as it is.
        scope = {}
        exec(compile(doc_example(), "VersionThree.md example", "exec"), scope)
        for spk_arg, pins in ((None, []), (ssk, ["--sender-key", snd["public_key"]])):
            push = scope["seal_kindly_v3"](pk, {"chat_id": "c-doc", "title": "Anna", "body": "from the docs"}, spk_arg)
            out = run(args.binary, ["decrypt", "--jsonl", "--key-file", str(device), *pins], [json.dumps(push)])
            ok = out and json.loads(out[0]).get("body") == "from the docs"
            print(f"VersionThree.md's Python example, {'mode_auth' if spk_arg else 'mode_base'}: "
                  f"{'decrypts' if ok else 'FAILS: ' + (out[0] if out else 'no output')}")
            failures += 0 if ok else 1
    print("interop v3: ok" if failures == 0 else f"interop v3: {failures} failures")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
