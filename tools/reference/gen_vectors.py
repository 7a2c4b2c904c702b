#!/usr/bin/env python3
"""Writes the wire-format test vectors (TestVectors/*.json) with kindly_ref:
version 1 (sections 1 to 6) and version 2 (section 7, files v2-*.json).

Deterministic: every key, ephemeral key and nonce is SHAKE-256 of a label
fixed in this file, so re-running gives byte-identical files (check_vectors.py
verifies that too). Every vector's expectation is written here by hand, from
the spec; before anything is written, check_vectors checks each vector against
kindly_ref's reader, so a disagreement stops the run instead of landing in a file.

Vectors whose apns.kindly kid/epk/n/ct are exactly what sealing `plaintext`
with `ephemeral_secret_key` and `nonce` to the device key gives are sealing
vectors (docs/spec/streams.md) and carry those three fields. Vectors whose envelope was
changed after sealing, or whose sealed message is not pad(text) for some text
(bad padding, invalid UTF-8), or that were sealed to another key, do not.
A version 2 sealing vector also carries `sender_secret_key` (and its kid, sid,
epk, n and ct are the seal's); a vector read with pinned sender keys carries
`pinned_sender_keys` (every version 2 vector does, [] or absent meaning none).

    python3 tools/reference/gen_vectors.py
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kindly_ref as k  # noqa: E402
from kindly_ref import JsonNumber, JsonObject, RawJson, b64url  # noqa: E402

VECTOR_DIR = Path(__file__).resolve().parents[2] / "TestVectors"


def det(label: str, size: int) -> bytes:
    """Fixed 'random' bytes for one purpose. One label per value, so that adding
    or removing a vector changes no other vector."""
    return hashlib.shake_256(b"KindlyPush test vectors v1\x00" + label.encode("utf-8")).digest(size)


def num(lexeme: str) -> JsonNumber:
    """A number written exactly so in the file (1.0, 1e3, -0, ...)."""
    return JsonNumber(lexeme)


def obj(*members) -> JsonObject:
    """An object written member by member, duplicates included."""
    return JsonObject(members)


def encode(data: bytes, style: str = "url") -> str:
    """The four accepted spellings: url, url= (padded), std, std= (padded)."""
    text = b64url(data)
    if style.startswith("std"):
        text = text.replace("-", "+").replace("_", "/")
    if style.endswith("="):
        text += "=" * (-len(text) % 4)
    return text


def _device_key() -> bytes:
    # The first key whose kid shows both URL-safe characters, so that the
    # alphabet vectors (std vs url, mixed) have something to change in kid too.
    for i in itertools.count():
        sk = det(f"device key {i}", 32)
        kid = b64url(k.key_id(k.public_key_of(sk)))
        if "-" in kid and "_" in kid:
            return sk


DEVICE_SK = _device_key()
DEVICE_PK = k.public_key_of(DEVICE_SK)
DEVICE_KID = k.key_id(DEVICE_PK)
OTHER_SK = det("other device key", 32)
OTHER_PK = k.public_key_of(OTHER_SK)
OTHER_KID = k.key_id(OTHER_PK)

P = 2**255 - 19
MISSING = object()   # kindly(..., field=MISSING) drops the field
VISIBLE_APS = {"alert": {"title": k.DEFAULT_TITLE, "body": k.DEFAULT_BODY}, "mutable-content": 1, "sound": "default"}
SILENT_APS = {"content-available": 1}
BASIC = {"chat_id": "c-1", "title": "Anna", "body": "Hi!"}


@dataclass
class Push:
    """One sealed envelope and how it was made."""
    envelope: k.Envelope
    text: str | None              # the text whose pad() was sealed; None if the message was not pad(text)
    sealing: dict | None = None   # the sealing-vector fields, when the envelope is exactly
                                  # seal(text, ephemeral_secret_key, nonce[, sender_secret_key])
                                  # to the device key

    def kindly(self, style: str = "url", **changes) -> dict:
        e = self.envelope
        if e.hpke:   # version 3: kid, sid (mode_auth), enc, ct
            fields = {"v": 3, "kid": encode(e.kid, style)}
            if e.sid is not None:
                fields["sid"] = encode(e.sid, style)
            fields.update({"enc": encode(e.epk, style), "ct": encode(e.ct, style)})
        elif e.sid is None:
            fields = {"v": 1, "kid": encode(e.kid, style), "epk": encode(e.epk, style),
                      "n": encode(e.n, style), "ct": encode(e.ct, style)}
        else:
            fields = {"v": 2, "kid": encode(e.kid, style), "sid": encode(e.sid, style),
                      "epk": encode(e.epk, style), "n": encode(e.n, style), "ct": encode(e.ct, style)}
        for name, value in changes.items():
            if value is MISSING:
                del fields[name]
            else:
                fields[name] = value
        return fields

    def payload(self):
        return k.parse_plaintext(self.text.encode("utf-8"))


_labels: set[str] = set()


def _fresh(label: str) -> tuple[bytes, bytes]:
    assert label not in _labels, f"label used twice: {label}"
    _labels.add(label)
    return det(label + " esk", 32), det(label + " nonce", 24)


def seal(label: str, plaintext, pk: bytes = DEVICE_PK) -> Push:
    """Seal exactly as the spec says; plaintext is the text, or an object to write compactly."""
    text = plaintext if isinstance(plaintext, str) else k.dumps(plaintext)
    esk, nonce = _fresh(label)
    sealing = {"ephemeral_secret_key": b64url(esk), "nonce": b64url(nonce), "plaintext": text}
    return Push(k.seal(text.encode("utf-8"), pk, esk, nonce), text, sealing if pk == DEVICE_PK else None)


def seal_message(label: str, message: bytes, *, kid: bytes = DEVICE_KID, aad: bytes | None = None,
                 derive=k.derive_key) -> Push:
    """Seal an arbitrary padded message to the device key, optionally with a
    different kid, aad or key derivation (to build pushes the spec forbids)."""
    esk, nonce = _fresh(label)
    epk = k.public_key_of(esk)
    key = derive(k.x25519(esk, DEVICE_PK), epk, DEVICE_PK)
    ct = k.aead_encrypt(key, nonce, k.aad_for(kid) if aad is None else aad, message)
    return Push(k.Envelope(kid, epk, nonce, ct), None)


def seal_with_epk(label: str, text: str, epk: bytes) -> Push:
    """Build, from the device's side, the push a sender would have had to make
    for an epk no esk yields as such (top bit set, non-canonical, base point):
    ss = X25519(device sk, epk), k over the epk bytes as transmitted."""
    _, nonce = _fresh(label)
    key = k.derive_key(k.x25519(DEVICE_SK, epk), epk, DEVICE_PK)
    ct = k.aead_encrypt(key, nonce, k.aad_for(DEVICE_KID), k.pad(text.encode("utf-8")))
    return Push(k.Envelope(DEVICE_KID, epk, nonce, ct), text)


def flip(data: bytes, index: int, mask: int = 0x01) -> bytes:
    out = bytearray(data)
    out[index] ^= mask
    return bytes(out)


def ok(payload) -> dict:
    return {"result": "ok", "payload": payload}


def error(reason: str) -> dict:
    assert reason in k.DECRYPT_REASONS
    return {"result": "error", "reason": reason}


def visible(kindly) -> dict:
    return {"aps": VISIBLE_APS, "kindly": kindly}


class Files:
    def __init__(self):
        self.files: dict[str, list] = {}
        self.current: list | None = None

    def start(self, name: str):
        self.current = self.files.setdefault(name, [])

    def add(self, description: str, apns, expected: dict, push: Push | None = None, secret_key: bytes = DEVICE_SK,
            pinned: list[bytes] | None = None):
        """pinned: the reader's pinned sender public keys, written as
        pinned_sender_keys when not None ([] is written: an explicit none)."""
        vector = {"description": description, "device_secret_key": b64url(secret_key)}
        if push is not None and push.sealing:
            vector.update(push.sealing)
        if pinned is not None:
            vector["pinned_sender_keys"] = [b64url(key) for key in pinned]
        vector["apns"] = apns
        vector["expected"] = expected
        self.current.append(vector)

    def ok_push(self, description: str, push: Push, apns=None, pinned: list[bytes] | None = None, **kindly_changes):
        """A push that decrypts to its own plaintext."""
        apns = visible(push.kindly(**kindly_changes)) if apns is None else apns
        self.add(description, apns, ok(push.payload()), push, pinned=pinned)

    def texts(self) -> dict[str, str]:
        return {name: k.dumps({"vectors": vectors}, indent=2) + "\n" for name, vectors in self.files.items()}


def text_of_length(size: int, title: str = "Size") -> str:
    base = '{"chat_id":"c-1","title":"%s","body":""}' % title
    text = base[:-2] + "x" * (size - len(base)) + '"}'
    assert len(text.encode("utf-8")) == size
    return text


# ---------------------------------------------------------------------------

def ok_basic(v: Files):
    v.start("ok-basic.json")
    p = seal("ok visible", BASIC)
    v.ok_push("visible push, minimal plaintext (chat_id, title, body)", p)
    p = seal("ok full", {"chat_id": "chat-42", "title": "Anna", "body": "See you at 8?",
                         "message_id": "m-1001", "sent_at": 1700000000})
    v.ok_push("visible push with message_id and sent_at", p)
    p = seal("ok silent", {"chat_id": "c-2", "title": "Ben", "body": "silent one"})
    v.ok_push("silent push: aps is {content-available: 1}", p, {"aps": SILENT_APS, "kindly": p.kindly()})
    p = seal("ok no aps", {"chat_id": "c-3", "title": "Cleo", "body": "no aps at all"})
    v.ok_push("push without aps decrypts: aps plays no part in decryption", p, {"kindly": p.kindly()})
    p = seal("ok aps string", {"chat_id": "c-4", "title": "Dan", "body": "aps is a string"})
    v.ok_push("aps that is not an object (a string) plays no part in decryption", p,
              {"aps": "not an object", "kindly": p.kindly()})
    p = seal("ok alert string", {"chat_id": "c-5", "title": "Eva", "body": "alert is a string"})
    v.ok_push("aps.alert is a string", p,
              {"aps": {"alert": "You have a new message", "mutable-content": 1}, "kindly": p.kindly()})
    p = seal("ok placeholder", {"chat_id": "c-6", "title": "Finn", "body": "custom placeholder"})
    v.ok_push("visible push with a custom placeholder alert", p,
              {"aps": {"alert": {"title": "Kindly", "body": "Neue Nachricht"}, "mutable-content": 1,
                       "sound": "default"}, "kindly": p.kindly()})
    p = seal("ok top extras", {"chat_id": "c-7", "title": "Gus", "body": "host data beside kindly"})
    v.ok_push("other top-level keys (a host's data, another provider's keys) are ignored", p,
              {"acme": {"id": 7, "kindly": {"v": 2}}, "aps": VISIBLE_APS, "kindly": p.kindly(),
               "gcm.message_id": "0:1700000000", "data": [1, "two", None]})
    p = seal("ok kindly extras", {"chat_id": "c-8", "title": "Hana", "body": "extra keys in kindly"})
    v.ok_push("other keys inside kindly are ignored by decrypt (decrypted, chat_id, unknown ones)", p,
              visible(p.kindly(decrypted=True, chat_id="another-chat", message_id=5, x=[1, {"y": None}])))
    p = seal("ok kindly order", {"chat_id": "c-9", "title": "Ida", "body": "fields in another order"})
    e = p.kindly()
    v.ok_push("kindly members in another order (ct, n, epk, kid, v), kindly before aps", p,
              {"kindly": {name: e[name] for name in ("ct", "n", "epk", "kid", "v")}, "aps": VISIBLE_APS})
    p = seal("ok dup in aps", {"chat_id": "c-10", "title": "Jon", "body": "duplicate inside aps"})
    v.ok_push("a duplicate member inside aps (neither top level nor kindly) is not malformed: only the "
              "top-level object and the kindly object must have unique names", p,
              {"aps": obj(("alert", {"title": "New message", "body": "Open the app to read it"}),
                          ("sound", "default"), ("sound", "chime"), ("mutable-content", 1)),
               "kindly": p.kindly()})
    p = seal("ok mutable 0", {"chat_id": "c-11", "title": "Kai", "body": "odd aps values"})
    v.ok_push("aps with mutable-content 0 and content-available true still decrypts (aps plays no part)", p,
              {"aps": {"mutable-content": 0, "content-available": True}, "kindly": p.kindly()})


def ok_plaintext(v: Files):
    v.start("ok-plaintext.json")
    cases = [
        ("message_id absent, sent_at absent", '{"chat_id":"c-1","title":"Anna","body":"Hi!"}'),
        ("message_id present", '{"chat_id":"c-1","title":"Anna","body":"Hi!","message_id":"m-7"}'),
        ("message_id the empty string (only chat_id must be non-empty)",
         '{"chat_id":"c-1","title":"Anna","body":"Hi!","message_id":""}'),
        ("title and body empty strings", '{"chat_id":"c-1","title":"","body":""}'),
        ("members in another order", '{"body":"Hi!","sent_at":1700000000,"chat_id":"c-1","title":"Anna"}'),
        ("pretty-printed plaintext: spaces, tabs, CR and LF between tokens",
         '{\n\t"chat_id" : "c-1",\r\n  "title":"Anna" ,\n  "body":\t"Hi!"\n}'),
        ("whitespace before and after the object, and a final newline",
         ' \t\r\n{"chat_id":"c-1","title":"Anna","body":"Hi!"} \n'),
        ("member names written with escapes (chat\\u005fid, t\\u0069tle) are the names chat_id and title",
         r'{"chat\u005fid":"c-1","t\u0069tle":"Anna","body":"Hi!"}'),
        ("extras of every JSON type: nested objects, arrays, null, booleans, numbers",
         '{"chat_id":"c-1","title":"Anna","body":"Hi!","meta":{"a":{"b":[1,2,{"c":null}]},"empty":{},'
         '"list":[]},"flags":[true,false,null],"count":42,"delta":-7,"ratio":3.25,"half":-0.5,"zero":0}'),
        ("extras named like envelope fields (v, kid, ct, decrypted) are just extras",
         '{"chat_id":"c-1","title":"Anna","body":"Hi!","v":2,"kid":"x","ct":null,"decrypted":true}'),
        ("an extra with the empty member name", '{"chat_id":"c-1","title":"Anna","body":"Hi!","":"empty name"}'),
        ("a long chat_id", '{"chat_id":"%s","title":"Anna","body":"Hi!"}' % ("chat-" + "0123456789" * 20)),
    ]
    for i, (description, text) in enumerate(cases):
        v.ok_push(description, seal(f"plaintext form {i}", text))
    # sent_at is read by value: any JSON number whose exact value is an integer in [0, 2^53-1].
    sent_at_forms = [
        ("0", "the smallest"), ("9007199254740991", "2^53-1, the largest"), ("1700000000", "a plain integer"),
        ("1.0", "written with a zero fraction"), ("1e3", "with an exponent"), ("1E3", "with a capital E"),
        ("1e+3", "with an explicit + exponent"), ("-0", "minus zero, which is 0"), ("0.0", "zero with a fraction"),
        ("1.5e1", "1.5e1 = 15 is integral"), ("9007199254740991.0", "2^53-1 with a zero fraction"),
        ("90071992547409910e-1", "2^53-1 written with a negative exponent"), ("100e-2", "100e-2 = 1"),
    ]
    for lexeme, why in sent_at_forms:
        text = '{"chat_id":"c-1","title":"Anna","body":"Hi!","sent_at":%s}' % lexeme
        v.ok_push(f"sent_at {lexeme}: {why}", seal(f"sent_at {lexeme}", text))


def ok_unicode(v: Files):
    v.start("ok-unicode.json")
    cases = [
        ("emoji: ZWJ family, rainbow flag (ZWJ + VS16), skin tone, regional-indicator flag",
         {"chat_id": "c-emoji", "title": "👩‍👩‍👧‍👦 Family", "body": "🏳️‍🌈 👋🏽 🇯🇵 😀"}),
        ("CJK: Chinese, Japanese, Korean",
         {"chat_id": "c-cjk", "title": "你好，世界", "body": "こんにちは 안녕하세요"}),
        ("right-to-left: Arabic and Hebrew, with RLM/LRM marks",
         {"chat_id": "c-rtl", "title": "مرحبا بالعالم", "body": "\u200fשלום עולם\u200e (2)"}),
        ("combining marks: decomposed e + U+0301 and stacked marks",
         {"chat_id": "c-comb", "title": "Cafe\u0301", "body": "Z\u0324\u0354\u0367\u0311a\u0308\u0356\u032d"}),
        ("astral characters written raw (U+1D11E, U+1F600) and chat_id outside ASCII",
         {"chat_id": "чат-𝄞", "title": "𝄞 Musik", "body": "😀"}),
        ("U+2028, U+2029, U+FFFD and U+FEFF inside strings (a FEFF inside a string is no byte-order mark)",
         {"chat_id": "c-sep", "title": "line\u2028para\u2029end", "body": "\ufffd and \ufeff inside"}),
        ("member names that differ only by Unicode normalization (U+00E9 vs e + U+0301) are two different "
         "names (RFC 8259 compares code points): both kept, no duplicate",
         {"chat_id": "c-norm", "title": "Anna", "body": "Hi!", "caf\u00e9": 1, "cafe\u0301": 2}),
        ("emoji and non-ASCII member names in extras",
         {"chat_id": "c-names", "title": "Anna", "body": "Hi!", "🔑": "key", "名前": ["値"]}),
    ]
    for i, (description, plaintext) in enumerate(cases):
        v.ok_push(description, seal(f"unicode {i}", plaintext))
    escaped = [
        ("\\u00e9-style escapes in the text (Caf\\u00e9, \\u00fc)",
         r'{"chat_id":"c-1","title":"Caf\u00e9","body":"Gr\u00fc\u00dfe"}'),
        ("surrogate-pair escapes (\\ud83d\\ude00) make one astral character",
         r'{"chat_id":"c-1","title":"\ud83d\ude00","body":"\uD83D\uDC4B\ud83c\udffd"}'),
        ("the escapes \\/ \\\" \\\\ \\b \\f \\n \\r \\t",
         r'{"chat_id":"c\/1","title":"\"quoted\" \\ back","body":"a\bb\fc\nd\re\tf"}'),
        ("\\u0000 (NUL) escaped inside an extra string is a valid character",
         r'{"chat_id":"c-1","title":"Anna","body":"Hi!","nul":"a\u0000b"}'),
        ("escaped noncharacter \\uffff and escaped ASCII \\u0041",
         r'{"chat_id":"c-1","title":"\u0041nna","body":"\uffff"}'),
    ]
    for i, (description, text) in enumerate(escaped):
        v.ok_push(description, seal(f"unicode escaped {i}", text))


def seal_showing(label: str, plaintext, fields=("epk", "n", "ct")) -> Push:
    """seal(), with the first of the labels `label #0`, `label #1`, ... whose
    fields all show both '-' and '_', so that their standard spelling differs
    from the URL-safe one and an alphabet can be mixed within each field."""
    text = plaintext if isinstance(plaintext, str) else k.dumps(plaintext)
    for i in itertools.count():
        candidate = f"{label} #{i}"
        env = k.seal(text.encode(), DEVICE_PK, det(candidate + " esk", 32), det(candidate + " nonce", 24))
        if all("-" in b64url(getattr(env, f)) and "_" in b64url(getattr(env, f)) for f in fields):
            return seal(candidate, text)


def encodings(v: Files):
    v.start("encodings.json")
    p = seal_showing("encodings base", BASIC)
    styles = {"url": "base64url unpadded", "url=": "base64url padded",
              "std": "standard base64 unpadded", "std=": "standard base64 padded"}
    for style, name in styles.items():
        v.ok_push(f"every field {name}", p, visible(p.kindly(style)))
    for field in ("kid", "epk", "n", "ct"):
        data = getattr(p.envelope, field)
        written = {encode(data)}
        for style, name in styles.items():
            spelling = encode(data, style)
            if spelling in written:
                continue   # n (24 bytes) takes no padding: its padded spellings are the unpadded ones
            written.add(spelling)
            v.ok_push(f"{field} alone {name}, the others base64url unpadded", p, **{field: spelling})
    v.ok_push("each field in its own spelling: kid std padded, epk url unpadded, n std, ct url padded", p,
              kid=encode(p.envelope.kid, "std="), n=encode(p.envelope.n, "std"), ct=encode(p.envelope.ct, "url="))
    p208 = seal_showing("encodings 208", text_of_length(150), ["ct"])   # 208 bytes take '==' padding
    assert len(p208.envelope.ct) == 208
    for style in ("url=", "std=", "std"):
        v.ok_push(f"ct of 208 bytes {styles[style]} (padded form ends in '==')", p208,
                  ct=encode(p208.envelope.ct, style))
    # JSON escapes are JSON's business: the field's string value is what is base64.
    kid = encode(p.envelope.kid)
    v.ok_push("kid written with a JSON escape (\\u00XX) for its first character: the string value is "
              "canonical base64", p, kid=RawJson('"\\u%04x%s"' % (ord(kid[0]), kid[1:])))
    ct_std = encode(p.envelope.ct, "std")
    v.ok_push("standard-base64 ct whose '/' characters are written as the JSON escape \\/", p,
              ct=RawJson('"%s"' % ct_std.replace("/", "\\/")))


def not_kindly(v: Files):
    v.start("not-kindly.json")
    p = seal("not kindly base", BASIC)
    e = p.kindly()
    cases = [
        ("no kindly key: a visible push of another provider",
         {"aps": {"alert": {"title": "Hello", "body": "World"}, "sound": "default"}}),
        ("no kindly key, host data with a kindly-looking object elsewhere",
         {"aps": VISIBLE_APS, "acme": {"kindly": e}}),
        ("the empty document", {}),
        ("kindly is an array (holding an envelope object)", {"aps": VISIBLE_APS, "kindly": [e]}),
        ("kindly is the empty array", {"aps": VISIBLE_APS, "kindly": []}),
        ("kindly is a string holding the envelope's JSON", {"aps": VISIBLE_APS, "kindly": k.dumps(e)}),
        ("kindly is the number 1", {"aps": VISIBLE_APS, "kindly": 1}),
        ("kindly is null", {"aps": VISIBLE_APS, "kindly": None}),
        ("kindly is true", {"aps": VISIBLE_APS, "kindly": True}),
        ("kindly is false", {"aps": VISIBLE_APS, "kindly": False}),
        ("the key is Kindly (capital K), not kindly", {"aps": VISIBLE_APS, "Kindly": e}),
        ("the key is 'kindly ' (trailing space)", {"aps": VISIBLE_APS, "kindly ": e}),
        ("kindly nested inside aps is not top-level", {"aps": {"alert": "Hi", "kindly": e}}),
        ("envelope fields at top level without a kindly object", {"aps": VISIBLE_APS, **e}),
        ("two top-level kindly members, neither an object (1 and \"x\")",
         obj(("aps", VISIBLE_APS), ("kindly", 1), ("kindly", "x"))),
    ]
    for description, apns in cases:
        v.add(description, apns, error("not_kindly"))


def version(v: Files):
    v.start("version.json")
    rejected = [
        (MISSING, "v missing"), (4, "v 4 (no version uses it)"), (0, "v 0"), (-1, "v -1"), ("1", 'v the string "1"'),
        (True, "v true (not a number, though true == 1 in some languages)"), (False, "v false"),
        (None, "v null"), (num("1.5"), "v 1.5"), ([1], "v [1]"), ({"v": 1}, "v {\"v\":1}"),
        (num("1e1"), "v 1e1 = 10"), (num("11e-1"), "v 11e-1 = 1.1"), (num("-1.0"), "v -1.0"),
        (num("1.0000000000000000000001"), "v 1.0000000000000000000001: not exactly 1 (a double would round it to 1)"),
        (num("0.99999999999999999999"), "v 0.99999999999999999999: not exactly 1"),
        ("1.0", 'v the string "1.0"'),
    ]
    for i, (value, description) in enumerate(rejected):
        p = seal(f"version rejected {i}", {"chat_id": f"c-v{i}", "title": "Anna", "body": "version"})
        v.add(description, visible(p.kindly(v=value)), error("unsupported_version"), p)
    p = seal("version capital V", {"chat_id": "c-vV", "title": "Anna", "body": "version"})
    v.add("V (capital) instead of v: v is missing", visible(p.kindly(v=MISSING, V=1)), error("unsupported_version"), p)
    for lexeme in ("1", "1.0", "1.00", "1e0", "1E0", "1e+0", "1e-0", "10e-1", "0.1e1", "100e-2", "0.001e3"):
        p = seal(f"version accepted {lexeme}", {"chat_id": "c-v", "title": "Anna", "body": f"v {lexeme}"})
        v.ok_push(f"v {lexeme}: a JSON number equal to 1 is version 1", p, v=num(lexeme))


def malformed(v: Files):
    v.start("malformed.json")
    p = seal_showing("malformed base", BASIC)
    e = p.envelope

    def bad(description, apns):
        v.add(description, apns, error("malformed"))

    sizes = {"kid": 8, "epk": 32, "n": 24}
    for field in ("kid", "epk", "n", "ct"):
        good = encode(getattr(e, field))
        bad(f"{field} missing", visible(p.kindly(**{field: MISSING})))
        bad(f"{field} is a number", visible(p.kindly(**{field: 12345678})))
        bad(f"{field} is null", visible(p.kindly(**{field: None})))
        bad(f"{field} is an array holding its base64 string", visible(p.kindly(**{field: [good]})))
        bad(f"{field} is the empty string", visible(p.kindly(**{field: ""})))
        bad(f"{field} has a character outside both alphabets ('*')",
            visible(p.kindly(**{field: good[:4] + "*" + good[5:]})))
        if field in sizes:
            for delta in (-1, 1):
                data = det(f"malformed {field} {delta}", sizes[field] + delta)
                bad(f"{field} decodes to {sizes[field] + delta} bytes instead of {sizes[field]}",
                    visible(p.kindly(**{field: encode(data)})))
    for size, why in ((79, "one less than the minimum 80"), (81, "80 + 1"), (143, "144 - 1"), (145, "144 + 1"),
                      (16, "a tag alone"), (64, "one block without a tag"), (96, "16 + 80, not 16 + 64j")):
        bad(f"ct decodes to {size} bytes ({why})", visible(p.kindly(ct=encode(det(f"malformed ct {size}", size)))))

    kid, epk, n, ct = (encode(x) for x in (e.kid, e.epk, e.n, e.ct))
    bad("kid mixes the alphabets ('+' and '_')", visible(p.kindly(kid=kid.replace("-", "+"))))
    bad("ct mixes the alphabets ('-' and '/')", visible(p.kindly(ct=ct.replace("_", "/"))))
    bad("epk has a space inside", visible(p.kindly(epk=epk[:20] + " " + epk[20:])))
    bad("ct has a line break after 76 characters (MIME style)", visible(p.kindly(ct=ct[:76] + "\n" + ct[76:])))
    bad("ct has a CRLF line break", visible(p.kindly(ct=ct[:64] + "\r\n" + ct[64:])))
    bad("n has a tab inside", visible(p.kindly(n=n[:16] + "\t" + n[16:])))
    bad("kid has a leading space", visible(p.kindly(kid=" " + kid)))
    bad("epk has a trailing space", visible(p.kindly(epk=epk + " ")))
    bad("n ends with a line feed", visible(p.kindly(n=n + "\n")))
    bad("kid with '==' (too much padding: 8 bytes take one '=')", visible(p.kindly(kid=kid + "==")))
    bad("epk with '==' (too much padding: 32 bytes take one '=')", visible(p.kindly(epk=epk + "==")))
    bad("n with '=' (24 bytes take no padding)", visible(p.kindly(n=n + "=")))
    bad("n with '====' (a whole quantum of padding)", visible(p.kindly(n=n + "====")))
    bad("'=' in the middle of kid", visible(p.kindly(kid=kid[:4] + "=" + kid[4:])))
    bad("epk made of hex digits (64 characters, all in the base64 alphabet, 48 bytes)",
        visible(p.kindly(epk=e.epk.hex())))
    bad("kid with a fullwidth letter (U+FF21) in place of a letter",
        visible(p.kindly(kid=kid[:3] + "\uff21" + kid[4:])))

    p208 = seal("malformed 208", text_of_length(150))
    ct208 = encode(p208.envelope.ct, "url=")
    assert ct208.endswith("==")
    bad("ct of 208 bytes with one '=' (too little padding: it takes two)", visible(p208.kindly(ct=ct208[:-1])))

    def bump(text: str, padded: str = "") -> str:
        # Change the last character so that only its unused trailing bits differ:
        # lenient decoders give the same bytes, a canonical one refuses.
        alphabet = k._URL_ALPHABET
        return text[:-1] + alphabet[alphabet.index(text[-1]) + 1] + padded
    bad("kid with non-zero trailing bits (the last character's unused 2 bits)", visible(p.kindly(kid=bump(kid))))
    bad("epk with non-zero trailing bits", visible(p.kindly(epk=bump(epk))))
    bad("ct of 80 bytes with non-zero trailing bits, padded", visible(p.kindly(ct=bump(ct, "="))))
    bad("ct of 208 bytes with non-zero trailing bits (4 unused bits), padded with '=='",
        visible(p208.kindly(ct=bump(ct208[:-2], "=="))))
    bad("n with one extra character (length % 4 == 1)", visible(p.kindly(n=n + "A")))
    bad("kid with two extra characters (13 characters, length % 4 == 1)", visible(p.kindly(kid=kid + "AA")))

    # Duplicate members: two readers must never see two different envelopes.
    good = p.kindly()
    bad("two top-level kindly members, both the same valid envelope",
        obj(("aps", VISIBLE_APS), ("kindly", good), ("kindly", good)))
    bad("two top-level kindly members: a valid envelope, then the number 1",
        obj(("aps", VISIBLE_APS), ("kindly", good), ("kindly", 1)))
    bad("two top-level kindly members: null, then a valid envelope (one object is enough to be Kindly's)",
        obj(("aps", VISIBLE_APS), ("kindly", None), ("kindly", good)))
    pd = seal("malformed dup aps", BASIC)
    v.add("duplicate top-level member aps", obj(("aps", VISIBLE_APS), ("kindly", pd.kindly()), ("aps", SILENT_APS)),
          error("malformed"), pd)
    pd = seal("malformed dup host", BASIC)
    v.add("duplicate top-level member of the host's own (acme)",
          obj(("acme", 1), ("aps", VISIBLE_APS), ("kindly", pd.kindly()), ("acme", 2)), error("malformed"), pd)
    pd = seal("malformed dup x", BASIC)
    fields = list(pd.kindly().items())
    v.add("duplicate unknown member x inside kindly",
          {"aps": VISIBLE_APS, "kindly": obj(*fields, ("x", 1), ("x", 1))}, error("malformed"), pd)
    fields = list(good.items())
    bad("duplicate kid inside kindly, same value twice",
        {"aps": VISIBLE_APS, "kindly": obj(*fields, ("kid", good["kid"]))})
    bad("duplicate kid inside kindly: another key's kid first, the device's second",
        {"aps": VISIBLE_APS, "kindly": obj(("kid", encode(OTHER_KID)), *fields)})
    bad("duplicate v inside kindly (1 and 1)", {"aps": VISIBLE_APS, "kindly": obj(("v", 1), *fields)})
    bad("duplicate ct inside kindly, the name written once plainly and once as c\\u0074",
        {"aps": VISIBLE_APS, "kindly": obj(*fields, (RawJson('"c\\u0074"'), encode(det("malformed dup ct", 80))))})


def key_unavailable(v: Files):
    v.start("key-unavailable.json")
    p = seal("key other device", BASIC, pk=OTHER_PK)
    v.add("sealed correctly to another device's key: its kid is not the device's", visible(p.kindly()),
          error("key_unavailable"), p)
    p = seal("key base", BASIC)
    v.add("the device's push with kid replaced by 8 random bytes", visible(p.kindly(kid=encode(det("random kid", 8)))),
          error("key_unavailable"))
    v.add("the device's push with kid all zeros", visible(p.kindly(kid=encode(bytes(8)))), error("key_unavailable"))
    v.add("the device's push with kid replaced by another key's kid", visible(p.kindly(kid=encode(OTHER_KID))),
          error("key_unavailable"))
    wrong_kids = [
        ("BLAKE2b-512 of pk truncated to 8 bytes (not BLAKE2b with output length 8)",
         hashlib.blake2b(DEVICE_PK).digest()[:8]),
        ("BLAKE2b-8 of the secret key instead of the public key", k.key_id(DEVICE_SK)),
        ("the first 8 bytes of pk", DEVICE_PK[:8]),
    ]
    for i, (how, kid) in enumerate(wrong_kids):
        p = seal_message(f"key wrong kid {i}", k.pad(k.dumps(BASIC).encode()), kid=kid)
        v.add(f"kid computed as {how}, used as kid and in the aad: a reader that derives kids that way "
              "would decrypt it", visible(p.kindly()), error("key_unavailable"))


LOW_ORDER = [   # u-coordinates whose X25519 with any clamped scalar is all zeros (RFC 7748, Wycheproof)
    ("0", "00" * 32),
    ("1", "01" + "00" * 31),
    ("a point of order 8", "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
    ("the other point of order 8", "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
    ("p - 1 (order 2)", "ec" + "ff" * 30 + "7f"),
    ("p (= 0 mod p)", "ed" + "ff" * 30 + "7f"),
    ("p + 1 (= 1 mod p)", "ee" + "ff" * 30 + "7f"),
]


def authentication(v: Files):
    v.start("authentication.json")
    p = seal("auth base", BASIC)
    e = p.envelope
    other = seal("auth other", {"chat_id": "c-2", "title": "Ben", "body": "another push"})

    def fails(description, push=p, **changes):
        v.add(description, visible(push.kindly(**changes)), error("authentication_failed"))

    fails("first ciphertext byte flipped", ct=encode(flip(e.ct, 0)))
    fails("last ciphertext byte before the tag flipped", ct=encode(flip(e.ct, -17)))
    fails("first tag byte flipped", ct=encode(flip(e.ct, -16)))
    fails("last tag byte flipped (high bit)", ct=encode(flip(e.ct, -1, 0x80)))
    fails("nonce with one bit flipped", n=encode(flip(e.n, 23, 0x40)))
    fails("nonce of another push", n=encode(other.envelope.n))
    fails("epk replaced by another valid point (the epk of another push)", epk=encode(other.envelope.epk))
    fails("epk replaced by the device's own public key", epk=encode(DEVICE_PK))
    fails("ct of another push to the same device (same kid)", ct=encode(other.envelope.ct))
    fails("ct all zeros (80 bytes)", ct=encode(bytes(80)))
    p144 = seal("auth 144", text_of_length(100))
    assert len(p144.envelope.ct) == 144
    fails("ct of 144 bytes with its first block removed (80 bytes: a valid length)", p144,
          ct=encode(p144.envelope.ct[64:]))
    fails("ct with 64 zero bytes appended (144 bytes: a valid length)", ct=encode(e.ct + bytes(64)))
    message = k.pad(k.dumps(BASIC).encode())
    crafted = [
        ("sealed with aad = LABEL || another key's kid while kid says the device's kid: the aad binds the kid",
         dict(aad=k.aad_for(OTHER_KID))),
        ("sealed with aad = kid alone (no LABEL)", dict(aad=DEVICE_KID)),
        ("sealed with an empty aad", dict(aad=b"")),
        ("sealed with k = BLAKE2b-256(LABEL || ss || pk || epk) (pk and epk swapped)",
         dict(derive=lambda ss, epk, pk: k.derive_key(ss, pk, epk))),
        ("sealed with k = ss (no key derivation)", dict(derive=lambda ss, epk, pk: ss)),
    ]
    for i, (description, how) in enumerate(crafted):
        fails(description, seal_message(f"auth crafted {i}", message, **how))
    for name, hex_u in LOW_ORDER:
        for top in (False, True):
            u = bytearray.fromhex(hex_u)
            if top:
                u[31] |= 0x80
            u = bytes(u)
            assert k.x25519(DEVICE_SK, u) == bytes(32)
            fails(f"low-order epk {name}{' with the top bit set' if top else ''} ({u.hex()}): all-zero shared secret",
                  epk=encode(u))


def epk_handling(v: Files):
    v.start("epk.json")
    text = k.dumps({"chat_id": "c-epk", "title": "Anna", "body": "epk handling"})
    base = seal("epk base", text)
    top = bytearray(base.envelope.epk)
    top[31] |= 0x80
    p = seal_with_epk("epk top bit", text, bytes(top))
    v.ok_push("epk with its top bit set decrypts: X25519 ignores the top bit (same shared secret as without "
              "it), and k is derived over the epk bytes as transmitted", p)
    v.add("a normally sealed push whose epk top bit was set in transit: same shared secret, but k binds the "
          "epk bytes, so the tag fails", visible(base.kindly(epk=encode(bytes(top)))), error("authentication_failed"))
    nine = (9).to_bytes(32, "little")
    v.ok_push("epk = 9, the base point (ss = X25519(sk, 9) = the device's pk)", seal_with_epk("epk nine", text, nine))
    v.ok_push("epk = p + 9, a non-canonical encoding of 9: X25519 reduces it mod p",
              seal_with_epk("epk p+9", text, (P + 9).to_bytes(32, "little")))
    v.ok_push("epk = p + 9 with the top bit set as well",
              seal_with_epk("epk p+9 top", text, (P + 9 + 2**255).to_bytes(32, "little")))


def bad_plaintext(v: Files):
    v.start("bad-plaintext.json")
    good = '{"chat_id":"c-1","title":"Pad","body":"x"}'.encode()

    def raw(description, message: bytes, label: str):
        p = seal_message(label, message)
        v.add(description, visible(p.kindly()), error("bad_plaintext"))

    def text(description, plaintext, label: str):
        if isinstance(plaintext, bytes):   # not UTF-8: cannot be a JSON string, so no sealing fields
            raw(description, k.pad(plaintext), label)
        else:
            p = seal(label, plaintext)
            v.add(description, visible(p.kindly()), error("bad_plaintext"), p)

    # Padding, as sodium_unpad judges it with block size 64.
    raw("no 0x80 marker: text followed by zeros", good + bytes(64 - len(good)), "pad no marker")
    raw("marker followed by a non-zero byte (0x01)", good + b"\x80\x01" + bytes(62 - len(good)), "pad marker 01")
    raw("marker, zeros, then a last byte 0x01", good + b"\x80" + bytes(62 - len(good)) + b"\x01", "pad last 01")
    raw("marker byte 0x81 instead of 0x80", good + b"\x81" + bytes(63 - len(good)), "pad 81")
    raw("marker more than 64 bytes from the end (the last block is all zeros)",
        good + b"\x80" + bytes(127 - len(good)), "pad far")
    t63 = text_of_length(63).encode()
    raw("padding one byte longer than a block: 63-byte text, 0x80, 64 zeros", t63 + b"\x80" + bytes(64), "pad 65")
    raw("a 64-byte text with no padding at all (ends in '}')", text_of_length(64).encode(), "pad none")
    raw("a block of 64 zeros: no text, no marker", bytes(64), "pad zeros")
    text("the empty text (0x80 then 63 zeros): valid padding, but nothing to parse", "", "pt empty")

    # Not UTF-8.
    for i, (description, bad_bytes) in enumerate([
            ("a 0xFF byte", b"\xff"), ("a lone continuation byte 0x80", b"\x80"),
            ("a truncated 3-byte sequence (E2 82)", b"\xe2\x82"), ("overlong '/' (C0 AF)", b"\xc0\xaf"),
            ("overlong 3-byte form (E0 80 AF)", b"\xe0\x80\xaf"),
            ("an encoded surrogate U+D800 (ED A0 80, CESU-8)", b"\xed\xa0\x80"),
            ("a code point above U+10FFFF (F4 90 80 80)", b"\xf4\x90\x80\x80"),
            ("a 5-byte form (F8 88 80 80 80)", b"\xf8\x88\x80\x80\x80"),
            ("Latin-1 e-acute (E9) followed by ASCII", b"\xe9t\xe9")]):
        text(f"not UTF-8: {description} in the title",
             b'{"chat_id":"c-1","title":"a' + bad_bytes + b'b","body":"x"}', f"pt utf8 {i}")

    # Not a JSON object / not RFC 8259 JSON.
    body = '"chat_id":"c-1","title":"Anna","body":"Hi!"'
    for i, (description, plaintext) in enumerate([
            ("a byte-order mark (U+FEFF) before the object", "\ufeff{%s}" % body),
            ("a JSON array holding a valid object", "[{%s}]" % body),
            ("a JSON string", '"{\\"chat_id\\":\\"c-1\\"}"'),
            ("a JSON number", "42"), ("JSON null", "null"), ("JSON true", "true"),
            ("truncated JSON (the closing brace missing)", "{%s" % body),
            ("trailing garbage after the object", "{%s}x" % body),
            ("two objects one after the other", "{%s}{%s}" % (body, body)),
            ("a NUL character after the object", "{%s}\u0000" % body),
            ("a trailing comma", "{%s,}" % body),
            ("NaN as an extra's value (Python's json would take it)", '{%s,"x":NaN}' % body),
            ("Infinity as an extra's value", '{%s,"x":Infinity}' % body),
            ("-Infinity as an extra's value", '{%s,"x":-Infinity}' % body),
            ("a number with a leading zero (01)", '{%s,"x":01}' % body),
            ("a number with a leading + (+1)", '{%s,"x":+1}' % body),
            ("a number ending in a dot (1.)", '{%s,"x":1.}' % body),
            ("single-quoted strings", "{'chat_id':'c-1','title':'Anna','body':'Hi!'}"),
            ("an unquoted member name", '{%s,x:1}' % body),
            ("a comment", "{%s /* comment */}" % body),
            ("a raw tab inside a string", '{"chat_id":"c-1","title":"An\tna","body":"Hi!"}'),
            ("a raw line feed inside a string", '{"chat_id":"c-1","title":"Anna","body":"Hi\n!"}'),
            ("an invalid escape \\x41", '{"chat_id":"c-1","title":"\\x41nna","body":"Hi!"}'),
            ("a short \\u escape (\\u12)", '{"chat_id":"c-1","title":"\\u12","body":"Hi!"}')]):
        text(description, plaintext, f"pt json {i}")

    # Section 4 fields.
    for i, (description, plaintext) in enumerate([
            ("chat_id missing", {"title": "Anna", "body": "Hi!"}),
            ("title missing", {"chat_id": "c-1", "body": "Hi!"}),
            ("body missing", {"chat_id": "c-1", "title": "Anna"}),
            ("the empty object", {}),
            ("chat_id the empty string", {"chat_id": "", "title": "Anna", "body": "Hi!"}),
            ("chat_id a number", {"chat_id": 42, "title": "Anna", "body": "Hi!"}),
            ("chat_id null", {"chat_id": None, "title": "Anna", "body": "Hi!"}),
            ("title null", {"chat_id": "c-1", "title": None, "body": "Hi!"}),
            ("title a number", {"chat_id": "c-1", "title": 1, "body": "Hi!"}),
            ("body an array", {"chat_id": "c-1", "title": "Anna", "body": ["Hi!"]}),
            ("body an object", {"chat_id": "c-1", "title": "Anna", "body": {"text": "Hi!"}}),
            ("message_id a number", {**BASIC, "message_id": 1001}),
            ("message_id null (an optional key, when present, must have its type)", {**BASIC, "message_id": None}),
            ('sent_at a string ("1700000000")', {**BASIC, "sent_at": "1700000000"}),
            ("sent_at null", {**BASIC, "sent_at": None}),
            ("sent_at true (not a number)", {**BASIC, "sent_at": True}),
            ("sent_at -1", {**BASIC, "sent_at": -1}),
            ("sent_at -1e0", {**BASIC, "sent_at": num("-1e0")}),
            ("sent_at 1.5", {**BASIC, "sent_at": num("1.5")}),
            ("sent_at 15e-1 = 1.5 (not integral)", {**BASIC, "sent_at": num("15e-1")}),
            ("sent_at 0.5", {**BASIC, "sent_at": num("0.5")}),
            ("sent_at 1e-1", {**BASIC, "sent_at": num("1e-1")}),
            ("sent_at 1700000000.5", {**BASIC, "sent_at": num("1700000000.5")}),
            ("sent_at 2^53 = 9007199254740992 (one above the largest)", {**BASIC, "sent_at": 2**53}),
            ("sent_at 9007199254740992.0", {**BASIC, "sent_at": num("9007199254740992.0")}),
            ("sent_at 1e16", {**BASIC, "sent_at": num("1e16")}),
            ("sent_at 1e400", {**BASIC, "sent_at": num("1e400")}),
            ("sent_at 9007199254740991.5 (2^53-1 plus a half; a double would round it to an integer)",
             {**BASIC, "sent_at": num("9007199254740991.5")}),
            ("sent_at [1700000000]", {**BASIC, "sent_at": [1700000000]})]):
        text(description, plaintext, f"pt field {i}")

    # Duplicate member names anywhere, and unpaired surrogate escapes anywhere.
    for i, (description, plaintext) in enumerate([
            ("duplicate chat_id at the top level (same value twice)",
             '{"chat_id":"c-1","title":"Anna","body":"Hi!","chat_id":"c-1"}'),
            ("duplicate title at the top level (two values)",
             '{"chat_id":"c-1","title":"Anna","body":"Hi!","title":"Mallory"}'),
            ("duplicate name written once with an escape (title and t\\u0069tle)",
             '{"chat_id":"c-1","title":"Anna","body":"Hi!","t\\u0069tle":"Mallory"}'),
            ("duplicate member in a nested extra object", '{%s,"meta":{"a":1,"a":2}}' % body),
            ("duplicate member in an object inside an extra array", '{%s,"list":[{"b":true,"b":true}]}' % body),
            ("unpaired high surrogate escape \\ud800 in the title",
             '{"chat_id":"c-1","title":"a\\ud800b","body":"Hi!"}'),
            ("unpaired low surrogate escape \\udc00 in the body", '{"chat_id":"c-1","title":"Anna","body":"\\udc00"}'),
            ("surrogate escapes in the wrong order (\\ude00\\ud83d)",
             '{"chat_id":"c-1","title":"\\ude00\\ud83d","body":"Hi!"}'),
            ("high surrogate escape followed by a non-surrogate escape (\\ud83d\\u0041)",
             '{"chat_id":"c-1","title":"\\ud83d\\u0041","body":"Hi!"}'),
            ("high surrogate escape at the end of chat_id", '{"chat_id":"c-1\\ud83d","title":"Anna","body":"Hi!"}'),
            ("unpaired surrogate escape in an extra's member name", '{%s,"x\\udfff":1}' % body),
            ("unpaired surrogate escape deep in an extra array", '{%s,"x":[["ok","\\ud800"]]}' % body)]):
        text(description, plaintext, f"pt dup {i}")


def check_order(v: Files):
    v.start("check-order.json")
    p = seal("order base", BASIC)
    e = p.envelope
    other = seal("order other key", BASIC, pk=OTHER_PK)
    low = bytes.fromhex(LOW_ORDER[2][1])
    cases = [
        ("not_kindly before malformed: duplicate top-level aps in a push without kindly",
         obj(("aps", VISIBLE_APS), ("aps", SILENT_APS)), "not_kindly"),
        ("not_kindly before unsupported_version: kindly is an array holding an envelope with v 2",
         {"kindly": [p.kindly(v=2)]}, "not_kindly"),
        ("unsupported_version: kindly is the empty object (every field missing, v first)",
         {"aps": VISIBLE_APS, "kindly": {}}, "unsupported_version"),
        ("unsupported_version before malformed: v 4 with kid not base64",
         visible(p.kindly(v=4, kid="*not base64*")), "unsupported_version"),
        ('unsupported_version before malformed: v "1" with ct of a wrong length',
         visible(p.kindly(v="1", ct=encode(bytes(79)))), "unsupported_version"),
        ("unsupported_version before malformed: v missing and epk missing",
         visible(p.kindly(v=MISSING, epk=MISSING)), "unsupported_version"),
        ("malformed (duplicate) before unsupported_version: duplicate kid and v 4",
         {"aps": VISIBLE_APS, "kindly": obj(("v", 4), *list(p.kindly(v=MISSING).items()), ("kid", encode(e.kid)))},
         "malformed"),
        ("malformed (duplicate) before unsupported_version: duplicate top-level member and v missing",
         obj(("aps", VISIBLE_APS), ("kindly", p.kindly(v=MISSING)), ("aps", VISIBLE_APS)), "malformed"),
        ("malformed (duplicate) before unsupported_version: kindly twice, the object has v true",
         obj(("kindly", "x"), ("kindly", p.kindly(v=True))), "malformed"),
        ("malformed before key_unavailable: epk not base64 and kid of another key",
         visible(p.kindly(kid=encode(OTHER_KID), epk="!" * 43)), "malformed"),
        ("malformed before key_unavailable: unknown kid and ct of 81 bytes",
         visible(p.kindly(kid=encode(det("order random kid", 8)), ct=encode(bytes(81)))), "malformed"),
        ("malformed before key_unavailable: kid of 9 bytes (not any key's kid) with a valid rest",
         visible(p.kindly(kid=encode(DEVICE_KID + b"\x00"))), "malformed"),
        ("key_unavailable before authentication_failed: unknown kid and a flipped tag byte",
         visible(p.kindly(kid=encode(det("order random kid 2", 8)), ct=encode(flip(e.ct, -1)))), "key_unavailable"),
        ("key_unavailable before authentication_failed: another key's push with a low-order epk",
         visible(other.kindly(epk=encode(low))), "key_unavailable"),
        ("authentication_failed: low-order epk together with a ct that would not verify anyway",
         visible(p.kindly(epk=encode(low), ct=encode(bytes(144)))), "authentication_failed"),
    ]
    for description, apns, reason in cases:
        v.add(description, apns, error(reason))
    pb = seal("order bad plaintext", '{"chat_id":"","title":"Anna","body":"Hi!"}')
    v.add("bad_plaintext comes last: a push that authenticates and has an empty chat_id, with host data and "
          "no aps", {"kindly": pb.kindly(), "acme": 1}, error("bad_plaintext"), pb)


def sizes(v: Files):
    v.start("sizes.json")
    minimal = '{"chat_id":"c","title":"","body":""}'
    for size in (len(minimal), 62, 63, 64, 65, 127, 128, 191, 192):
        p = seal(f"size {size}", minimal if size == len(minimal) else text_of_length(size))
        blocks = len(p.envelope.ct) - 16
        v.ok_push(f"plaintext of {size} bytes: padded to {blocks} bytes, ct {len(p.envelope.ct)} bytes"
                  + (" (exactly one 0x80)" if size % 64 == 63 else "")
                  + (" (a whole extra block of padding)" if size % 64 == 0 else ""), p)

    def compact_size(apns) -> int:
        return len(k.dumps(apns).encode("utf-8"))

    # The largest visible push: the biggest ct that fits with the default
    # placeholder, then a placeholder body long enough to reach exactly 4096.
    size = 2000
    while True:
        p = seal(f"limit visible probe {size}", text_of_length(size, "Limit"))
        if compact_size(k.apns_payload(p.envelope)) > k.APNS_LIMIT:
            break
        best, size = p, size + 64
    spare = k.APNS_LIMIT - compact_size(k.apns_payload(best.envelope))
    apns = k.apns_payload(best.envelope, body=k.DEFAULT_BODY + "." * spare)
    assert compact_size(apns) == k.APNS_LIMIT
    v.ok_push(f"visible push of exactly 4096 bytes as seal writes it (compact UTF-8), plaintext "
              f"{len(best.text)} bytes, ct {len(best.envelope.ct)} bytes", best, apns)
    size = 2000
    while True:
        p = seal(f"limit silent probe {size}", text_of_length(size, "Limit"))
        if compact_size(k.apns_payload(p.envelope, "silent")) > k.APNS_LIMIT:
            break
        best, size = p, size + 64
    apns = k.apns_payload(best.envelope, "silent")
    v.ok_push(f"the largest silent push: {compact_size(apns)} bytes compact (one more 64-byte block would "
              f"exceed 4096), ct {len(best.envelope.ct)} bytes", best, apns)
    p = seal("over limit", text_of_length(5000, "Large"))
    apns = k.apns_payload(p.envelope)
    v.ok_push(f"a push of {compact_size(apns)} bytes compact, over APNs's 4096: the limit binds seal, "
              "decrypt has no such check", p, apns)


# ---------------------------------------------------------------------------
# The plaintext's `truncated` key (section 4), and version 2 (section 7).
# ---------------------------------------------------------------------------

def truncated(v: Files):
    v.start("truncated.json")
    with_id = {**BASIC, "message_id": "m-77"}
    for i, (description, plaintext) in enumerate([
            ("truncated true with message_id: seal --fit cut the body, the app fetches the message by its id",
             {**with_id, "body": "The first words of a long mess", "truncated": True}),
            ("truncated false", {**with_id, "truncated": False}),
            ("truncated true without message_id (message_id stays optional)", {**BASIC, "truncated": True}),
            ("truncated false, written before the required keys", '{"truncated":false,"chat_id":"c-1","title":"Anna",'
                                                                   '"body":"Hi!"}')]):
        v.ok_push(description, seal(f"truncated ok {i}", plaintext))
    for i, (description, value) in enumerate([
            ('truncated the string "yes"', "yes"), ('truncated the string "true"', "true"),
            ("truncated the number 1 (a number, not a boolean)", 1), ("truncated the number 0", 0),
            ("truncated null (an optional key, when present, must have its type)", None),
            ("truncated [true]", [True]), ("truncated {}", {})]):
        p = seal(f"truncated bad {i}", {**with_id, "truncated": value})
        v.add(description, visible(p.kindly()), error("bad_plaintext"), p)
    p = seal("truncated bad dup", '{"chat_id":"c-1","title":"Anna","body":"Hi!","truncated":true,"truncated":false}')
    v.add("truncated twice (true, then false): a duplicate member name", visible(p.kindly()), error("bad_plaintext"), p)


def _sender_key(name: str) -> bytes:
    """The first key `name i` whose sid's base64url shows both '-' and '_', so
    that the alphabet vectors have something to change in sid."""
    for i in itertools.count():
        sk = det(f"{name} {i}", 32)
        sid = b64url(k.sender_id(k.public_key_of(sk)))
        if "-" in sid and "_" in sid:
            return sk


SENDER_SK = _sender_key("sender key")              # the backend's sender key, pinned by the device
SENDER_PK = k.public_key_of(SENDER_SK)
SENDER_SID = k.sender_id(SENDER_PK)
SENDER2_SK = det("second sender key", 32)          # the same backend's next key (rotation)
SENDER2_PK = k.public_key_of(SENDER2_SK)
SENDER2_SID = k.sender_id(SENDER2_PK)
STRANGER_SK = det("stranger sender key", 32)       # a sender key nobody pins
STRANGER_PK = k.public_key_of(STRANGER_SK)
PINNED = [SENDER_PK]
BASIC_MESSAGE = k.pad(k.dumps(BASIC).encode())


def seal2(label: str, plaintext, sender_sk: bytes = SENDER_SK, pk: bytes = DEVICE_PK) -> Push:
    """Seal version 2 exactly as section 7.2 says."""
    text = plaintext if isinstance(plaintext, str) else k.dumps(plaintext)
    esk, nonce = _fresh(label)
    sealing = {"ephemeral_secret_key": b64url(esk), "nonce": b64url(nonce), "plaintext": text,
               "sender_secret_key": b64url(sender_sk)}
    return Push(k.seal(text.encode("utf-8"), pk, esk, nonce, sender_sk), text, sealing if pk == DEVICE_PK else None)


def craft2(label: str, message: bytes = BASIC_MESSAGE, *, spk: bytes = SENDER_PK, epk: bytes | None = None,
           kid: bytes = DEVICE_KID, sid: bytes | None = None, aad: bytes | None = None,
           derive=k.derive_key_v2, text: str | None = None) -> Push:
    """A version 2 envelope built from the device's side: ss_e = X25519(device sk,
    epk), ss_s = X25519(device sk, spk) (the same values a sender computes), k and
    aad as section 7.2 says unless changed. Makes pushes no sender could seal as
    such (low-order epk or spk, non-canonical spk bytes, another kid, sid, aad or
    derivation), and tags that verify for a reader that skips a check."""
    esk, nonce = _fresh(label)
    epk = k.public_key_of(esk) if epk is None else epk
    sid = k.sender_id(spk) if sid is None else sid
    key = derive(k.x25519(DEVICE_SK, epk), k.x25519(DEVICE_SK, spk), epk, DEVICE_PK, spk)
    ct = k.aead_encrypt(key, nonce, k.aad_v2(kid, sid) if aad is None else aad, message)
    return Push(k.Envelope(kid, epk, nonce, ct, sid), text)


def _check_craft2_is_seal2():
    """craft2 with nothing changed is the sender's seal: the device-side
    construction the crafted vectors rely on is the spec's."""
    esk, nonce = det("craft2 self-check esk", 32), det("craft2 self-check nonce", 24)
    sealed = k.seal(k.dumps(BASIC).encode(), DEVICE_PK, esk, nonce, SENDER_SK)
    key = k.derive_key_v2(k.x25519(DEVICE_SK, sealed.epk), k.x25519(DEVICE_SK, SENDER_PK), sealed.epk, DEVICE_PK,
                          SENDER_PK)
    assert k.aead_encrypt(key, nonce, k.aad_v2(DEVICE_KID, SENDER_SID), BASIC_MESSAGE) == sealed.ct


