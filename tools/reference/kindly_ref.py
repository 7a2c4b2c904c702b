#!/usr/bin/env python3
"""Independent reference implementation of the Kindly push wire format, versions 1, 2 and 3.

This file is written from /work/shared/spec/wire-format.md alone, so that the
Swift implementation can be checked against something that shares none of its
code and none of its crypto library:

  * X25519            -- PyPI `cryptography`
  * XChaCha20-Poly1305 -- PyPI `pycryptodome` (ChaCha20_Poly1305 with a 24-byte nonce)
  * BLAKE2b           -- Python's hashlib (digest_size is BLAKE2b's own output-length
                         parameter, as the spec asks, not a truncation)
  * HPKE (RFC 9180), version 3 -- PyPI `pyhpke` (on `cryptography`)
  * ISO/IEC 7816-4 padding, canonical base64 and every wire-format rule -- by hand here.

Usage (exit codes are those of docs/spec/streams.md):

  kindly_ref.py keygen [--secret-key B64]
  kindly_ref.py sender-keygen [--secret-key B64]
  kindly_ref.py seal (--public-key B64 | --key-file PATH)
                     [--sender-key-file PATH | --sender-secret-key B64]
                     [--mode visible|silent] [--placeholder-title T] [--placeholder-body B]
                     [--wire 1|2|3] [--ephemeral-secret-key B64 [--nonce B64]] [--verbatim]   < plaintext.json
  kindly_ref.py decrypt (--secret-key B64 | --key-file PATH)...
                        [--sender-key B64]...                                < apns.json

`seal` writes version 1, or version 2 (docs/spec/wire-format.md section 7.2) when given a
sender key; with `--wire 3`, version 3 (section 8: HPKE mode_base, or mode_auth
with a sender key). `decrypt` reads all three versions (sections 7.3 and 8.2);
each `--sender-key` pins one sender public key, and with at least one it reads
in pinned mode.

Python cannot wipe memory (bytes are immutable and may be copied by the
runtime), so unlike the spec's steps 2.8 and 7.2.8 this reference makes no
attempt to wipe esk, ss, ss_e, ss_s or k. It is a test tool, not something to
run with real device or sender keys.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass

from Crypto.Cipher import ChaCha20_Poly1305
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey
from pyhpke.kem_key import KEMKeyPair
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

LABEL = b"kindly-push/v1"
LABEL2 = b"kindly-push/v2"   # docs/spec/wire-format.md section 7
BLOCK_SIZE = 64            # padding block (wire-format 2.6)
TAG_SIZE = 16              # Poly1305 tag appended to the ciphertext
APNS_LIMIT = 4096          # Apple's limit for the whole compact payload
INPUT_LIMIT = 64 * 1024    # docs/spec/streams.md: input over 64 KiB is bad_input
MAX_SAFE_INTEGER = 2**53 - 1

DEFAULT_TITLE = "New message"
DEFAULT_BODY = "Open the app to read it"

# Exit codes of docs/spec/streams.md, keyed by error code.
EXIT_CODES = {
    "not_kindly": 1,
    "unsupported_version": 2,
    "malformed": 3,
    "key_unavailable": 4,
    "authentication_failed": 5,
    "bad_plaintext": 6,
    "untrusted_sender": 7,
    "usage": 64,
    "bad_input": 65,
    "io": 74,
}
# The reasons decrypt can fail with, in the order docs/spec/wire-format.md section 7.3 checks
# them (section 5's order, with untrusted_sender between key_unavailable and
# authentication_failed).
DECRYPT_REASONS = ("not_kindly", "unsupported_version", "malformed", "key_unavailable",
                   "untrusted_sender", "authentication_failed", "bad_plaintext")


class KindlyError(Exception):
    """A failure with one of the codes of docs/spec/streams.md. Messages never hold key material."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# ---------------------------------------------------------------------------
# Base64 decoding is written by hand because the stdlib's is lenient where the
# wire format is not: b64decode drops whitespace and characters outside its
# alphabet (unless validate=True), accepts non-zero trailing bits ('AB=='),
# urlsafe_b64decode takes '+' and '/' too (mixed alphabets), and neither takes
# unpadded input. The wire format wants exactly one reading of every field.
# ---------------------------------------------------------------------------

_COMMON = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_STD_ALPHABET = _COMMON + "+/"
_URL_ALPHABET = _COMMON + "-_"


