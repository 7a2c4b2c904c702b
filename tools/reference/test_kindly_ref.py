#!/usr/bin/env python3
"""Tests of kindly_ref itself: the hand-written primitives and the CLI contract
(exit codes, output formats) that the Swift test suite relies on.

    python3 -m unittest discover -s tools/reference -p 'test_*.py'
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kindly_ref as k  # noqa: E402

REF = [sys.executable, str(HERE / "kindly_ref.py")]
VECTOR_DIR = HERE.parents[1] / "TestVectors"


def run(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(REF + args, input=stdin, capture_output=True, timeout=60)


def load_vectors(name: str) -> list:
    doc = k.parse_json((VECTOR_DIR / name).read_text("utf-8"), keep_duplicates=True)
    return doc.values_of("vectors")[0]


def field(obj: k.JsonObject, name: str):
    return obj.values_of(name)[0]


def sodium_unpad_ok(buf: bytes, blocksize: int) -> int | None:
    """libsodium's sodium_unpad transliterated (constant-time bit tricks and all),
    to check that kindly_ref.unpad judges padding exactly as it does."""
    if len(buf) < blocksize or blocksize <= 0:
        return None
    mask = (1 << 64) - 1   # size_t arithmetic
    acc = pad_len = valid = 0
    for i in range(blocksize):
        c = buf[len(buf) - 1 - i]
        is_barrier = ((((acc - 1) & mask) & ((pad_len - 1) & mask) & (((c ^ 0x80) - 1) & mask)) >> 8) & 1
        acc |= c
        pad_len |= i & ((1 + ~is_barrier) & mask)
        valid |= is_barrier
    return len(buf) - 1 - pad_len if valid else None


class Primitives(unittest.TestCase):
    def test_unpad_matches_sodium_unpad(self):
        rng = __import__("random").Random(7)
        cases = [bytes(64), b"\x80" + bytes(63), bytes(63) + b"\x80", b"x" * 64, b"x" * 63 + b"\x80" + bytes(64)]
        for _ in range(3000):
            size = rng.choice((64, 128))
            buf = bytearray(rng.choice((0, 0, 0x80, 1, 0xff)) for _ in range(size))
            cut = rng.randrange(size + 1)
            buf[cut:] = bytes(size - cut)
            if cut < size and rng.random() < 0.7:
                buf[cut] = 0x80
            cases.append(bytes(buf))
        for buf in cases:
            want = sodium_unpad_ok(buf, 64)
            got = k.unpad(buf)
            self.assertEqual(want, None if got is None else len(got), buf.hex())

    def test_pad_then_unpad(self):
        for size in range(0, 200):
            data = os.urandom(size)
            padded = k.pad(data)
            self.assertEqual(len(padded) % 64, 0)
            self.assertGreater(len(padded), size)
            self.assertEqual(k.unpad(padded), data)

    def test_base64_accepts_every_canonical_spelling(self):
        for size in range(0, 70):
            data = os.urandom(size)
            for text in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
                text = text.decode()
                self.assertEqual(k.b64decode_canonical(text), data)
                self.assertEqual(k.b64decode_canonical(text.rstrip("=")), data)

    def test_base64_refuses_non_canonical(self):
        for text in ("A", "AB=", "ABC==", "AAAA=", "AAAA====", "AB", "AAB", "A+_A", "AA AA", "AA\nAA",
                     "AA=A", "=", "AAAA\n", "ＡＡＡＡ", "AA%3D"):
            with self.assertRaises(ValueError, msg=repr(text)):
                k.b64decode_canonical(text)

    def test_numbers_are_exact(self):
        one = ("1", "1.0", "1e0", "10e-1", "0.1e1", "1E+0", "100e-2")
        for lexeme in one:
            self.assertTrue(k.JsonNumber(lexeme).is_one(), lexeme)
        for lexeme in ("-1", "1.0000000000000000000001", "0.99999999999999999999", "11e-1", "1e1", "0"):
            self.assertFalse(k.JsonNumber(lexeme).is_one(), lexeme)
        self.assertEqual(k.JsonNumber("1.5e1").integer(), 15)
        self.assertIsNone(k.JsonNumber("15e-1").integer())
        self.assertEqual(k.JsonNumber("-0").integer(), 0)
        self.assertIsNone(k.JsonNumber("1e-999999999999999999999").integer())
        self.assertEqual(k.JsonNumber("1" + "0" * 5000).lexeme[:2], "10")   # over int()'s 4300 digits

    def test_x25519_all_zero_is_returned_not_raised(self):
        self.assertEqual(k.x25519(os.urandom(32), bytes(32)), bytes(32))


def wycheproof(name: str) -> dict:
    """A Wycheproof file from TestVectors/wycheproof/ or, failing that, ../shared/wycheproof/."""
    for folder in (VECTOR_DIR / "wycheproof", HERE.parents[2] / "shared" / "wycheproof"):
        if (folder / name).exists():
            return json.loads((folder / name).read_text("utf-8"))
    raise unittest.SkipTest(f"{name} not found")


class Wycheproof(unittest.TestCase):
    """The two crypto libraries, through kindly_ref's own wrappers, on every Wycheproof case."""

    def test_x25519(self):
        cases = [t for g in wycheproof("x25519_test.json")["testGroups"] for t in g["tests"]]
        self.assertGreater(len(cases), 100)
        for t in cases:
            # Every Wycheproof X25519 case, "acceptable" ones included, states the RFC 7748 result.
            got = k.x25519(bytes.fromhex(t["private"]), bytes.fromhex(t["public"]))
            self.assertEqual(got.hex(), t["shared"], t["tcId"])

    def test_xchacha20_poly1305(self):
        groups = wycheproof("xchacha20_poly1305_test.json")["testGroups"]
        cases = [t for g in groups for t in g["tests"] if len(t["iv"]) == 48 and len(t["key"]) == 64]
        self.assertGreater(len(cases), 100)
        for t in cases:
            key, nonce, aad = (bytes.fromhex(t[f]) for f in ("key", "iv", "aad"))
            sealed = bytes.fromhex(t["ct"] + t["tag"])
            opened = k.aead_decrypt(key, nonce, aad, sealed)
            if t["result"] == "valid":
                self.assertEqual(opened, bytes.fromhex(t["msg"]), t["tcId"])
                self.assertEqual(k.aead_encrypt(key, nonce, aad, bytes.fromhex(t["msg"])), sealed, t["tcId"])
            else:
                self.assertIsNone(opened, t["tcId"])


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = run(["keygen"])
        assert out.returncode == 0, out.stderr
        cls.key = json.loads(out.stdout)

    def test_keygen_format(self):
        self.assertEqual(set(self.key), {"kid", "public_key", "secret_key"})
        for value in self.key.values():
            self.assertNotIn("=", value)
        pk = k.b64decode_canonical(self.key["public_key"])
        self.assertEqual(k.b64decode_canonical(self.key["kid"]), k.key_id(pk))
        again = run(["keygen", "--secret-key", self.key["secret_key"]])
        self.assertEqual(json.loads(again.stdout), self.key)

    def seal(self, plaintext: dict, *extra: str) -> subprocess.CompletedProcess:
        return run(["seal", "--public-key", self.key["public_key"], *extra], json.dumps(plaintext).encode())

    def test_round_trip_visible_and_silent(self):
        plaintext = {"chat_id": "c-1", "title": "Ánna / 👋", "body": "Hi!", "sent_at": 1700000000}
        for mode in ("visible", "silent"):
            sealed = self.seal(plaintext, "--mode", mode)
            self.assertEqual(sealed.returncode, 0, sealed.stderr)
            text = sealed.stdout.decode()
            payload = json.loads(text)
            self.assertEqual(text.rstrip("\n"), json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
            self.assertEqual(list(payload), ["aps", "kindly"])
            self.assertEqual(list(payload["kindly"]), ["v", "kid", "epk", "n", "ct"])
            self.assertEqual(payload["kindly"]["kid"], self.key["kid"])
            if mode == "silent":
                self.assertEqual(payload["aps"], {"content-available": 1})
            else:
                self.assertEqual(payload["aps"], {"alert": {"title": "New message", "body": "Open the app to read it"},
                                                  "mutable-content": 1, "sound": "default"})
            opened = run(["decrypt", "--secret-key", self.key["secret_key"]], sealed.stdout)
            self.assertEqual(opened.returncode, 0, opened.stderr)
            self.assertEqual(json.loads(opened.stdout), plaintext)

    def test_placeholder(self):
        sealed = self.seal({"chat_id": "c", "title": "t", "body": "b"},
                           "--placeholder-title", "T", "--placeholder-body", "B")
        self.assertEqual(json.loads(sealed.stdout)["aps"]["alert"], {"title": "T", "body": "B"})

    def test_seal_reproduces_a_sealing_vector(self):
        vector = load_vectors("ok-basic.json")[0]
        sk = field(vector, "device_secret_key")
        pk = json.loads(run(["keygen", "--secret-key", sk]).stdout)["public_key"]
        sealed = run(["seal", "--public-key", pk, "--ephemeral-secret-key", field(vector, "ephemeral_secret_key"),
                      "--nonce", field(vector, "nonce"), "--verbatim"], field(vector, "plaintext").encode())
        self.assertEqual(sealed.returncode, 0, sealed.stderr)
        self.assertEqual(sealed.stdout.decode().rstrip("\n"), k.dumps(field(vector, "apns")))

    def test_seal_limit_is_4096_bytes(self):
        vectors = load_vectors("sizes.json")
        vector = next(v for v in vectors if field(v, "description").startswith("visible push of exactly 4096"))
        apns = field(vector, "apns")
        alert = field(field(apns, "aps"), "alert")
        pk = json.loads(run(["keygen", "--secret-key", field(vector, "device_secret_key")]).stdout)["public_key"]
        args = ["seal", "--public-key", pk, "--ephemeral-secret-key", field(vector, "ephemeral_secret_key"),
                "--nonce", field(vector, "nonce"), "--verbatim", "--placeholder-body", field(alert, "body")]
        sealed = run(args, field(vector, "plaintext").encode())
        self.assertEqual(sealed.returncode, 0, sealed.stderr)
        self.assertEqual(len(sealed.stdout.rstrip(b"\n")), 4096)
        over = run(args[:-1] + [field(alert, "body") + "."], field(vector, "plaintext").encode())
        self.assertEqual(over.returncode, 65)
        self.assertEqual(over.stdout, b"")
        self.assertTrue(over.stderr.startswith(b"kindly-ref: bad_input: "), over.stderr)

    def test_seal_bad_input(self):
        for plaintext in (b"[]", b"{}", b'{"chat_id":"","title":"t","body":"b"}', b'{"chat_id":"c","title":"t"}',
                          b'{"chat_id":"c","title":"t","body":"b","sent_at":1.5}', b"\xff", b"not json",
                          b'{"chat_id":"c","title":"t","body":"b","body":"b"}', b"x" * (64 * 1024 + 1)):
            out = run(["seal", "--public-key", self.key["public_key"]], plaintext)
            self.assertEqual(out.returncode, 65, plaintext[:40])
            self.assertTrue(out.stderr.startswith(b"kindly-ref: bad_input: "), out.stderr)

    def test_usage_is_64(self):
        for args in ([], ["frobnicate"], ["seal"], ["decrypt"], ["seal", "--public-key", "AAAA"],
                     ["decrypt", "--secret-key", self.key["secret_key"], "--bogus"],
                     ["seal", "--public-key", self.key["public_key"], "--mode", "loud"]):
            out = run(args, b"{}")
            self.assertEqual(out.returncode, 64, args)
            self.assertTrue(out.stderr.startswith(b"kindly-ref: usage: "), out.stderr)

    def test_decrypt_bad_input(self):
        for document in (b"", b"[]", b'"kindly"', b"\xff{}", b"{", b'{"a":NaN}', b"\xef\xbb\xbf{}",
                         b'{"x":"' + b"a" * (64 * 1024) + b'"}'):
            out = run(["decrypt", "--secret-key", self.key["secret_key"]], document)
            self.assertEqual(out.returncode, 65, document[:20])
            self.assertEqual(out.stdout, b"")

    def test_decrypt_exit_code_for_every_reason(self):
        codes = {}
        for path in sorted(VECTOR_DIR.glob("*.json")):
            for vector in load_vectors(path.name):
                expected = field(vector, "expected")
                reason = field(expected, "reason") if field(expected, "result") == "error" else "ok"
                codes.setdefault(reason, vector)
        self.assertEqual(set(codes), {"ok", *k.DECRYPT_REASONS})
        for reason, vector in codes.items():
            out = run(["decrypt", "--secret-key", field(vector, "device_secret_key")],
                      k.dumps(field(vector, "apns")).encode())
            self.assertEqual(out.returncode, 0 if reason == "ok" else k.EXIT_CODES[reason], reason)
            if reason != "ok":
                self.assertEqual(out.stdout, b"")
                self.assertTrue(out.stderr.startswith(f"kindly-ref: {reason}: ".encode()), out.stderr)

    def test_key_files(self):
        sealed = self.seal({"chat_id": "c", "title": "t", "body": "b"})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "key.json"
            path.write_text(json.dumps(self.key))
            other = json.loads(run(["keygen"]).stdout)
            out = run(["decrypt", "--secret-key", other["secret_key"], "--key-file", str(path)], sealed.stdout)
            self.assertEqual(out.returncode, 0, out.stderr)   # the right key among several
            out = run(["seal", "--key-file", str(path)], b'{"chat_id":"c","title":"t","body":"b"}')
            self.assertEqual(out.returncode, 0, out.stderr)
            out = run(["decrypt", "--key-file", str(Path(tmp) / "missing.json")], sealed.stdout)
            self.assertEqual(out.returncode, 74)


if __name__ == "__main__":
    unittest.main()