def low_order_points(top_bits=(False,)):
    for name, hex_u in LOW_ORDER:
        for top in top_bits:
            u = bytearray.fromhex(hex_u)
            if top:
                u[31] |= 0x80
            u = bytes(u)
            assert k.x25519(DEVICE_SK, u) == bytes(32)
            yield f"{name}{' with the top bit set' if top else ''}", u


def v2_ok(v: Files):
    v.start("v2-ok.json")
    _check_craft2_is_seal2()
    p = seal2("v2 ok visible", BASIC)
    v.ok_push("version 2 visible push, minimal plaintext; the reader pins its sender key", p, pinned=PINNED)
    p = seal2("v2 ok silent", {"chat_id": "c-2", "title": "Ben", "body": "silent one"})
    v.ok_push("version 2 silent push", p, {"aps": SILENT_APS, "kindly": p.kindly()}, pinned=PINNED)
    p = seal2("v2 ok no aps", {"chat_id": "c-3", "title": "Cleo", "body": "no aps at all"})
    v.ok_push("version 2 push without aps", p, {"kindly": p.kindly()}, pinned=PINNED)
    p = seal2("v2 ok full", {"chat_id": "chat-42", "title": "Anna", "body": "See you at 8?", "message_id": "m-1001",
                             "sent_at": 1700000000})
    v.ok_push("version 2 push with message_id and sent_at", p, pinned=PINNED)
    p = seal2("v2 ok truncated", {"chat_id": "chat-42", "title": "Anna", "body": "The first words of a long mess",
                                  "message_id": "m-1002", "truncated": True})
    v.ok_push("version 2 push with truncated true and message_id", p, pinned=PINNED)
    p = seal2("v2 ok unicode", {"chat_id": "чат-𝄞", "title": "👩‍👩‍👧‍👦 你好", "body": "مرحبا \u2028 Cafe\u0301"})
    v.ok_push("version 2 push with non-ASCII text (emoji ZWJ sequence, CJK, Arabic, U+2028, a combining mark)", p,
              pinned=PINNED)
    p = seal2("v2 ok extras", {**BASIC, "meta": {"a": [1, None, True]}, "v": 1, "sid": "x"})
    v.ok_push("version 2 push whose plaintext has extras (named v and sid among them: just extras)", p, pinned=PINNED)
    p = seal2("v2 ok second pinned", {"chat_id": "c-4", "title": "Dan", "body": "second of two"})
    v.ok_push("two pinned keys, the sender's is the second", p, pinned=[SENDER2_PK, SENDER_PK])
    p = seal2("v2 ok third pinned", {"chat_id": "c-5", "title": "Eva", "body": "third of three"})
    v.ok_push("three pinned keys, the sender's is the third; the first is the all-zero point (a pinned key that "
              "can never authenticate does not stop the others)", p, pinned=[bytes(32), STRANGER_PK, SENDER_PK])
    p = seal2("v2 ok rotation", {"chat_id": "c-6", "title": "Finn", "body": "the backend's next key"},
              sender_sk=SENDER2_SK)
    v.ok_push("sealed with the backend's second sender key (rotation); both keys pinned, the first is the older one",
              p, pinned=[SENDER_PK, SENDER2_PK])
    p = seal2("v2 ok pinned twice", {"chat_id": "c-7", "title": "Gus", "body": "pinned twice"})
    v.ok_push("the same sender key pinned twice", p, pinned=[SENDER_PK, SENDER_PK])
    p = seal2("v2 ok kindly extras", {"chat_id": "c-8", "title": "Hana", "body": "extra keys in kindly"})
    v.ok_push("other keys inside kindly are ignored (decrypted, chat_id, unknown ones)", p, pinned=PINNED,
              decrypted=True, chat_id="another-chat", x=[1, {"y": None}])
    p = seal2("v2 ok order", {"chat_id": "c-9", "title": "Ida", "body": "fields in another order"})
    e = p.kindly()
    v.ok_push("kindly members in another order (sid, ct, n, epk, kid, v), kindly before aps", p,
              {"kindly": {name: e[name] for name in ("sid", "ct", "n", "epk", "kid", "v")}, "aps": VISIBLE_APS},
              pinned=PINNED)
    for size in (63, 64):
        p = seal2(f"v2 ok size {size}", text_of_length(size))
        v.ok_push(f"plaintext of {size} bytes: ct {len(p.envelope.ct)} bytes", p, pinned=PINNED)

    def compact_size(apns) -> int:
        return len(k.dumps(apns).encode("utf-8"))
    size = 2000
    while True:
        p = seal2(f"v2 limit visible probe {size}", text_of_length(size, "Limit"))
        if compact_size(k.apns_payload(p.envelope)) > k.APNS_LIMIT:
            break
        best, size = p, size + 64
    spare = k.APNS_LIMIT - compact_size(k.apns_payload(best.envelope))
    apns = k.apns_payload(best.envelope, body=k.DEFAULT_BODY + "." * spare)
    assert compact_size(apns) == k.APNS_LIMIT
    v.ok_push(f"version 2 visible push of exactly 4096 bytes as seal writes it (compact UTF-8), plaintext "
              f"{len(best.text)} bytes, ct {len(best.envelope.ct)} bytes", best, apns, pinned=PINNED)