def b64url(data: bytes) -> str:
    """base64url without padding: how every binary field and key is written
    (encoding has only one possible output, so the stdlib is fine here)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64decode_canonical(text: str) -> bytes:
    """Decode standard or URL-safe base64, padded or not, accepting only the
    canonical form of RFC 4648: one alphabet, padding absent or exactly right,
    nothing but alphabet characters (no whitespace), zero trailing bits.
    Raises ValueError with the reason otherwise."""
    body = text.rstrip("=")
    padding = len(text) - len(body)
    uses_std = "+" in body or "/" in body
    uses_url = "-" in body or "_" in body
    if uses_std and uses_url:
        raise ValueError("mixes the standard and URL-safe alphabets")
    alphabet = _URL_ALPHABET if uses_url else _STD_ALPHABET
    values = []
    for ch in body:
        index = alphabet.find(ch)
        if index < 0:
            # '=' inside the text lands here too: padding only at the end.
            raise ValueError(f"character {ch!r} is not in the base64 alphabet")
        values.append(index)

    tail = len(body) % 4
    if tail == 1:
        raise ValueError("length leaves a single character (6 bits) at the end")
    if padding and padding != (4 - tail) % 4:   # also refuses '=' after a full quantum
        raise ValueError("wrong amount of '=' padding")

    out = bytearray()
    acc = bits = 0
    for value in values:
        acc = (acc << 6) | value
        bits += 6
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    if acc & ((1 << bits) - 1):
        raise ValueError("non-zero trailing bits")
    return bytes(out)


# ---------------------------------------------------------------------------
# JSON model. Python's json module is used only as a tokenizer, with hooks that
# keep what the wire format needs and Python would otherwise lose:
#   * JsonObject keeps members in order with duplicates (dict keeps the last);
#   * JsonNumber keeps every number exactly as written (float would round
#     1.0000000000000000000001 to 1, int() refuses > 4300 digits, and
#     True == 1 in Python, so numbers must be a type of their own);
#   * NaN / Infinity, which Python accepts and RFC 8259 does not, raise.
# ---------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")


def _big_int(digits: str) -> int:
    """int() of an arbitrarily long digit string: Python 3.11 refuses more than
    4300 digits in one int() call (CVE-2020-10735), arithmetic has no limit."""
    value = 0
    for start in range(0, len(digits), 4000):
        chunk = digits[start:start + 4000]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


class JsonNumber:
    """A JSON number: its lexeme as written and its exact value.

    The value is kept as sign * int(digits) * 10**exponent with `digits`
    stripped of leading and trailing zeros ('' for zero), so that equality and
    the integer tests below are exact and cheap whatever the exponent."""

    __slots__ = ("lexeme", "negative", "digits", "exponent")

    def __init__(self, lexeme: str):
        match = _NUMBER_RE.fullmatch(lexeme)
        if not match:
            raise ValueError(f"not a JSON number: {lexeme!r}")
        sign, whole, fraction, exponent = match.groups()
        fraction = fraction or ""
        exponent = exponent or "0"
        exp = _big_int(exponent.lstrip("+-"))
        if exponent.startswith("-"):
            exp = -exp
        # value = int(whole + fraction) * 10**(exp - len(fraction)); move trailing zeros into exp
        digits = (whole + fraction).lstrip("0")
        stripped = digits.rstrip("0")
        exp += len(digits) - len(stripped) - len(fraction)
        self.lexeme = lexeme
        self.digits = stripped
        self.exponent = exp if stripped else 0
        self.negative = bool(sign) and bool(stripped)   # -0 is 0

    def is_one(self) -> bool:
        return not self.negative and self.digits == "1" and self.exponent == 0

    def integer(self) -> int | None:
        """The value as an int when it is integral and below 10**40 in
        magnitude (far beyond any range this format asks about), else None."""
        if not self.digits:
            return 0
        if self.exponent < 0 or len(self.digits) + self.exponent > 40:
            return None
        value = int(self.digits) * 10 ** self.exponent
        return -value if self.negative else value

    def _key(self):
        return (self.negative, self.digits, self.exponent)

    def __eq__(self, other):
        return isinstance(other, JsonNumber) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"JsonNumber({self.lexeme!r})"


class JsonObject:
    """A JSON object exactly as written: (name, value) members in order,
    duplicate names kept, so that the duplicate-member rules can be applied."""

    __slots__ = ("members",)

    def __init__(self, members):
        self.members = list(members)

    def names(self) -> list[str]:
        return [name for name, _ in self.members]

    def values_of(self, name: str) -> list:
        return [value for key, value in self.members if key == name]

    def has_duplicates(self) -> bool:
        names = self.names()
        return len(set(names)) != len(names)

    def __repr__(self):
        return f"JsonObject({self.members!r})"


class RawJson:
    """Text written verbatim by dumps(), as a value or as a member name: lets
    the vector generator put exact lexemes in a file (escapes such as \\u0041
    or \\/ inside a string)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class DuplicateMember(ValueError):
    pass


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def _dict_without_duplicates(members):
    result = {}
    for name, value in members:
        if name in result:
            # The name is not echoed: in a plaintext it is decrypted content.
            raise DuplicateMember("a member name appears twice")
        result[name] = value
    return result


