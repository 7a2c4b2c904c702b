#!/usr/bin/env python3
"""Writes the wire-format v1 test vectors (TestVectors/*.json) with kindly_ref.

Deterministic: every key, ephemeral key and nonce is SHAKE-256 of a label
fixed in this file, so re-running gives byte-identical files (check_vectors.py
verifies that too). Every vector's expectation is written here by hand, from
the spec; before anything is written, check_vectors checks each vector against
kindly_ref's reader, so a disagreement stops the run instead of landing in a file.

Vectors whose apns.kindly kid/epk/n/ct are exactly what sealing `plaintext`
with `ephemeral_secret_key` and `nonce` to the device key gives are sealing
vectors (cli.md) and carry those three fields. Vectors whose envelope was
changed after sealing, or whose sealed message is not pad(text) for some text
(bad padding, invalid UTF-8), or that were sealed to another key, do not.

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
                                  # seal(text, ephemeral_secret_key, nonce) to the device key

    def kindly(self, style: str = "url", **changes) -> dict:
        e = self.envelope
        fields = {"v": 1, "kid": encode(e.kid, style), "epk": encode(e.epk, style),
                  "n": encode(e.n, style), "ct": encode(e.ct, style)}
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

    def add(self, description: str, apns, expected: dict, push: Push | None = None, secret_key: bytes = DEVICE_SK):
        vector = {"description": description, "device_secret_key": b64url(secret_key)}
        if push is not None and push.sealing:
            vector.update(push.sealing)
        vector["apns"] = apns
        vector["expected"] = expected
        self.current.append(vector)

    def ok_push(self, description: str, push: Push, apns=None, **kindly_changes):
        """A push that decrypts to its own plaintext."""
        apns = visible(push.kindly(**kindly_changes)) if apns is None else apns
        self.add(description, apns, ok(push.payload()), push)

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
        (MISSING, "v missing"), (3, "v 3"), (0, "v 0"), (-1, "v -1"), ("1", 'v the string "1"'),
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
        ("unsupported_version before malformed: v 3 with kid not base64",
         visible(p.kindly(v=3, kid="*not base64*")), "unsupported_version"),
        ('unsupported_version before malformed: v "1" with ct of a wrong length',
         visible(p.kindly(v="1", ct=encode(bytes(79)))), "unsupported_version"),
        ("unsupported_version before malformed: v missing and epk missing",
         visible(p.kindly(v=MISSING, epk=MISSING)), "unsupported_version"),
        ("malformed (duplicate) before unsupported_version: duplicate kid and v 3",
         {"aps": VISIBLE_APS, "kindly": obj(("v", 3), *list(p.kindly(v=MISSING).items()), ("kid", encode(e.kid)))},
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


def build() -> dict[str, str]:
    """The vector files' names and exact texts."""
    _labels.clear()
    v = Files()
    for section in (ok_basic, ok_plaintext, ok_unicode, encodings, not_kindly, version, malformed,
                    key_unavailable, authentication, epk_handling, bad_plaintext, check_order, sizes):
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