def v2_version(v: Files):
    v.start("v2-version.json")
    for lexeme in ("2", "2.0", "2e0", "2E0", "2e+0", "2.00", "20e-1", "0.2e1", "200e-2"):
        p = seal2(f"v2 version accepted {lexeme}", {"chat_id": "c-v", "title": "Anna", "body": f"v {lexeme}"})
        v.ok_push(f"v {lexeme}: a JSON number equal to 2 is version 2", p, pinned=PINNED, v=num(lexeme))
    rejected = [
        ("2", 'v the string "2"'), ("2.0", 'v the string "2.0"'), (4, "v 4 (no version uses it)"), (0, "v 0"), (-2, "v -2"),
        (num("2.5"), "v 2.5"), (num("2e1"), "v 2e1 = 20"), (num("-2.0"), "v -2.0"),
        (num("2.0000000000000000000001"), "v 2.0000000000000000000001: not exactly 2 (a double would round it to 2)"),
        (num("1.9999999999999999999999"), "v 1.9999999999999999999999: not exactly 2"),
        (True, "v true"), (None, "v null"), ([2], "v [2]"), ({"v": 2}, 'v {"v":2}'), (MISSING, "v missing"),
    ]
    for i, (value, description) in enumerate(rejected):
        p = seal2(f"v2 version rejected {i}", {"chat_id": f"c-v{i}", "title": "Anna", "body": "version"})
        v.add(f"{description} on a version 2 envelope, sender pinned", visible(p.kindly(v=value)),
              error("unsupported_version"), p, pinned=PINNED)


