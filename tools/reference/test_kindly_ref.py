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
            pinned = vector.values_of("pinned_sender_keys")
            senders = [arg for key in (pinned[0] if pinned else []) for arg in ("--sender-key", key)]
            out = run(["decrypt", "--secret-key", field(vector, "device_secret_key"), *senders],
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


class Version2(unittest.TestCase):
    """Wire-format section 7 in kindly_ref: the construction, and the CLI's
    sender-keygen, seal --sender-key-file / --sender-secret-key, decrypt --sender-key."""

    PLAINTEXT = {"chat_id": "c-1", "title": "Anna", "body": "Hi!", "message_id": "m-1", "truncated": True}

    @classmethod
    def setUpClass(cls):
        cls.device = json.loads(run(["keygen"]).stdout)
        out = run(["sender-keygen"])
        assert out.returncode == 0, out.stderr
        cls.sender = json.loads(out.stdout)
        cls.other_sender = json.loads(run(["sender-keygen"]).stdout)

    def seal(self, *extra: str, plaintext=None) -> subprocess.CompletedProcess:
        text = json.dumps(self.PLAINTEXT if plaintext is None else plaintext).encode()
        return run(["seal", "--public-key", self.device["public_key"], *extra], text)

    def decrypt(self, sealed: bytes, *senders: str) -> subprocess.CompletedProcess:
        args = ["decrypt", "--secret-key", self.device["secret_key"]]
        for key in senders:
            args += ["--sender-key", key]
        return run(args, sealed)

    def test_construction_from_the_spec_text(self):
        """Section 7.2 step by step with the libraries called directly (not
        kindly_ref's helpers), against kindly_ref.seal."""
        from Crypto.Cipher import ChaCha20_Poly1305
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
        sk, ssk, esk, nonce = os.urandom(32), os.urandom(32), os.urandom(32), os.urandom(24)

        def pub(secret):
            return X25519PrivateKey.from_private_bytes(secret).public_key().public_bytes_raw()

        def dh(secret, public):
            return X25519PrivateKey.from_private_bytes(secret).exchange(X25519PublicKey.from_public_bytes(public))
        pk, spk, epk = pub(sk), pub(ssk), pub(esk)
        kid = __import__("hashlib").blake2b(pk, digest_size=8).digest()
        sid = __import__("hashlib").blake2b(spk, digest_size=8).digest()
        key = __import__("hashlib").blake2b(b"kindly-push/v2" + dh(esk, pk) + dh(ssk, pk) + epk + pk + spk,
                                           digest_size=32).digest()
        text = b'{"chat_id":"c","title":"t","body":"b"}'
        message = text + b"\x80" + bytes(63 - len(text))
        cipher = ChaCha20_Poly1305.new(key=key, nonce=nonce)
        cipher.update(b"kindly-push/v2" + kid + sid)
        ct, tag = cipher.encrypt_and_digest(message)
        sealed = k.seal(text, pk, esk, nonce, ssk)
        self.assertEqual((sealed.kid, sealed.sid, sealed.epk, sealed.n, sealed.ct), (kid, sid, epk, nonce, ct + tag))
        self.assertEqual(sealed.version, 2)
        self.assertEqual(k.seal(text, pk, esk, nonce).version, 1)
        # ss_s = X25519(ssk, pk) = X25519(sk, spk): the device computes the same secret.
        self.assertEqual(dh(ssk, pk), dh(sk, spk))

    def test_envelope_version_is_exact(self):  # versions 1, 2 and 3 (section 8.2)
        for lexeme, want in (("1", 1), ("1.0", 1), ("2", 2), ("2.0", 2), ("2e0", 2), ("20e-1", 2), ("0.2e1", 2),
                             ("2E+0", 2), ("3", 3), ("3e0", 3), ("30e-1", 3), ("4", None), ("0", None), ("-2", None), ("2.5", None),
                             ("2.0000000000000000000001", None), ("1.9999999999999999999999", None)):
            self.assertEqual(k.envelope_version(k.JsonNumber(lexeme)), want, lexeme)
        for value in ("2", "1", True, None, [2]):
            self.assertIsNone(k.envelope_version(value), value)

    def test_sender_keygen_format(self):
        self.assertEqual(list(self.sender), ["sid", "public_key", "secret_key"])
        spk = k.b64decode_canonical(self.sender["public_key"])
        self.assertEqual(k.b64decode_canonical(self.sender["sid"]), k.sender_id(spk))
        self.assertEqual(spk, k.public_key_of(k.b64decode_canonical(self.sender["secret_key"])))
        again = run(["sender-keygen", "--secret-key", self.sender["secret_key"]])
        self.assertEqual(json.loads(again.stdout), self.sender)

    def test_cli_round_trip_and_untrusted_sender(self):
        sealed = self.seal("--sender-secret-key", self.sender["secret_key"])
        self.assertEqual(sealed.returncode, 0, sealed.stderr)
        payload = json.loads(sealed.stdout)
        self.assertEqual(list(payload["kindly"]), ["v", "kid", "sid", "epk", "n", "ct"])
        self.assertEqual(payload["kindly"]["v"], 2)
        self.assertEqual(payload["kindly"]["sid"], self.sender["sid"])
        self.assertEqual(payload["kindly"]["kid"], self.device["kid"])

        opened = self.decrypt(sealed.stdout, self.sender["public_key"])
        self.assertEqual(opened.returncode, 0, opened.stderr)
        self.assertEqual(json.loads(opened.stdout), self.PLAINTEXT)
        opened = self.decrypt(sealed.stdout, self.other_sender["public_key"], self.sender["public_key"])
        self.assertEqual(opened.returncode, 0, opened.stderr)   # the right key second

        for senders in ([], [self.other_sender["public_key"]]):
            refused = self.decrypt(sealed.stdout, *senders)
            self.assertEqual(refused.returncode, 7, senders)
            self.assertEqual(refused.stdout, b"")
            self.assertTrue(refused.stderr.startswith(b"kindly-ref: untrusted_sender: "), refused.stderr)

    def test_version_1_in_pinned_mode(self):
        sealed = self.seal()
        self.assertEqual(json.loads(sealed.stdout)["kindly"]["v"], 1)
        self.assertEqual(self.decrypt(sealed.stdout).returncode, 0)
        refused = self.decrypt(sealed.stdout, self.sender["public_key"])
        self.assertEqual(refused.returncode, 7)
        self.assertTrue(refused.stderr.startswith(b"kindly-ref: untrusted_sender: "), refused.stderr)

    def test_sender_key_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            sender_file, device_file, bad_file = (Path(tmp) / n for n in ("sender.json", "device.json", "bad.json"))
            sender_file.write_text(json.dumps(self.sender))
            device_file.write_text(json.dumps(self.device))
            bad_file.write_text(json.dumps({**self.sender, "sid": self.other_sender["sid"]}))
            sealed = self.seal("--sender-key-file", str(sender_file))
            self.assertEqual(sealed.returncode, 0, sealed.stderr)
            self.assertEqual(self.decrypt(sealed.stdout, self.sender["public_key"]).returncode, 0)
            # neither kind of key file is accepted where the other is expected (docs/spec/streams.md)
            self.assertEqual(self.seal("--sender-key-file", str(device_file)).returncode, 74)
            out = run(["seal", "--key-file", str(sender_file)], json.dumps(self.PLAINTEXT).encode())
            self.assertEqual(out.returncode, 74)
            out = run(["decrypt", "--key-file", str(sender_file)], sealed.stdout)
            self.assertEqual(out.returncode, 74)
            # a sender key file whose sid names another key
            self.assertEqual(self.seal("--sender-key-file", str(bad_file)).returncode, 74)
            self.assertEqual(self.seal("--sender-key-file", str(Path(tmp) / "missing.json")).returncode, 74)

    def test_values_beginning_with_a_dash(self):
        """base64url keys begin with '-' one time in 64: they are values, not options."""
        sk = next(key for key in (os.urandom(32) for _ in range(100000)) if k.b64url(key).startswith("-"))
        ssk = next(key for key in (os.urandom(32) for _ in range(100000)) if k.b64url(key).startswith("-"))
        device = json.loads(run(["keygen", "--secret-key", k.b64url(sk)]).stdout)
        sender = json.loads(run(["sender-keygen", "--secret-key", k.b64url(ssk)]).stdout)
        sealed = run(["seal", "--public-key", device["public_key"], "--sender-secret-key", k.b64url(ssk),
                      "--placeholder-title", "-x-"], json.dumps(self.PLAINTEXT).encode())
        self.assertEqual(sealed.returncode, 0, sealed.stderr)
        out = run(["decrypt", "--secret-key", k.b64url(sk), "--sender-key", sender["public_key"]], sealed.stdout)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_usage(self):
        for args in (["--sender-secret-key", self.sender["secret_key"], "--sender-key-file", "x"],
                     ["--sender-secret-key", "AAAA"]):
            out = self.seal(*args)
            self.assertEqual(out.returncode, 64, args)
        out = self.decrypt(self.seal().stdout, "not base64!")
        self.assertEqual(out.returncode, 64)
        out = self.decrypt(self.seal().stdout, self.sender["sid"])   # 8 bytes: a sid, not a key
        self.assertEqual(out.returncode, 64)

    def test_seal_refuses_a_low_order_device_key(self):
        out = run(["seal", "--public-key", k.b64url(bytes(32)), "--sender-secret-key", self.sender["secret_key"]],
                  json.dumps(self.PLAINTEXT).encode())
        self.assertEqual(out.returncode, 65)

    def test_truncated_must_be_a_boolean(self):
        for value in (True, False):
            sealed = self.seal("--sender-secret-key", self.sender["secret_key"],
                               plaintext={**self.PLAINTEXT, "truncated": value})
            self.assertEqual(sealed.returncode, 0, sealed.stderr)
        for value in ("yes", 1, None):
            out = self.seal(plaintext={**self.PLAINTEXT, "truncated": value})
            self.assertEqual(out.returncode, 65, value)
            self.assertTrue(out.stderr.startswith(b"kindly-ref: bad_input: "), out.stderr)

    def test_seal_reproduces_version_2_sealing_vectors(self):
        vectors = load_vectors("v2-ok.json")
        vectors = [vectors[0], vectors[1]]   # the visible and the silent push, as seal writes them
        for vector in vectors:
            pk = json.loads(run(["keygen", "--secret-key", field(vector, "device_secret_key")]).stdout)["public_key"]
            apns = field(vector, "apns")
            args = ["seal", "--public-key", pk, "--sender-secret-key", field(vector, "sender_secret_key"),
                    "--ephemeral-secret-key", field(vector, "ephemeral_secret_key"), "--nonce", field(vector, "nonce"),
                    "--verbatim"]
            if not field(apns, "aps").values_of("alert"):
                args += ["--mode", "silent"]
            sealed = run(args, field(vector, "plaintext").encode())
            self.assertEqual(sealed.returncode, 0, sealed.stderr)
            self.assertEqual(sealed.stdout.decode().rstrip("\n"), k.dumps(apns), field(vector, "description"))

    def test_every_v2_file_has_pinned_keys_where_version_2_needs_them(self):
        """Every vector whose envelope says v 2 and decrypts carries pinned_sender_keys."""
        for path in sorted(VECTOR_DIR.glob("v2-*.json")):
            for vector in load_vectors(path.name):
                if field(field(vector, "expected"), "result") == "ok":
                    self.assertTrue(vector.values_of("pinned_sender_keys") or
                                    field(field(field(vector, "apns"), "kindly"), "v") == 1,
                                    field(vector, "description"))


class Version3(unittest.TestCase):
    """Version 3 (section 8) through pyhpke: RFC 9180's own vectors for the suite, and the wire rules."""

    RFC = HERE.parents[1] / "TestVectors" / "hpke" / "rfc9180-x25519-sha256-chachapoly.json"

    def test_pyhpke_reproduces_rfc9180(self):
        for case in json.loads(self.RFC.read_text()):
            h = bytes.fromhex
            sks = None if case["mode"] == 0 else h(case["skSm"])
            eks = k.KEMKeyPair(k.hpke_private(h(case["skEm"])), k.hpke_public(h(case["pkEm"])))
            enc, context = k.HPKE_SUITE.create_sender_context(
                k.hpke_public(h(case["pkRm"])), h(case["info"]), sks=None if sks is None else k.hpke_private(sks), eks=eks)
            self.assertEqual(enc, h(case["enc"]))
            first = case["encryptions"][0]
            self.assertEqual(context.seal(h(first["pt"]), h(first["aad"])), h(first["ct"]))

    def test_seal_and_open_both_modes(self):
        sk, ssk, esk = os.urandom(32), os.urandom(32), os.urandom(32)
        pk, spk = k.public_key_of(sk), k.public_key_of(ssk)
        text = b'{"chat_id":"c-1","title":"Anna","body":"Hi!"}'
        base = k.seal_v3(text, pk, esk)
        self.assertEqual((base.version, base.sid, base.n), (3, None, b""))
        self.assertEqual(base, k.seal_v3(text, pk, esk))   # esk fixes it
        self.assertEqual(list(base.to_json()), ["v", "kid", "enc", "ct"])
        auth = k.seal_v3(text, pk, esk, ssk)
        self.assertEqual(list(auth.to_json()), ["v", "kid", "sid", "enc", "ct"])
        self.assertEqual(k.open_envelope(base, sk), text)
        self.assertEqual(k.open_envelope(auth, sk, spk), text)
        doc = k.parse_document(json.dumps({"kindly": auth.to_json()}).encode())
        self.assertEqual(k.decrypt(doc, [sk], [spk])["body"], "Hi!")
        with self.assertRaises(k.KindlyError) as caught:
            k.decrypt(k.parse_document(json.dumps({"kindly": base.to_json()}).encode()), [sk], [spk])
        self.assertEqual(caught.exception.code, "untrusted_sender")   # mode_base in pinned mode


if __name__ == "__main__":
    unittest.main()