def parse_json(text: str, *, keep_duplicates: bool):
    """Parse RFC 8259 JSON text. With keep_duplicates objects are JsonObject,
    otherwise dict and any duplicate member name (any depth) raises
    DuplicateMember. Numbers are JsonNumber. Raises ValueError when the text
    is not JSON; a BOM is not JSON (json.loads refuses it too)."""
    if text.startswith("\ufeff"):
        raise ValueError("starts with a byte-order mark")
    try:
        return json.loads(
            text,
            object_pairs_hook=JsonObject if keep_duplicates else _dict_without_duplicates,
            parse_int=JsonNumber,
            parse_float=JsonNumber,
            parse_constant=_reject_constant,
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _string(text: str) -> str:
    # json.dumps escapes exactly '"', '\\' and control characters; '/' and
    # non-ASCII stay as they are, which is how seal must measure the payload.
    return json.dumps(text, ensure_ascii=False)


def dumps(value, indent: int | None = None) -> str:
    """Serialize to JSON text: compact (no whitespace) when indent is None,
    else pretty with `indent` spaces. Numbers are written as their lexeme,
    JsonObject members in order (duplicates included), RawJson verbatim.
    Iterative, so that any depth json.loads accepted can be written back."""
    out: list[str] = []
    pending: list = [(value, 0)]          # a str is text to emit, a tuple a value to write
    while pending:
        task = pending.pop()
        if isinstance(task, str):
            out.append(task)
            continue
        item, level = task
        if isinstance(item, (dict, JsonObject, list)):
            is_object = not isinstance(item, list)
            entries = (item.members if isinstance(item, JsonObject) else list(item.items())) if is_object else item
            open_, close = "{}" if is_object else "[]"
            if not entries:
                out.append(open_ + close)
                continue
            inner = "" if indent is None else "\n" + " " * (indent * (level + 1))
            outer = "" if indent is None else "\n" + " " * (indent * level)
            colon = ":" if indent is None else ": "
            tasks: list = []
            for i, entry in enumerate(entries):
                prefix = ("," if i else open_) + inner
                if is_object:
                    name, entry = entry
                    prefix += (name.text if isinstance(name, RawJson) else _string(name)) + colon
                tasks += [prefix, (entry, level + 1)]
            tasks.append(outer + close)
            pending.extend(reversed(tasks))
        elif isinstance(item, str):
            out.append(_string(item))
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif item is None:
            out.append("null")
        elif isinstance(item, JsonNumber):
            out.append(item.lexeme)
        elif isinstance(item, int):
            out.append(str(item))
        elif isinstance(item, RawJson):
            out.append(item.text)
        else:
            raise TypeError(f"cannot serialize {type(item).__name__}")
    return "".join(out)


# ---------------------------------------------------------------------------
# Crypto primitives (docs/spec/wire-format.md sections 1 and 2).
# ---------------------------------------------------------------------------

def key_id(public_key: bytes) -> bytes:
    """BLAKE2b with output length 8 (a different function from a truncated BLAKE2b-512)."""
    return hashlib.blake2b(public_key, digest_size=8).digest()


def sender_id(sender_public_key: bytes) -> bytes:
    """sid (section 7.1): computed as kid is, over the sender public key's bytes."""
    return hashlib.blake2b(sender_public_key, digest_size=8).digest()


def public_key_of(secret_key: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(secret_key).public_key().public_bytes_raw()


def x25519(secret_key: bytes, u: bytes) -> bytes:
    """RFC 7748 X25519 (the top bit of u is ignored, non-canonical u is reduced).
    `cryptography` refuses to return an all-zero result; we return it instead,
    so that callers apply the spec's own check ('ss all zeros') in one place."""
    private = X25519PrivateKey.from_private_bytes(secret_key)
    try:
        return private.exchange(X25519PublicKey.from_public_bytes(u))
    except ValueError:
        return bytes(32)


def derive_key(shared: bytes, epk: bytes, pk: bytes) -> bytes:
    """k = BLAKE2b-256(LABEL || ss || epk || pk); epk is the bytes as transmitted."""
    return hashlib.blake2b(LABEL + shared + epk + pk, digest_size=32).digest()


def aad_for(kid: bytes) -> bytes:
    return LABEL + kid


def derive_key_v2(shared_e: bytes, shared_s: bytes, epk: bytes, pk: bytes, spk: bytes) -> bytes:
    """Section 7.2 step 3: k = BLAKE2b-256(LABEL2 || ss_e || ss_s || epk || pk || spk);
    epk and spk are hashed as the bytes transmitted / pinned."""
    return hashlib.blake2b(LABEL2 + shared_e + shared_s + epk + pk + spk, digest_size=32).digest()


def aad_v2(kid: bytes, sid: bytes) -> bytes:
    """Section 7.2 step 5: aad = LABEL2 || kid || sid."""
    return LABEL2 + kid + sid


# Version 3 (section 8): HPKE as RFC 9180 says, through pyhpke; nothing here but the wire rules.
LABEL3 = b"kindly-push/v3"
HPKE_SUITE = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.CHACHA20_POLY1305)


def hpke_private(secret_key: bytes):
    return KEMKey.from_pyca_cryptography_key(X25519PrivateKey.from_private_bytes(secret_key))


def hpke_public(public_key: bytes):
    return KEMKey.from_pyca_cryptography_key(X25519PublicKey.from_public_bytes(public_key))


def aad_v3(kid: bytes, sid: bytes | None) -> bytes:
    """Section 8.1 step 3: LABEL3 || kid (mode_base), LABEL3 || kid || sid (mode_auth)."""
    return LABEL3 + kid + (sid or b"")


def hpke_seal(pk: bytes, message: bytes, aad: bytes, esk: bytes | None = None,
              sender_secret_key: bytes | None = None) -> tuple[bytes, bytes]:
    """SealBase / SealAuth with info = LABEL3; esk fixes the ephemeral key (test vectors)."""
    eks = None
    if esk is not None:
        eks = KEMKeyPair(hpke_private(esk), hpke_public(public_key_of(esk)))
    sks = None if sender_secret_key is None else hpke_private(sender_secret_key)
    enc, context = HPKE_SUITE.create_sender_context(hpke_public(pk), LABEL3, sks=sks, eks=eks)
    return enc, context.seal(message, aad)


def hpke_open(enc: bytes, secret_key: bytes, sealed: bytes, aad: bytes,
              sender_public_key: bytes | None = None) -> bytes | None:
    """OpenBase / OpenAuth; None when it fails for any reason (a bad tag, an
    all-zero DH of RFC 9180 section 7.1.4, which pyhpke refuses)."""
    try:
        pks = None if sender_public_key is None else hpke_public(sender_public_key)
        context = HPKE_SUITE.create_recipient_context(enc, hpke_private(secret_key), LABEL3, pks=pks)
        return context.open(sealed, aad)
    except Exception:   # pyhpke raises its own OpenError, or ValueError for a low-order point
        return None


def aead_encrypt(key: bytes, nonce: bytes, aad: bytes, message: bytes) -> bytes:
    """XChaCha20-Poly1305-IETF: pycryptodome switches to XChaCha20 for a 24-byte nonce."""
    assert len(nonce) == 24
    cipher = ChaCha20_Poly1305.new(key=key, nonce=nonce)
    cipher.update(aad)
    ciphertext, tag = cipher.encrypt_and_digest(message)
    return ciphertext + tag


def aead_decrypt(key: bytes, nonce: bytes, aad: bytes, sealed: bytes) -> bytes | None:
    assert len(nonce) == 24
    cipher = ChaCha20_Poly1305.new(key=key, nonce=nonce)
    cipher.update(aad)
    try:
        return cipher.decrypt_and_verify(sealed[:-TAG_SIZE], sealed[-TAG_SIZE:])
    except ValueError:
        return None


def pad(data: bytes, block: int = BLOCK_SIZE) -> bytes:
    """ISO/IEC 7816-4 as sodium_pad: 0x80, then 0x00 up to a multiple of block."""
    padded = data + b"\x80"
    return padded + b"\x00" * (-len(padded) % block)


def unpad(data: bytes, block: int = BLOCK_SIZE) -> bytes | None:
    """Strict unpad, judged as sodium_unpad judges it: only the last `block`
    bytes are looked at; going back from the end over 0x00 bytes, the first
    non-zero byte must be 0x80 and must lie within those bytes. None if not."""
    if len(data) < block:
        return None
    for back in range(1, block + 1):
        byte = data[-back]
        if byte == 0x80:
            return data[:-back]
        if byte != 0x00:
            return None
    return None   # the last block is all zeros: the marker is missing or too far back


# ---------------------------------------------------------------------------
# Sealing (docs/spec/wire-format.md sections 2 and 3).
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Envelope:
    kid: bytes
    epk: bytes
    n: bytes
    ct: bytes
    sid: bytes | None = None   # version 2 (or version 3 mode_auth) exactly when set
    hpke: bool = False         # version 3: epk is HPKE's enc, n is empty

    @property
    def version(self) -> int:
        if self.hpke:
            return 3
        return 1 if self.sid is None else 2

    def to_json(self) -> dict:
        if self.hpke:
            fields = {"v": 3, "kid": b64url(self.kid)}
            if self.sid is not None:
                fields["sid"] = b64url(self.sid)
            fields.update({"enc": b64url(self.epk), "ct": b64url(self.ct)})
            return fields
        if self.sid is None:
            return {"v": 1, "kid": b64url(self.kid), "epk": b64url(self.epk),
                    "n": b64url(self.n), "ct": b64url(self.ct)}
        return {"v": 2, "kid": b64url(self.kid), "sid": b64url(self.sid), "epk": b64url(self.epk),
                "n": b64url(self.n), "ct": b64url(self.ct)}


def seal(text: bytes, pk: bytes, esk: bytes | None = None, nonce: bytes | None = None,
         sender_secret_key: bytes | None = None) -> Envelope:
    """Seal the UTF-8 plaintext text to the device public key pk: version 1
    (section 2), or version 2 (section 7.2) when sender_secret_key is given.
    esk and nonce are random unless given (the test vectors give them)."""
    esk = os.urandom(32) if esk is None else esk
    nonce = os.urandom(24) if nonce is None else nonce
    epk = public_key_of(esk)
    shared = x25519(esk, pk)
    if shared == bytes(32):
        raise KindlyError("bad_input", "the public key gives an all-zero shared secret (low-order point)")
    kid = key_id(pk)
    if sender_secret_key is None:
        key = derive_key(shared, epk, pk)
        return Envelope(kid, epk, nonce, aead_encrypt(key, nonce, aad_for(kid), pad(text)))
    shared_s = x25519(sender_secret_key, pk)
    if shared_s == bytes(32):
        raise KindlyError("bad_input", "the public key gives an all-zero sender shared secret (low-order point)")
    spk = public_key_of(sender_secret_key)
    sid = sender_id(spk)
    key = derive_key_v2(shared, shared_s, epk, pk, spk)
    return Envelope(kid, epk, nonce, aead_encrypt(key, nonce, aad_v2(kid, sid), pad(text)), sid)


def seal_v3(text: bytes, pk: bytes, esk: bytes | None = None,
            sender_secret_key: bytes | None = None) -> Envelope:
    """Seal as version 3 (section 8.1): HPKE mode_base, or mode_auth with the
    sender key; esk is random unless given (pyhpke's GenerateKeyPair then)."""
    kid = key_id(pk)
    sid = None if sender_secret_key is None else sender_id(public_key_of(sender_secret_key))
    try:
        enc, ct = hpke_seal(pk, pad(text), aad_v3(kid, sid), esk, sender_secret_key)
    except Exception as exc:   # pyhpke refuses an all-zero DH (a low-order public key)
        raise KindlyError("bad_input", f"HPKE cannot seal to this public key: {exc}") from None
    return Envelope(kid, enc, b"", ct, sid, hpke=True)


def apns_payload(envelope: Envelope, mode: str = "visible",
                 title: str = DEFAULT_TITLE, body: str = DEFAULT_BODY) -> dict:
    if mode == "silent":
        aps = {"content-available": 1}
    else:
        aps = {"alert": {"title": title, "body": body}, "mutable-content": 1, "sound": "default"}
    return {"aps": aps, "kindly": envelope.to_json()}


# ---------------------------------------------------------------------------
# The plaintext (docs/spec/wire-format.md section 4).
# ---------------------------------------------------------------------------

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _has_lone_surrogate(value) -> bool:
    """The text is strict UTF-8, which cannot encode surrogates, and json.loads
    joins escaped pairs into one character, so any surrogate left after parsing
    came from an unpaired escape such as \\ud800. (Iterative: any depth.)"""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def parse_plaintext(text: bytes, code: str = "bad_plaintext") -> dict:
    """Decode and check a plaintext per section 4; failures raise KindlyError(code)."""
    try:
        decoded = text.decode("utf-8")   # strict: no overlong forms, no encoded surrogates
    except UnicodeDecodeError as exc:
        raise KindlyError(code, f"plaintext is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if decoded.startswith("\ufeff"):
        raise KindlyError(code, "plaintext starts with a byte-order mark")
    try:
        obj = parse_json(decoded, keep_duplicates=False)
    except ValueError as exc:   # DuplicateMember included
        raise KindlyError(code, f"plaintext: {exc}") from None
    if not isinstance(obj, dict):
        raise KindlyError(code, "plaintext is not a JSON object")
    if _has_lone_surrogate(obj):
        raise KindlyError(code, "plaintext has an unpaired surrogate escape")

    chat_id = obj.get("chat_id")
    if not isinstance(chat_id, str) or not chat_id:
        raise KindlyError(code, "chat_id is missing or not a non-empty string")
    for name in ("title", "body"):
        if not isinstance(obj.get(name), str):
            raise KindlyError(code, f"{name} is missing or not a string")
    if "message_id" in obj and not isinstance(obj["message_id"], str):
        raise KindlyError(code, "message_id is not a string")
    if "sent_at" in obj:
        sent_at = obj["sent_at"]
        value = sent_at.integer() if isinstance(sent_at, JsonNumber) else None
        if value is None or not 0 <= value <= MAX_SAFE_INTEGER:
            raise KindlyError(code, "sent_at is not an integer from 0 to 2^53-1")
    # JSON true or false only (bool is its own type here: numbers are JsonNumber, so 1 is not True).
    if "truncated" in obj and not isinstance(obj["truncated"], bool):
        raise KindlyError(code, "truncated is not a boolean")
    return obj


# ---------------------------------------------------------------------------
# Reading (docs/spec/wire-format.md section 5).
# ---------------------------------------------------------------------------

def parse_document(data: bytes) -> JsonObject:
    """An APNs document from raw input; anything but a JSON object is bad_input."""
    if len(data) > INPUT_LIMIT:
        raise KindlyError("bad_input", f"input is {len(data)} bytes, over the {INPUT_LIMIT}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise KindlyError("bad_input", "input is not UTF-8") from None
    try:
        doc = parse_json(text, keep_duplicates=True)
    except ValueError as exc:
        raise KindlyError("bad_input", f"input is not JSON: {exc}") from None
    if not isinstance(doc, JsonObject):
        raise KindlyError("bad_input", "input is not a JSON object")
    return doc


def is_kindly(doc: JsonObject) -> bool:
    """A top-level `kindly` member whose value is an object. With several
    top-level `kindly` members, one object among them is enough."""
    return any(isinstance(v, JsonObject) for v in doc.values_of("kindly"))


_FIELDS = ("kid", "epk", "n", "ct")
_FIELDS_V2 = ("kid", "sid", "epk", "n", "ct")
_FIELDS_V3 = ("kid", "enc", "ct")       # and sid when present (mode_auth)
_SIZES = {"kid": 8, "sid": 8, "epk": 32, "n": 24, "enc": 32}


def envelope_version(value) -> int | None:
    """1, 2 or 3 when value is a JSON number whose exact value is 1, 2 or 3
    (1, 1.0, 1e0, 2, 2.0, 20e-1, 3, 3e0, ...); None for anything else: true,
    "2", 4, 2.0000000000000000000001 (a double would round it to 2)."""
    if not isinstance(value, JsonNumber):
        return None
    number = value.integer()
    return number if number in (1, 2, 3) else None


def read_envelope(doc: JsonObject) -> Envelope:
    """Checks 1 to 3 of sections 5 and 7.3, in order: not_kindly, the
    duplicate-member rule (malformed, before v is read), unsupported_version,
    malformed. The version of the result is that of the push (sid set for 2)."""
    if not is_kindly(doc):
        raise KindlyError("not_kindly", "no top-level kindly object")
    if doc.has_duplicates():
        raise KindlyError("malformed", "a top-level member name appears twice")
    kindly = doc.values_of("kindly")[0]   # the only one, since names are unique now
    if kindly.has_duplicates():
        raise KindlyError("malformed", "a member name inside kindly appears twice")
    fields = dict(kindly.members)

    version = envelope_version(fields.get("v"))
    if version is None:
        raise KindlyError("unsupported_version", "kindly.v is missing or not the number 1, 2 or 3")

    decoded = {}
    # Version 1 ignores a sid field: it is not read at all, whatever it holds. Version 3
    # reads it when it is present (section 8.2: mode_auth), and ignores epk and n.
    if version == 1:
        names = _FIELDS
    elif version == 2:
        names = _FIELDS_V2
    else:
        names = ("kid", "sid", "enc", "ct") if "sid" in fields else _FIELDS_V3
    for name in names:
        value = fields.get(name)
        if not isinstance(value, str):
            raise KindlyError("malformed", f"kindly.{name} is missing or not a string")
        try:
            decoded[name] = b64decode_canonical(value)
        except ValueError as exc:
            raise KindlyError("malformed", f"kindly.{name} is not canonical base64: {exc}") from None
    for name, data in decoded.items():
        size = _SIZES.get(name)
        if size is not None and len(data) != size:
            raise KindlyError("malformed", f"kindly.{name} decodes to {len(data)} bytes, not {size}")
    ct_size = len(decoded["ct"])
    if ct_size < TAG_SIZE + BLOCK_SIZE or (ct_size - TAG_SIZE) % BLOCK_SIZE:
        raise KindlyError("malformed", f"kindly.ct decodes to {ct_size} bytes, not 16 + a positive multiple of 64")
    if version == 3:
        return Envelope(decoded["kid"], decoded["enc"], b"", decoded["ct"], decoded.get("sid"), hpke=True)
    return Envelope(**decoded)


def open_envelope(envelope: Envelope, secret_key: bytes, sender_public_key: bytes | None = None) -> bytes:
    """Check 6 of section 7.3 (5 of section 5) and the padding part of the
    last: returns the unpadded plaintext text. A version 2 envelope needs the
    pinned sender public key its sid names."""
    if envelope.version == 3:
        if envelope.sid is not None:
            assert sender_public_key is not None and sender_id(sender_public_key) == envelope.sid
        padded = hpke_open(envelope.epk, secret_key, envelope.ct, aad_v3(envelope.kid, envelope.sid),
                           sender_public_key)
        if padded is None:
            raise KindlyError("authentication_failed", "HPKE open fails (a bad tag or an all-zero DH)")
        text = unpad(padded)
        if text is None:
            raise KindlyError("bad_plaintext", "the padding is wrong")
        return text
    pk = public_key_of(secret_key)
    shared = x25519(secret_key, envelope.epk)
    if shared == bytes(32):
        raise KindlyError("authentication_failed", "epk gives an all-zero shared secret")
    if envelope.version == 1:
        key = derive_key(shared, envelope.epk, pk)
        aad = aad_for(envelope.kid)
    else:
        assert sender_public_key is not None and sender_id(sender_public_key) == envelope.sid
        shared_s = x25519(secret_key, sender_public_key)
        if shared_s == bytes(32):
            raise KindlyError("authentication_failed", "the sender key gives an all-zero shared secret")
        key = derive_key_v2(shared, shared_s, envelope.epk, pk, sender_public_key)
        aad = aad_v2(envelope.kid, envelope.sid)
    padded = aead_decrypt(key, envelope.n, aad, envelope.ct)
    if padded is None:
        raise KindlyError("authentication_failed", "the AEAD tag does not verify")
    text = unpad(padded)
    if text is None:
        raise KindlyError("bad_plaintext", "the padding is wrong")
    return text


def decrypt(doc: JsonObject, secret_keys: list[bytes], sender_keys=()) -> dict:
    """decrypt(userInfo) with the reason: the plaintext object, or KindlyError.

    secret_keys is the keyring (device secret keys); sender_keys the pinned
    sender public keys. With at least one pinned key the reader is in pinned
    mode (section 7.1) and refuses version 1 pushes as untrusted_sender."""
    envelope = read_envelope(doc)
    keys = {key_id(public_key_of(sk)): sk for sk in secret_keys}
    secret_key = keys.get(envelope.kid)
    if secret_key is None:
        raise KindlyError("key_unavailable", "no secret key with this kid")
    pinned = {sender_id(spk): spk for spk in sender_keys}
    sender_public_key = None
    if envelope.sid is None:   # version 1, or version 3 mode_base: no proof of the sender
        if pinned:
            raise KindlyError("untrusted_sender", f"a version {envelope.version} push without sid read in pinned mode")
    else:
        sender_public_key = pinned.get(envelope.sid)
        if sender_public_key is None:
            raise KindlyError("untrusted_sender", "no pinned sender key with this sid")
    return parse_plaintext(open_envelope(envelope, secret_key, sender_public_key))


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error, which docs/spec/streams.md gives to unsupported_version."""

    def error(self, message):
        raise KindlyError("usage", message)


def _key_arg(text: str, what: str) -> bytes:
    try:
        key = b64decode_canonical(text)
    except ValueError as exc:
        raise KindlyError("usage", f"{what} is not base64: {exc}") from None
    if len(key) != 32:
        raise KindlyError("usage", f"{what} is {len(key)} bytes, not 32")
    return key


def _key_file(path: str, field: str, kind: str = "kid") -> bytes:
    """One key of a key file (kind "kid") or a sender key file (kind "sid").
    docs/spec/streams.md: neither kind is accepted where the other is expected, so a file
    holding the other kind's id member is refused."""
    other = "sid" if kind == "kid" else "kid"
    try:
        with open(path, "rb") as handle:
            obj = json.loads(handle.read().decode("utf-8"))
        if not isinstance(obj, dict):
            raise TypeError("not a JSON object")
        if other in obj:
            raise KindlyError("io", f"key file {path}: has {other}, so it is not a "
                                    f"{'device key file' if kind == 'kid' else 'sender key file'}")
        key = b64decode_canonical(obj[field])
        if len(key) != 32:
            raise ValueError("not 32 bytes")
        return key
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KindlyError("io", f"key file {path}: cannot read {field} ({type(exc).__name__})") from None


def _sender_key_file(path: str) -> bytes:
    """The secret key of a sender key file {sid, public_key, secret_key}, whose
    three members must agree (a file whose sid names another key would make
    pushes that no device pinning that key can read)."""
    secret_key = _key_file(path, "secret_key", "sid")
    try:
        with open(path, "rb") as handle:
            obj = json.loads(handle.read().decode("utf-8"))
        public_key, sid = b64decode_canonical(obj["public_key"]), b64decode_canonical(obj["sid"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KindlyError("io", f"sender key file {path}: cannot read sid and public_key ({type(exc).__name__})") from None
    if public_key_of(secret_key) != public_key or sender_id(public_key) != sid:
        raise KindlyError("io", f"sender key file {path}: sid, public_key and secret_key do not agree")
    return secret_key


def _key_file_json(secret_key: bytes) -> dict:
    pk = public_key_of(secret_key)
    return {"kid": b64url(key_id(pk)), "public_key": b64url(pk), "secret_key": b64url(secret_key)}


def _sender_key_file_json(secret_key: bytes) -> dict:
    """A sender key file (docs/spec/streams.md): a key file with sid in place of kid."""
    spk = public_key_of(secret_key)
    return {"sid": b64url(sender_id(spk)), "public_key": b64url(spk), "secret_key": b64url(secret_key)}


def _read_stdin() -> bytes:
    # Read one byte more than the limit: enough to know the input is too long.
    data = sys.stdin.buffer.read(INPUT_LIMIT + 1)
    if len(data) > INPUT_LIMIT:
        raise KindlyError("bad_input", f"input is over the {INPUT_LIMIT}-byte limit")
    return data


def _cmd_keygen(args) -> str:
    secret_key = _key_arg(args.secret_key, "--secret-key") if args.secret_key else \
        X25519PrivateKey.generate().private_bytes_raw()
    return dumps(_key_file_json(secret_key))


def _cmd_sender_keygen(args) -> str:
    secret_key = _key_arg(args.secret_key, "--secret-key") if args.secret_key else \
        X25519PrivateKey.generate().private_bytes_raw()
    return dumps(_sender_key_file_json(secret_key))


def _cmd_seal(args) -> str:
    if args.public_key and args.key_file:
        raise KindlyError("usage", "give --public-key or --key-file, not both")
    if args.public_key:
        pk = _key_arg(args.public_key, "--public-key")
    elif args.key_file:
        pk = _key_file(args.key_file, "public_key")
    else:
        raise KindlyError("usage", "seal needs --public-key or --key-file")
    if args.sender_key_file and args.sender_secret_key:
        raise KindlyError("usage", "give --sender-key-file or --sender-secret-key, not both")
    sender_secret_key = None
    if args.sender_secret_key:
        sender_secret_key = _key_arg(args.sender_secret_key, "--sender-secret-key")
    elif args.sender_key_file:
        sender_secret_key = _sender_key_file(args.sender_key_file)
    if args.wire == "3":
        if args.nonce is not None:
            raise KindlyError("usage", "--wire 3 takes no --nonce (HPKE derives it)")
    elif (args.ephemeral_secret_key is None) != (args.nonce is None):
        raise KindlyError("usage", "--ephemeral-secret-key and --nonce go together")
    if args.wire == "1" and sender_secret_key is not None:
        raise KindlyError("usage", "--wire 1 has no sender key")
    if args.wire == "2" and sender_secret_key is None:
        raise KindlyError("usage", "--wire 2 needs a sender key")
    esk = nonce = None
    if args.ephemeral_secret_key is not None:
        esk = _key_arg(args.ephemeral_secret_key, "--ephemeral-secret-key")
    if args.nonce is not None:
        try:
            nonce = b64decode_canonical(args.nonce)
        except ValueError as exc:
            raise KindlyError("usage", f"--nonce is not base64: {exc}") from None
        if len(nonce) != 24:
            raise KindlyError("usage", "--nonce is not 24 bytes")

    data = _read_stdin()
    plaintext = parse_plaintext(data, code="bad_input")
    # Compact, non-ASCII and '/' unescaped, numbers as written; --verbatim seals
    # the input bytes themselves (for byte-exact comparison with another sealer).
    text = data if args.verbatim else dumps(plaintext).encode("utf-8")
    if args.wire == "3":
        envelope = seal_v3(text, pk, esk, sender_secret_key)
    else:
        envelope = seal(text, pk, esk, nonce, sender_secret_key)
    payload = dumps(apns_payload(envelope, args.mode, args.placeholder_title, args.placeholder_body))
    size = len(payload.encode("utf-8"))
    if size > APNS_LIMIT:
        raise KindlyError("bad_input", f"the sealed payload would be {size} bytes, over APNs's {APNS_LIMIT}")
    return payload


def _cmd_decrypt(args) -> str:
    keys = [_key_arg(k, "--secret-key") for k in args.secret_key or []]
    keys += [_key_file(path, "secret_key") for path in args.key_file or []]
    if not keys:
        raise KindlyError("usage", "decrypt needs --secret-key or --key-file")
    # Pinned sender public keys: any 32 bytes are taken (a low-order key is the
    # reader's business to refuse at authentication, as section 7.3 says).
    senders = [_key_arg(s, "--sender-key") for s in args.sender_key or []]
    return dumps(decrypt(parse_document(_read_stdin()), keys, senders))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kindly_ref.py",
                     description="Kindly push wire format versions 1, 2 and 3, reference implementation")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    keygen = commands.add_parser("keygen", help="print a key file {kid, public_key, secret_key}")
    keygen.add_argument("--secret-key", help="derive the key file from this secret key instead of a fresh one")

    sender_keygen = commands.add_parser("sender-keygen",
                                        help="print a sender key file {sid, public_key, secret_key}")
    sender_keygen.add_argument("--secret-key",
                               help="derive the sender key file from this secret key instead of a fresh one")

    seal_cmd = commands.add_parser("seal", help="seal the plaintext object on stdin")
    seal_cmd.add_argument("--public-key")
    seal_cmd.add_argument("--key-file")
    seal_cmd.add_argument("--sender-key-file", help="seal version 2 with this sender key file {sid, public_key, secret_key}")
    seal_cmd.add_argument("--sender-secret-key", help="seal version 2 with this sender secret key")
    seal_cmd.add_argument("--wire", choices=("1", "2", "3"),
                          help="wire format version (default: 2 with a sender key, 1 without); 3 is HPKE")
    seal_cmd.add_argument("--mode", choices=("visible", "silent"), default="visible")
    seal_cmd.add_argument("--placeholder-title", default=DEFAULT_TITLE)
    seal_cmd.add_argument("--placeholder-body", default=DEFAULT_BODY)
    seal_cmd.add_argument("--ephemeral-secret-key", help="testing: fixed esk instead of a random one")
    seal_cmd.add_argument("--nonce", help="testing: fixed 24-byte nonce instead of a random one")
    seal_cmd.add_argument("--verbatim", action="store_true",
                          help="seal the input bytes as they are instead of re-serializing them compactly")

    decrypt_cmd = commands.add_parser("decrypt", help="decrypt the APNs document on stdin")
    decrypt_cmd.add_argument("--secret-key", action="append", help="repeatable")
    decrypt_cmd.add_argument("--key-file", action="append", help="repeatable")
    decrypt_cmd.add_argument("--sender-key", action="append",
                             help="pin this sender public key (repeatable); one or more is pinned mode")
    return parser


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The long options, of every command, that take a value."""
    names = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names |= _value_options(sub)
        elif action.nargs is None and action.option_strings and not isinstance(action, argparse._HelpAction):
            names.update(o for o in action.option_strings if o.startswith("--"))
    return names


def _join_values(argv: list[str], value_options: set[str]) -> list[str]:
    """`--opt VALUE` -> `--opt=VALUE`: a base64url key may begin with '-', which
    argparse would otherwise take for an option ('expected one argument')."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in value_options and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    handlers = {"keygen": _cmd_keygen, "sender-keygen": _cmd_sender_keygen, "seal": _cmd_seal,
                "decrypt": _cmd_decrypt}
    try:
        parser = build_parser()
        argv = sys.argv[1:] if argv is None else argv
        args = parser.parse_args(_join_values(argv, _value_options(parser)))
        output = handlers[args.command](args)
    except KindlyError as exc:
        print(f"kindly-ref: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_CODES[exc.code]
    try:
        sys.stdout.buffer.write(output.encode("utf-8") + b"\n")
        sys.stdout.flush()
    except OSError as exc:
        print(f"kindly-ref: io: cannot write standard output ({exc.strerror})", file=sys.stderr)
        return EXIT_CODES["io"]
    return 0


if __name__ == "__main__":
    sys.exit(main())