def v2_encodings(v: Files):
    v.start("v2-encodings.json")
    p = seal2("v2 encodings base", BASIC)
    sid = encode(SENDER_SID)
    assert "-" in sid and "_" in sid
    styles = {"url=": "base64url padded", "std": "standard base64 unpadded", "std=": "standard base64 padded"}
    for style, name in styles.items():
        v.ok_push(f"sid {name} ({encode(SENDER_SID, style)}), the others base64url unpadded", p, pinned=PINNED,
                  sid=encode(SENDER_SID, style))
    v.ok_push("every field standard base64 padded", p, visible(p.kindly("std=")), pinned=PINNED)
    v.ok_push("sid written with a JSON escape (\\u00XX) for its first character: the string value is canonical base64",
              p, pinned=PINNED, sid=RawJson('"\\u%04x%s"' % (ord(sid[0]), sid[1:])))
    v.ok_push("standard-base64 sid whose '/' is written as the JSON escape \\/", p, pinned=PINNED,
              sid=RawJson('"%s"' % encode(SENDER_SID, "std").replace("/", "\\/")))

    def bad(description, value):
        v.add(f"{description}; sender pinned, everything else valid", visible(p.kindly(sid=value)),
              error("malformed"), pinned=PINNED)

    def bump(text: str, padded: str = "") -> str:
        alphabet = k._URL_ALPHABET
        return text[:-1] + alphabet[alphabet.index(text[-1]) + 1] + padded
    bad("sid missing (version 2 needs it)", MISSING)
    bad("sid is a number", 12345678)
    bad("sid is null", None)
    bad("sid is true", True)
    bad("sid is an array holding its base64 string", [sid])
    bad("sid is an object", {"sid": sid})
    bad("sid is the empty string", "")
    bad("sid has a character outside both alphabets ('*')", sid[:4] + "*" + sid[5:])
    bad("sid mixes the alphabets ('+' and '_')", sid.replace("-", "+"))
    bad("sid has a space inside", sid[:5] + " " + sid[5:])
    bad("sid has a leading space", " " + sid)
    bad("sid ends with a line feed", sid + "\n")
    bad("sid with '==' (too much padding: 8 bytes take one '=')", sid + "==")
    bad("sid with '=' in the middle", sid[:4] + "=" + sid[4:])
    bad("sid with non-zero trailing bits (the last character's unused 2 bits)", bump(sid))
    bad("sid with non-zero trailing bits, padded", bump(sid, "="))
    bad("sid with one extra character 'A' (12 characters: 9 bytes)", sid + "A")
    bad("sid with two extra characters (13 characters, length % 4 == 1)", sid + "AA")
    bad("sid of 7 bytes: the pinned sid's first 7", encode(SENDER_SID[:7]))
    bad("sid of 9 bytes: the pinned sid and a zero byte", encode(SENDER_SID + b"\x00"))
    bad("sid of 16 bytes: kid and sid together", encode(DEVICE_KID + SENDER_SID))
    bad("sid of 32 bytes: the sender public key itself instead of its id", encode(SENDER_PK))
    bad("sid made of hex digits (16 characters, all in the alphabet, 12 bytes)", SENDER_SID.hex())
    bad("sid with a fullwidth letter (U+FF21) in place of a letter", sid[:3] + "\uff21" + sid[4:])


def v2_reasons(v: Files):
    v.start("v2-reasons.json")
    p = seal2("v2 reasons base", BASIC)
    e = p.envelope
    stranger = seal2("v2 reasons stranger", {"chat_id": "c-s", "title": "Mallory", "body": "not pinned"},
                     sender_sk=STRANGER_SK)
    other_device = seal2("v2 reasons other device", BASIC, pk=OTHER_PK)
    v1 = seal("v2 reasons v1 push", BASIC)
    random_kid = det("v2 random kid", 8)
    random_sid = det("v2 random sid", 8)
    low = bytes.fromhex(LOW_ORDER[2][1])

    def case(description, apns, reason, push=None, pinned=PINNED):
        v.add(description, apns, error(reason), push, pinned=pinned)

    # 1. not_kindly, and the duplicate rule before v.
    case("not_kindly: kindly is an array holding a valid version 2 envelope", {"aps": VISIBLE_APS,
         "kindly": [p.kindly()]}, "not_kindly")
    case("not_kindly: the envelope's fields at top level, no kindly object",
         {"aps": VISIBLE_APS, **p.kindly()}, "not_kindly")
    case("malformed before everything else: sid twice inside kindly (the same value)",
         {"aps": VISIBLE_APS, "kindly": obj(*p.kindly().items(), ("sid", encode(SENDER_SID)))}, "malformed")
    case("malformed: sid twice inside kindly, an unpinned sid first and the pinned one second",
         {"aps": VISIBLE_APS, "kindly": obj(("sid", encode(random_sid)), *p.kindly().items())}, "malformed")
    case("malformed (duplicate) before unsupported_version: v twice (2 and 1)",
         {"aps": VISIBLE_APS, "kindly": obj(("v", 1), *p.kindly().items())}, "malformed")
    case("malformed (duplicate) before unsupported_version: duplicate top-level aps and v \"2\"",
         obj(("aps", VISIBLE_APS), ("kindly", p.kindly(v="2")), ("aps", SILENT_APS)), "malformed")
    # 2. unsupported_version before malformed.
    case("unsupported_version before malformed: v 4 and sid missing", visible(p.kindly(v=4, sid=MISSING)),
         "unsupported_version")
    case('unsupported_version before malformed: v "2" and sid of 9 bytes',
         visible(p.kindly(v="2", sid=encode(SENDER_SID + b"\x00"))), "unsupported_version")
    # 3. malformed before key_unavailable and untrusted_sender.
    case("malformed: a version 1 push relabelled v 2, no sid added", visible(v1.kindly(v=2)), "malformed")
    case("malformed before key_unavailable: sid not base64 and kid unknown",
         visible(p.kindly(kid=encode(random_kid), sid="!" * 11)), "malformed")
    case("malformed before untrusted_sender: sid of 7 bytes and no pinned key at all",
         visible(p.kindly(sid=encode(SENDER_SID[:7]))), "malformed", pinned=None)
    case("malformed before untrusted_sender: a stranger's push with its sid missing",
         visible(stranger.kindly(sid=MISSING)), "malformed")
    case("malformed before authentication_failed: ct of 81 bytes, sender pinned",
         visible(p.kindly(ct=encode(det("v2 ct 81", 81)))), "malformed")
    # 4. key_unavailable before untrusted_sender.
    case("key_unavailable: sealed correctly (version 2, pinned sender) to another device's key",
         visible(other_device.kindly()), "key_unavailable", other_device)
    case("key_unavailable before untrusted_sender: unknown kid and an unpinned sid",
         visible(p.kindly(kid=encode(random_kid), sid=encode(random_sid))), "key_unavailable")
    case("key_unavailable before untrusted_sender: unknown kid and no pinned key at all",
         visible(p.kindly(kid=encode(OTHER_KID))), "key_unavailable", pinned=None)
    case("key_unavailable before authentication_failed: unknown kid, pinned sender, flipped tag",
         visible(p.kindly(kid=encode(random_kid), ct=encode(flip(e.ct, -1)))), "key_unavailable")
    case("key_unavailable before authentication_failed: another device's push with the all-zero point as epk",
         visible(other_device.kindly(epk=encode(bytes(32)))), "key_unavailable")
    # 5. untrusted_sender before authentication_failed and bad_plaintext.
    pa = seal2("v2 reasons no pins", BASIC)
    case("untrusted_sender: a correctly sealed version 2 push read with no pinned sender key "
         "(pinned_sender_keys absent)", visible(pa.kindly()), "untrusted_sender", pa, pinned=None)
    pa = seal2("v2 reasons empty pins", BASIC)
    case("untrusted_sender: a correctly sealed version 2 push read with pinned_sender_keys []",
         visible(pa.kindly()), "untrusted_sender", pa, pinned=[])
    case("untrusted_sender: sealed correctly by a sender key that is not pinned", visible(stranger.kindly()),
         "untrusted_sender", stranger)
    case("untrusted_sender: sealed by a key that is not pinned, two other keys pinned",
         visible(stranger.kindly()), "untrusted_sender", stranger, pinned=[SENDER_PK, SENDER2_PK])
    case("untrusted_sender: sid replaced by 8 random bytes", visible(p.kindly(sid=encode(random_sid))),
         "untrusted_sender")
    case("untrusted_sender: sid all zeros", visible(p.kindly(sid=encode(bytes(8)))), "untrusted_sender")
    case("untrusted_sender: sid replaced by the device's kid", visible(p.kindly(sid=encode(DEVICE_KID))),
         "untrusted_sender")
    case("untrusted_sender before authentication_failed: an unpinned sid and a flipped tag byte",
         visible(stranger.kindly(ct=encode(flip(stranger.envelope.ct, -1)))), "untrusted_sender")
    case("untrusted_sender before authentication_failed: an unpinned sid and the all-zero point as epk",
         visible(stranger.kindly(epk=encode(bytes(32)))), "untrusted_sender")
    case("untrusted_sender before authentication_failed: an unpinned sid, only a low-order key pinned",
         visible(stranger.kindly()), "untrusted_sender", stranger, pinned=[low])
    pb = seal2("v2 reasons stranger bad plaintext", '{"chat_id":"","title":"Anna","body":"Hi!"}',
               sender_sk=STRANGER_SK)
    case("untrusted_sender before bad_plaintext: sealed by an unpinned sender, empty chat_id",
         visible(pb.kindly()), "untrusted_sender", pb)
    for i, (how, sid) in enumerate([
            ("BLAKE2b-512 of spk truncated to 8 bytes (not BLAKE2b with output length 8)",
             hashlib.blake2b(SENDER_PK).digest()[:8]),
            ("BLAKE2b-8 of the sender secret key instead of its public key", k.sender_id(SENDER_SK)),
            ("the first 8 bytes of spk", SENDER_PK[:8])]):
        case(f"untrusted_sender: sid computed as {how}, used as sid and in the aad: a reader that derives sids "
             "that way would decrypt it", visible(craft2(f"v2 wrong sid {i}", sid=sid).kindly()), "untrusted_sender")
    top = bytearray(SENDER_PK)
    top[31] |= 0x80
    top = bytes(top)
    pt = seal2("v2 reasons top bit pinned", BASIC)
    case("untrusted_sender: the device pinned the sender key with its top bit set (other bytes, so another sid); "
         "the push is sealed normally", visible(pt.kindly()), "untrusted_sender", pt, pinned=[top])
    text = k.dumps({"chat_id": "c-top", "title": "Anna", "body": "spk top bit"})
    v.ok_push("ok: the pinned key has its top bit set and the push was made for those bytes (sid and k over the "
              "pinned bytes; X25519 ignores the top bit)",
              craft2("v2 top bit pinned ok", k.pad(text.encode()), spk=top, text=text), pinned=[top])
    # 6. authentication_failed.
    case("authentication_failed: a version 1 push relabelled v 2 with the pinned sender's sid added",
         visible(v1.kindly(v=2, sid=encode(SENDER_SID))), "authentication_failed")
    case("authentication_failed: sid swapped for another pinned sender's (sealed with the first, sid of the second)",
         visible(p.kindly(sid=encode(SENDER2_SID))), "authentication_failed", pinned=[SENDER_PK, SENDER2_PK])
    p2 = seal2("v2 reasons swap 2", BASIC, sender_sk=SENDER2_SK)
    case("authentication_failed: sid swapped the other way (sealed with the second, sid of the first)",
         visible(p2.kindly(sid=encode(SENDER_SID))), "authentication_failed", pinned=[SENDER2_PK, SENDER_PK])
    case("authentication_failed: first ciphertext byte flipped", visible(p.kindly(ct=encode(flip(e.ct, 0)))),
         "authentication_failed")
    case("authentication_failed: last tag byte flipped", visible(p.kindly(ct=encode(flip(e.ct, -1, 0x80)))),
         "authentication_failed")
    case("authentication_failed: nonce with one bit flipped", visible(p.kindly(n=encode(flip(e.n, 0)))),
         "authentication_failed")
    case("authentication_failed: epk of another push", visible(p.kindly(epk=encode(stranger.envelope.epk))),
         "authentication_failed")
    case("authentication_failed: epk with its top bit set in transit (k binds the epk bytes)",
         visible(p.kindly(epk=encode(flip(e.epk, 31, 0x80)))), "authentication_failed")
    case("authentication_failed: ct and sid of the stranger's push, kid of the device, stranger pinned too",
         visible(p.kindly(ct=encode(stranger.envelope.ct), sid=encode(stranger.envelope.sid))),
         "authentication_failed", pinned=[SENDER_PK, STRANGER_PK])

    def derive_v1(ss_e, ss_s, epk, pk, spk):
        return k.derive_key(ss_e, epk, pk)
    crafted = [
        ("k = BLAKE2b-256(LABEL2 || ss_e || epk || pk || spk): ss_s left out", dict(
            derive=lambda ss_e, ss_s, epk, pk, spk: hashlib.blake2b(k.LABEL2 + ss_e + epk + pk + spk,
                                                                     digest_size=32).digest())),
        ("k = BLAKE2b-256(LABEL2 || ss_e || ss_s || epk || pk): spk left out", dict(
            derive=lambda ss_e, ss_s, epk, pk, spk: hashlib.blake2b(k.LABEL2 + ss_e + ss_s + epk + pk,
                                                                     digest_size=32).digest())),
        ("k with ss_s before ss_e", dict(derive=lambda ss_e, ss_s, epk, pk, spk: k.derive_key_v2(ss_s, ss_e, epk, pk, spk))),
        ("k with pk and spk swapped", dict(derive=lambda ss_e, ss_s, epk, pk, spk: k.derive_key_v2(ss_e, ss_s, epk, spk, pk))),
        ("k with LABEL (kindly-push/v1) in place of LABEL2", dict(
            derive=lambda ss_e, ss_s, epk, pk, spk: hashlib.blake2b(k.LABEL + ss_e + ss_s + epk + pk + spk,
                                                                     digest_size=32).digest())),
        ("k of version 1 (BLAKE2b-256(LABEL || ss_e || epk || pk)) with the version 2 aad", dict(derive=derive_v1)),
        ("aad = LABEL2 || kid: sid left out", dict(aad=k.LABEL2 + DEVICE_KID)),
        ("aad = LABEL2 || sid || kid: kid and sid swapped", dict(aad=k.LABEL2 + SENDER_SID + DEVICE_KID)),
        ("aad = LABEL || kid || sid: the version 1 label", dict(aad=k.LABEL + DEVICE_KID + SENDER_SID)),
        ("aad = LABEL || kid: the version 1 aad", dict(aad=k.aad_for(DEVICE_KID))),
        ("an empty aad", dict(aad=b"")),
        ("aad with another sender's sid than the envelope's", dict(aad=k.aad_v2(DEVICE_KID, SENDER2_SID))),
    ]
    for i, (how, changes) in enumerate(crafted):
        case(f"authentication_failed: sealed with {how}", visible(craft2(f"v2 crafted {i}", **changes).kindly()),
             "authentication_failed")
    # Low-order points: the tag was made with the all-zero shared secret, so a
    # reader that skips the all-zero check would decrypt these.
    for name, u in low_order_points():
        case(f"authentication_failed: low-order epk {name} ({u.hex()}), all-zero ss_e; the tag verifies over "
             "k derived from it", visible(craft2(f"v2 low epk {u.hex()}", epk=u).kindly()), "authentication_failed")
    for name, u in low_order_points((False,)):
        case(f"authentication_failed: pinned sender key low-order, {name} ({u.hex()}), all-zero ss_s; sid is that "
             "key's and the tag verifies over k derived from it",
             visible(craft2(f"v2 low spk {u.hex()}", spk=u).kindly()), "authentication_failed", pinned=[u])
    for name, u in list(low_order_points((True,)))[:2]:
        case(f"authentication_failed: pinned sender key low-order, {name} ({u.hex()})",
             visible(craft2(f"v2 low spk {u.hex()}", spk=u).kindly()), "authentication_failed", pinned=[SENDER_PK, u])
    case("authentication_failed: the all-zero point both as epk and as the pinned sender key",
         visible(craft2("v2 low both", epk=bytes(32), spk=bytes(32)).kindly()), "authentication_failed",
         pinned=[bytes(32)])
    case("authentication_failed before bad_plaintext: a low-order pinned key and a message with bad padding",
         visible(craft2("v2 low bad pad", BASIC_MESSAGE[:-1] + b"\x01", spk=bytes(32)).kindly()),
         "authentication_failed", pinned=[bytes(32)])
    # 7. bad_plaintext last.
    pb = seal2("v2 reasons bad plaintext", '{"chat_id":"","title":"Anna","body":"Hi!"}')
    case("bad_plaintext: authenticates (pinned sender), chat_id empty", visible(pb.kindly()), "bad_plaintext", pb)
    pb = seal2("v2 reasons bad truncated", {**BASIC, "truncated": "yes"})
    case('bad_plaintext: authenticates, truncated "yes"', visible(pb.kindly()), "bad_plaintext", pb)
    pb = seal2("v2 reasons bad dup", '{"chat_id":"c-1","title":"Anna","body":"Hi!","title":"Mallory"}')
    case("bad_plaintext: authenticates, title twice", visible(pb.kindly()), "bad_plaintext", pb)
    good = k.dumps(BASIC).encode()
    case("bad_plaintext: authenticates, padding marker 0x81",
         visible(craft2("v2 bad pad", good + b"\x81" + bytes(63 - len(good))).kindly()), "bad_plaintext")


def v2_pinned_v1(v: Files):
    v.start("v2-pinned-v1.json")
    p = seal("v2 pinned v1 base", BASIC)
    v.add("a correctly sealed version 1 push read in pinned mode: untrusted_sender (no downgrade)",
          visible(p.kindly()), error("untrusted_sender"), p, pinned=PINNED)
    p = seal("v2 pinned v1 two", BASIC)
    v.add("a correctly sealed version 1 push, two sender keys pinned", visible(p.kindly()), error("untrusted_sender"),
          p, pinned=[SENDER_PK, SENDER2_PK])
    p = seal("v2 pinned v1 zero", BASIC)
    v.add("a version 1 push, the only pinned key the all-zero point: still pinned mode", visible(p.kindly()),
          error("untrusted_sender"), p, pinned=[bytes(32)])
    p = seal("v2 pinned v1 empty", BASIC)
    v.ok_push("a version 1 push with pinned_sender_keys []: not pinned mode, read as sections 1 to 6 say", p,
              pinned=[])
    p = seal("v2 pinned v1 1.0", {"chat_id": "c-1", "title": "Anna", "body": "v 1.0"})
    v.add("a version 1 push written v 1.0, read in pinned mode", visible(p.kindly(v=num("1.0"))),
          error("untrusted_sender"), p, pinned=PINNED)
    p = seal("v2 pinned v1 order", BASIC)
    e = p.envelope
    v.add("version 1 in pinned mode, ct with a flipped tag byte: untrusted_sender before authentication_failed",
          visible(p.kindly(ct=encode(flip(e.ct, -1)))), error("untrusted_sender"), pinned=PINNED)
    v.add("version 1 in pinned mode, the all-zero point as epk: untrusted_sender before authentication_failed",
          visible(p.kindly(epk=encode(bytes(32)))), error("untrusted_sender"), pinned=PINNED)
    pb = seal("v2 pinned v1 bad plaintext", '{"chat_id":"","title":"Anna","body":"Hi!"}')
    v.add("version 1 in pinned mode, empty chat_id: untrusted_sender before bad_plaintext", visible(pb.kindly()),
          error("untrusted_sender"), pb, pinned=PINNED)
    v.add("version 1 in pinned mode with an unknown kid: key_unavailable before untrusted_sender",
          visible(p.kindly(kid=encode(det("v2 pinned v1 random kid", 8)))), error("key_unavailable"), pinned=PINNED)
    po = seal("v2 pinned v1 other device", BASIC, pk=OTHER_PK)
    v.add("version 1 sealed to another device, read in pinned mode: key_unavailable", visible(po.kindly()),
          error("key_unavailable"), po, pinned=PINNED)
    v.add("version 1 in pinned mode with ct of 79 bytes: malformed before untrusted_sender",
          visible(p.kindly(ct=encode(det("v2 pinned v1 ct 79", 79)))), error("malformed"), pinned=PINNED)
    v.add('version 1 in pinned mode with v "1": unsupported_version', visible(p.kindly(v="1")),
          error("unsupported_version"), pinned=PINNED)
    # Version 1 ignores a sid field.
    p = seal("v2 pinned v1 with sid", BASIC)
    v.add("a version 1 push carrying the pinned sender's sid, read in pinned mode: v says 1, a sid does not make "
          "it version 2", visible(p.kindly(sid=encode(SENDER_SID))), error("untrusted_sender"), p, pinned=PINNED)
    for i, (description, value) in enumerate([
            ("a valid sid (the sender's)", encode(SENDER_SID)), ("a sid that is a number", 12345678),
            ("a sid that is not base64", "*not base64*"), ("a sid of 9 bytes", encode(SENDER_SID + b"\x00")),
            ("a sid that is null", None)]):
        p = seal(f"v2 v1 ignores sid {i}", {"chat_id": f"c-s{i}", "title": "Anna", "body": "v1 with a sid"})
        v.ok_push(f"a version 1 push with {description}, no pinned keys: version 1 ignores a sid field", p,
                  pinned=[], sid=value)
    # A version 2 push relabelled as version 1.
    p = seal2("v2 relabelled v1", BASIC)
    v.add("a version 2 push relabelled v 1 (sid kept), read in pinned mode: untrusted_sender",
          visible(p.kindly(v=1)), error("untrusted_sender"), pinned=PINNED)
    v.add("a version 2 push relabelled v 1 (sid kept), no pinned keys: read as version 1, the tag fails",
          visible(p.kindly(v=1)), error("authentication_failed"))
    v.add("a version 2 push relabelled v 1, sid removed, pinned_sender_keys []: the tag fails",
          visible(p.kindly(v=1, sid=MISSING)), error("authentication_failed"), pinned=[])
    v.add("a version 2 push relabelled v 1.0, sid removed, read in pinned mode: untrusted_sender",
          visible(p.kindly(v=num("1.0"), sid=MISSING)), error("untrusted_sender"), pinned=PINNED)


# ---------------------------------------------------------------------------
# Version 3 (wire-format section 8): HPKE (RFC 9180) through pyhpke.
# ---------------------------------------------------------------------------

def seal3(label: str, plaintext, sender_sk: bytes | None = None, pk: bytes = DEVICE_PK) -> Push:
    """Seal version 3 exactly as section 8.1 says: mode_base, or mode_auth with sender_sk. A
    sealing vector carries ephemeral_secret_key and plaintext (and sender_secret_key), no nonce."""
    text = plaintext if isinstance(plaintext, str) else k.dumps(plaintext)
    esk, _ = _fresh(label)
    sealing = {"ephemeral_secret_key": b64url(esk), "plaintext": text}
    if sender_sk is not None:
        sealing["sender_secret_key"] = b64url(sender_sk)
    envelope = k.seal_v3(text.encode("utf-8"), pk, esk, sender_sk)
    return Push(envelope, text, sealing if pk == DEVICE_PK else None)


def craft3(label: str, message: bytes = BASIC_MESSAGE, *, sender_sk: bytes | None = None, kid: bytes = DEVICE_KID,
           sid: bytes | None = None, aad: bytes | None = None, info: bytes = k.LABEL3, pk: bytes = DEVICE_PK) -> Push:
    """A version 3 envelope whose HPKE seal (pyhpke) uses another aad, info or message than
    section 8.1 says (a relabelled kid, another version's label, a bad padding), with the
    envelope's kid and sid as given."""
    esk, _ = _fresh(label)
    sid_aad = None if sender_sk is None else k.sender_id(k.public_key_of(sender_sk))
    eks = k.KEMKeyPair(k.hpke_private(esk), k.hpke_public(k.public_key_of(esk)))
    sks = None if sender_sk is None else k.hpke_private(sender_sk)
    enc, context = k.HPKE_SUITE.create_sender_context(k.hpke_public(pk), info, sks=sks, eks=eks)
    ct = context.seal(message, k.aad_v3(kid, sid_aad) if aad is None else aad)
    return Push(k.Envelope(kid, enc, b"", ct, sid_aad if sid is None else sid, hpke=True), None)


def v3_ok(v: Files):
    v.start("v3-ok.json")
    p = seal3("v3 base basic", BASIC)
    v.ok_push("version 3 mode_base (HPKE SealBase), reader with no pinned keys", p, pinned=[])
    p = seal3("v3 base no pins field", {"chat_id": "c-2", "title": "Anna", "body": "no pinned_sender_keys field"})
    v.ok_push("version 3 mode_base, pinned_sender_keys absent (none)", p)
    p = seal3("v3 auth basic", BASIC, SENDER_SK)
    v.ok_push("version 3 mode_auth (HPKE SealAuth) from the pinned sender", p, pinned=PINNED)
    p = seal3("v3 auth rotation", {"chat_id": "c-3", "title": "Anna", "body": "next sender key"}, SENDER2_SK)
    v.ok_push("version 3 mode_auth from the second of two pinned sender keys (rotation)", p,
              pinned=[SENDER_PK, SENDER2_PK])
    p = seal3("v3 base unicode", {"chat_id": "c-ü", "title": "Zoë 👩‍👩‍👧", "body": "Grüße / ✓ \u2028", "message_id": "m-1",
                                  "sent_at": 1767225600, "truncated": False, "extra": {"k": [1, num("2.5"), None]}})
    v.ok_push("version 3 mode_base, non-ASCII text, every optional key and a nested extra", p, pinned=[])
    p = seal3("v3 auth long", {"chat_id": "c-4", "title": "Long", "body": "x" * 700}, SENDER_SK)
    v.ok_push("version 3 mode_auth, a plaintext of several 64-byte blocks", p, pinned=PINNED)
    p = seal3("v3 auth silent", BASIC, SENDER_SK)
    v.add("version 3 mode_auth as a silent push", {"aps": SILENT_APS, "kindly": p.kindly()}, ok(p.payload()), p,
          pinned=PINNED)
    p = seal3("v3 base no aps", BASIC)
    v.add("version 3 mode_base without aps: aps plays no part", {"kindly": p.kindly()}, ok(p.payload()), p, pinned=[])
    p = seal3("v3 base ignores epk n", BASIC)
    v.ok_push("version 3 ignores other members, epk and n included (not base64 here)", p, pinned=[],
              epk="*not base64*", n=12345)
    p = seal3("v3 auth std b64", BASIC, SENDER_SK)
    v.ok_push("version 3 mode_auth in standard base64, padded", p, pinned=PINNED, **p.kindly("std_padded"))
    p = seal3("v3 base std unpadded", BASIC)
    v.ok_push("version 3 mode_base in standard base64, unpadded", p, pinned=[], **p.kindly("std"))


def v3_version(v: Files):
    v.start("v3-version.json")
    for lexeme in ("3", "3.0", "3e0", "3E0", "3e+0", "3.00", "30e-1", "0.3e1", "300e-2"):
        p = seal3(f"v3 version accepted {lexeme}", {"chat_id": "c-v", "title": "Anna", "body": f"v {lexeme}"})
        v.ok_push(f"v {lexeme}: a JSON number equal to 3 is version 3 (mode_base)", p, pinned=[], v=num(lexeme))
    p = seal3("v3 version accepted auth 3.0", {"chat_id": "c-v", "title": "Anna", "body": "v 3.0 auth"}, SENDER_SK)
    v.ok_push("v 3.0 on a mode_auth push from the pinned sender", p, pinned=PINNED, v=num("3.0"))
    rejected = [
        ("3", 'v the string "3"'), ("3.0", 'v the string "3.0"'), (4, "v 4"), (num("3.5"), "v 3.5"),
        (num("3e1"), "v 3e1 = 30"), (num("-3"), "v -3"), (True, "v true"), (None, "v null"), ([3], "v [3]"),
        (num("3.0000000000000000000001"), "v 3.0000000000000000000001: not exactly 3 (a double would round it to 3)"),
        (num("2.9999999999999999999999"), "v 2.9999999999999999999999: not exactly 3"), (MISSING, "v missing"),
    ]
    for i, (value, description) in enumerate(rejected):
        p = seal3(f"v3 version rejected {i}", {"chat_id": f"c-v{i}", "title": "Anna", "body": "version"})
        # Not a sealing vector: its v is not 3, so nothing says it is sealed as version 3.
        v.add(f"{description} on a version 3 envelope", visible(p.kindly(v=value)), error("unsupported_version"),
              pinned=[])


def v3_reasons(v: Files):
    """Every reason of section 8.2 in its order, for version 3."""
    v.start("v3-reasons.json")
    base = seal3("v3 reasons base", BASIC)
    auth = seal3("v3 reasons auth", BASIC, SENDER_SK)
    eb, ea = base.envelope, auth.envelope

    def case(description, apns, reason, push=None, pinned=PINNED, secret_key=DEVICE_SK):
        v.add(description, apns, error(reason), push, pinned=pinned, secret_key=secret_key)

    # 1. not_kindly.
    case("not_kindly: kindly is an array holding a version 3 envelope", {"kindly": [auth.kindly()]}, "not_kindly")
    # Duplicates before v is read.
    case('malformed (duplicate) before unsupported_version: enc twice and v "3"',
         {"aps": VISIBLE_APS, "kindly": obj(*list(auth.kindly(v="3").items()), ("enc", encode(ea.epk)))}, "malformed")
    # 2. unsupported_version before malformed.
    case('unsupported_version before malformed: v "3" and enc missing', visible(auth.kindly(v="3", enc=MISSING)),
         "unsupported_version")
    # 3. malformed.
    for description, changes in [
            ("enc missing", {"enc": MISSING}), ("enc of 31 bytes", {"enc": encode(ea.epk[:31])}),
            ("enc of 33 bytes", {"enc": encode(ea.epk + b"\x00")}), ("enc not base64", {"enc": "*not base64*"}),
            ("enc a number", {"enc": 32}), ("enc with nonzero trailing bits", {"enc": encode(ea.epk)[:-1] + "B"}),
            ("kid of 7 bytes", {"kid": encode(ea.kid[:7])}), ("kid missing", {"kid": MISSING}),
            ("ct of 79 bytes", {"ct": encode(ea.ct[:79])}), ("ct of 16 bytes (no block)", {"ct": encode(ea.ct[:16])}),
            ("ct missing", {"ct": MISSING}), ("sid of 9 bytes", {"sid": encode(ea.sid + b"\x00")}),
            ("sid of 7 bytes", {"sid": encode(ea.sid[:7])}), ("sid not base64", {"sid": "*not base64*"}),
            ("sid a number", {"sid": 12345678}), ("sid null (present, not a string)", {"sid": None})]:
        case(f"malformed: version 3 mode_auth with {description}", visible(auth.kindly(**changes)), "malformed")
    case("malformed: a version 3 envelope with epk and n in place of enc (version 1's fields)",
         visible(base.kindly(enc=MISSING, epk=encode(eb.epk), n=encode(det("v3 n field", 24)))), "malformed",
         pinned=[])
    case("malformed before key_unavailable: unknown kid and enc of 31 bytes",
         visible(auth.kindly(kid=encode(OTHER_KID), enc=encode(ea.epk[:31]))), "malformed")
    # 4. key_unavailable before untrusted_sender.
    case("key_unavailable before untrusted_sender: unknown kid, sid of a stranger",
         visible(auth.kindly(kid=encode(det("v3 random kid", 8)), sid=encode(k.sender_id(STRANGER_PK)))),
         "key_unavailable")
    other = seal3("v3 reasons other device", BASIC, SENDER_SK, pk=OTHER_PK)
    case("key_unavailable: version 3 mode_auth sealed to another device", visible(other.kindly()), "key_unavailable")
    case("key_unavailable: version 3 mode_base sealed to another device, pinned mode",
         visible(seal3("v3 reasons other base", BASIC, pk=OTHER_PK).kindly()), "key_unavailable")
    # 5. untrusted_sender.
    stranger = seal3("v3 reasons stranger", BASIC, STRANGER_SK)
    case("untrusted_sender: mode_auth from a sender key nobody pinned", visible(stranger.kindly()), "untrusted_sender",
         stranger)
    case("untrusted_sender: mode_auth, reader with no pinned keys (its sid names none)", visible(auth.kindly()),
         "untrusted_sender", auth, pinned=[])
    case("untrusted_sender: mode_base read in pinned mode (no downgrade)", visible(base.kindly()), "untrusted_sender",
         base)
    case("untrusted_sender: mode_base in pinned mode with two pins", visible(base.kindly()), "untrusted_sender",
         base, pinned=[SENDER_PK, SENDER2_PK])
    case("untrusted_sender: a stripped sid (mode_auth turned mode_base) in pinned mode",
         visible(auth.kindly(sid=MISSING)), "untrusted_sender")
    case("untrusted_sender before authentication_failed: mode_base in pinned mode, tag flipped",
         visible(base.kindly(ct=encode(flip(eb.ct, -1)))), "untrusted_sender")
    case("untrusted_sender before authentication_failed: mode_base in pinned mode, enc the all-zero point",
         visible(base.kindly(enc=encode(bytes(32)))), "untrusted_sender")
    case("untrusted_sender: a swapped sid naming a sender the reader does not pin",
         visible(auth.kindly(sid=encode(SENDER2_SID))), "untrusted_sender")
    pb = seal3("v3 reasons base bad plaintext", '{"chat_id":"","title":"Anna","body":"Hi!"}')
    case("untrusted_sender before bad_plaintext: mode_base in pinned mode, empty chat_id", visible(pb.kindly()),
         "untrusted_sender", pb)
    # 6. authentication_failed.
    case("authentication_failed: a stripped sid, reader with no pinned keys (read as mode_base, the tag fails)",
         visible(auth.kindly(sid=MISSING)), "authentication_failed", pinned=[])
    case("authentication_failed: a swapped sid naming another pinned sender (pkS differs)",
         visible(auth.kindly(sid=encode(SENDER2_SID))), "authentication_failed", pinned=[SENDER_PK, SENDER2_PK])
    case("authentication_failed: a sid added to a mode_base push (read as mode_auth)",
         visible(base.kindly(sid=encode(SENDER_SID))), "authentication_failed")
    case("authentication_failed: mode_auth, one ct byte flipped", visible(auth.kindly(ct=encode(flip(ea.ct, 3)))),
         "authentication_failed")
    case("authentication_failed: mode_base, tag flipped", visible(base.kindly(ct=encode(flip(eb.ct, -1)))),
         "authentication_failed", pinned=[])
    case("authentication_failed: mode_auth, enc of another ephemeral key",
         visible(auth.kindly(enc=encode(k.public_key_of(det("v3 other enc", 32))))), "authentication_failed")
    for name, u in list(low_order_points((False, True)))[:5]:
        case(f"authentication_failed: enc a low-order point, {name} (all-zero DH)",
             visible(base.kindly(enc=encode(u))), "authentication_failed", pinned=[])
    case("authentication_failed: mode_auth, enc the all-zero point", visible(auth.kindly(enc=encode(bytes(32)))),
         "authentication_failed")
    low = bytes.fromhex(LOW_ORDER[2][1])
    case("authentication_failed: a low-order pinned sender key whose sid the push names (all-zero DH(sk, spk))",
         visible(auth.kindly(sid=encode(k.sender_id(low)))), "authentication_failed", pinned=[SENDER_PK, low])
    relabelled = craft3("v3 relabelled kid", kid=DEVICE_KID, aad=k.aad_v3(OTHER_KID, None))
    case("authentication_failed: a relabelled kid (aad over another device's kid, envelope names this one)",
         visible(relabelled.kindly()), "authentication_failed", pinned=[])
    case("authentication_failed: kid relabelled to the reader's other key",
         visible(base.kindly(kid=encode(OTHER_KID))), "authentication_failed", pinned=[], secret_key=OTHER_SK)
    case("authentication_failed: sealed with info kindly-push/v2 (another version's label)",
         visible(craft3("v3 info v2", info=k.LABEL2).kindly()), "authentication_failed", pinned=[])
    case("authentication_failed: aad of version 2's label",
         visible(craft3("v3 aad v2", sender_sk=SENDER_SK, aad=k.LABEL2 + DEVICE_KID + SENDER_SID).kindly()),
         "authentication_failed")
    case("authentication_failed: mode_auth sealed with mode_base's aad (no sid in it)",
         visible(craft3("v3 aad no sid", sender_sk=SENDER_SK, aad=k.aad_v3(DEVICE_KID, None)).kindly()),
         "authentication_failed")
    case("authentication_failed before bad_plaintext: enc the all-zero point, message with bad padding",
         visible(craft3("v3 low bad pad", BASIC_MESSAGE[:-1] + b"\x01").kindly(enc=encode(bytes(32)))),
         "authentication_failed", pinned=[])
    # 7. bad_plaintext.
    pb = seal3("v3 reasons bad chat", '{"chat_id":"","title":"Anna","body":"Hi!"}', SENDER_SK)
    case("bad_plaintext: mode_auth authenticates, chat_id empty", visible(pb.kindly()), "bad_plaintext", pb)
    pb = seal3("v3 reasons bad dup", '{"chat_id":"c-1","title":"Anna","body":"Hi!","title":"Mallory"}')
    case("bad_plaintext: mode_base authenticates, title twice", visible(pb.kindly()), "bad_plaintext", pb, pinned=[])
    pb = seal3("v3 reasons bad array", "[1,2,3]", SENDER_SK)
    case("bad_plaintext: mode_auth authenticates, the plaintext is an array", visible(pb.kindly()), "bad_plaintext",
         pb)
    good = k.dumps(BASIC).encode()
    case("bad_plaintext: mode_auth authenticates, padding marker 0x81",
         visible(craft3("v3 bad pad", good + b"\x81" + bytes(63 - len(good)), sender_sk=SENDER_SK).kindly()),
         "bad_plaintext")
    case("bad_plaintext: mode_base authenticates, no padding marker (all zeros)",
         visible(craft3("v3 bad pad zeros", bytes(64)).kindly()), "bad_plaintext", pinned=[])


def v3_mixed(v: Files):
    """A version 1 and a version 2 push beside version 3 for the same readers: pinned mode takes only
    version 2 and version 3 mode_auth (sections 7.3 and 8.2)."""
    v.start("v3-pinned.json")
    p1 = seal("v3 mixed v1", BASIC)
    v.add("pinned mode: a version 1 push is untrusted_sender (as version 3 mode_base)", visible(p1.kindly()),
          error("untrusted_sender"), p1, pinned=PINNED)
    p2 = seal2("v3 mixed v2", BASIC)
    v.ok_push("pinned mode: a version 2 push from the pinned sender decrypts", p2, pinned=PINNED)
    p3 = seal3("v3 mixed v3 auth", BASIC, SENDER_SK)
    v.ok_push("pinned mode: a version 3 mode_auth push from the pinned sender decrypts", p3, pinned=PINNED)
    v.add("a version 3 mode_auth push relabelled v 2 (enc kept, no epk or n): malformed",
          visible(p3.kindly(v=2)), error("malformed"), pinned=PINNED)
    v.add("a version 3 mode_base push relabelled v 1: malformed (no epk, no n)",
          visible(seal3("v3 mixed relabel 1", BASIC).kindly(v=1)), error("malformed"), pinned=[])
    e2 = p2.envelope
    v.add("a version 2 push relabelled v 3 (enc = its epk, n dropped): authentication_failed",
          visible({"v": 3, "kid": encode(e2.kid), "sid": encode(e2.sid), "enc": encode(e2.epk), "ct": encode(e2.ct)}),
          error("authentication_failed"), pinned=PINNED)


def build() -> dict[str, str]:
    """The vector files' names and exact texts."""
    _labels.clear()
    v = Files()
    for section in (ok_basic, ok_plaintext, ok_unicode, encodings, not_kindly, version, malformed,
                    key_unavailable, authentication, epk_handling, bad_plaintext, check_order, sizes,
                    truncated, v2_ok, v2_version, v2_encodings, v2_reasons, v2_pinned_v1, v3_ok, v3_version,
                    v3_reasons, v3_mixed):
        section(v)
    return v.texts()


def main() -> int:
    import check_vectors
    texts = build()
    failures = []
    for name, text in texts.items():
        failures += [f"{name}: {problem}" for problem in check_vectors.check_text(text)]
    if failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"gen_vectors: {len(failures)} vectors disagree with kindly_ref; nothing written", file=sys.stderr)
        return 1
    VECTOR_DIR.mkdir(exist_ok=True)
    for name, text in texts.items():
        (VECTOR_DIR / name).write_bytes(text.encode("utf-8"))
    total = sum(text.count('"description": ') for text in texts.values())
    print(f"wrote {len(texts)} files, {total} vectors, to {VECTOR_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
