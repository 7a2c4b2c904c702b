#!/usr/bin/env python3
"""Writes the committed seed corpora, Fuzz/Corpus/<target>/, from TestVectors/*.json.

Deterministic (run it again and git sees no change) and standard-library only. Documents keep
what json.load would lose: duplicate member names, number spellings, lone surrogate escapes.

    python3 Fuzz/make-seeds.py
"""

import base64
import glob
import hashlib
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")


class Number(str):
    """A JSON number kept as its literal."""


class Pairs(list):
    """A JSON object kept as its (name, value) pairs, duplicates included."""


def load(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file, object_pairs_hook=Pairs, parse_int=Number, parse_float=Number, parse_constant=Number)


def compact(value):
    """Compact JSON as `seal` writes it: no whitespace, '/' and non-ASCII unescaped."""
    if isinstance(value, Pairs):
        return "{" + ",".join(compact_string(k) + ":" + compact(v) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(compact(v) for v in value) + "]"
    if isinstance(value, Number):
        return str(value)
    if isinstance(value, str):
        return compact_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    raise TypeError(type(value))


def compact_string(text):
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return json.dumps(text, ensure_ascii=True)  # a lone surrogate stays an escape
    return json.dumps(text, ensure_ascii=False)


def get(pairs, name):
    for key, value in pairs:
        if key == name:
            return value
    return None


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# X25519 (RFC 7748), only to derive the key files' public keys.
P = 2**255 - 19


def x25519_base(scalar):
    k = bytearray(scalar)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    k = int.from_bytes(k, "little")
    x1, x2, z2, x3, z3, swap = 9, 1, 0, 9, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b = (x2 + z2) % P, (x2 - z2) % P
        aa, bb = a * a % P, b * b % P
        e = (aa - bb) % P
        c, d = (x3 + z3) % P, (x3 - z3) % P
        da, cb = d * a % P, c * b % P
        x3, z3 = (da + cb) ** 2 % P, x1 * (da - cb) ** 2 % P
        x2, z2 = aa * bb % P, e * (aa + 121665 * e) % P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, "little")


def pad(message):
    padded = message + b"\x80"
    while len(padded) % 64:
        padded += b"\x00"
    return padded


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as file:
        file.write(data)


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    documents, plaintexts, fields, secret_keys, sender_keys = {}, {}, {}, {}, {}
    for path in sorted(glob.glob(os.path.join(ROOT, "TestVectors", "*.json"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        top = load(path)
        vectors = get(top, "vectors") or [top]
        for index, vector in enumerate(vectors):
            name = f"{stem}-{index:03d}"
            apns = get(vector, "apns")
            if apns is not None:
                documents.setdefault(compact(apns).encode("utf-8", "surrogatepass"), name)
                envelope = get(apns, "kindly") if isinstance(apns, Pairs) else None
                # Every field of the files about encodings, the first two vectors' of the others.
                if isinstance(envelope, Pairs) and (stem in ("encodings", "malformed", "v2-encodings") or index < 2):
                    for field in ("kid", "sid", "epk", "n", "ct", "enc"):
                        value = get(envelope, field)
                        if isinstance(value, str) and not isinstance(value, Number):
                            fields.setdefault(value.encode("utf-8", "surrogatepass"), f"{name}-{field}")
            plaintext = get(vector, "plaintext")
            if plaintext is not None:
                plaintexts.setdefault(plaintext.encode("utf-8", "surrogatepass"), name)
            for field in ("device_secret_key", "ephemeral_secret_key", "nonce", "sender_secret_key"):
                value = get(vector, field)
                if value is not None:
                    fields.setdefault(value.encode(), f"{name}-{field}")
            secret = get(vector, "device_secret_key")
            if secret is not None:
                secret_keys.setdefault(secret, name)
            sender = get(vector, "sender_secret_key")
            if sender is not None:
                sender_keys.setdefault(sender, name)

    # decrypt: every vector's APNs document, every sealed plaintext, and a few already padded.
    for data, name in documents.items():
        write("fuzz-decrypt", f"apns-{name}", data)
    for data, name in plaintexts.items():
        write("fuzz-decrypt", f"plaintext-{name}", data)
    for data, name in list(plaintexts.items())[:8]:
        write("fuzz-decrypt", f"padded-{name}", pad(data))
    write("fuzz-decrypt", "plaintext-not-utf8", b'{"chat_id":"c-1","title":"\xff","body":"Hi!"}')

    # json: the plaintexts, three documents per vector file, and the reader's corner cases.
    for data, name in plaintexts.items():
        write("fuzz-json", f"plaintext-{name}", data)
    for data, name in documents.items():
        if int(name.rsplit("-", 1)[1]) < 3:
            write("fuzz-json", f"apns-{name}", data)
    corners = [
        b" [1, -0, 0.5, 1e0, 1E+2, -1.25e-3, 10e-1, 123456789012345678901234567890] ",
        b'{"a":{"b":[{},[],"",null,true,false]},"a":1}',
        b'"\\u00e9\\ud83d\\ude00\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000"',
        b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        '{"t\\u0069tle":"é","title":"\U0001F600"}'.encode(),
        b"\xef\xbb\xbf{}",
        b"[-9223372036854775808,9223372036854775807]",  # Int64.min was not read as an integer
    ]
    for index, data in enumerate(corners):
        write("fuzz-json", f"corner-{index}", data)

    # base64: the vectors' binary fields, and other spellings of a few.
    for data, name in fields.items():
        write("fuzz-base64", name, data)
    for index, raw in enumerate([b"", b"\xfb\xff", b"\x00\x01\x02", b"\xff" * 32]):
        standard = base64.b64encode(raw)
        write("fuzz-base64", f"standard-padded-{index}", standard)
        write("fuzz-base64", f"url-padded-{index}", base64.urlsafe_b64encode(raw))

    # keyfile: key files of the vectors' device keys, as keygen writes them and otherwise.
    for index, secret_text in enumerate(sorted(secret_keys)):
        secret = base64.urlsafe_b64decode(secret_text + "=" * (-len(secret_text) % 4))
        public = x25519_base(secret)
        kid = hashlib.blake2b(public, digest_size=8).digest()
        write("fuzz-keyfile", f"keygen-{index}",
              f'{{"kid":"{b64url(kid)}","public_key":"{b64url(public)}","secret_key":"{secret_text}"}}\n'.encode())
        if index == 0:
            write("fuzz-keyfile", "standard-padded-reordered",
                  ('{\n  "secret_key": "%s",\n  "public_key": "%s",\n  "kid": "%s",\n  "label": "phone",\n  "created": 1700000000\n}\n'
                   % (base64.b64encode(secret).decode(), base64.b64encode(public).decode(),
                      base64.b64encode(kid).decode())).encode())
            write("fuzz-keyfile", "public-key-mismatch",
                  f'{{"kid":"{b64url(kid)}","public_key":"{b64url(bytes(32))}","secret_key":"{secret_text}"}}'.encode())

    # keyfile: sender key files (sid in place of kid) of the version 2 vectors' sender keys, and
    # files that mix the two kinds.
    for index, secret_text in enumerate(sorted(sender_keys)):
        secret = base64.urlsafe_b64decode(secret_text + "=" * (-len(secret_text) % 4))
        public = x25519_base(secret)
        sid = hashlib.blake2b(public, digest_size=8).digest()
        write("fuzz-keyfile", f"sender-keygen-{index}",
              f'{{"sid":"{b64url(sid)}","public_key":"{b64url(public)}","secret_key":"{secret_text}"}}\n'.encode())
        if index == 0:
            write("fuzz-keyfile", "sender-with-kid",
                  f'{{"sid":"{b64url(sid)}","kid":"{b64url(sid)}","public_key":"{b64url(public)}","secret_key":"{secret_text}"}}'.encode())
            write("fuzz-keyfile", "sender-sid-mismatch",
                  f'{{"sid":"{b64url(bytes(8))}","public_key":"{b64url(public)}","secret_key":"{secret_text}"}}'.encode())

    # jsonl: three header bytes (line limit, read size, batch size; 0xFF = the command's), then lines.
    lines = [data for data in list(documents)[:3]]
    streams = [
        (b"\xff\xff\xff", b"\n".join(lines) + b"\n"),
        (b"\xff\xff\xff", b"\n".join(lines)),
        (b"\x20\x07\x02", b"\n\n{}\n \n" + lines[0][:60] + b"\r\n" + b"x" * 40 + b"\n{\"a\":1}"),
        (b"\x00\x00\x00", b"\n\n\n"),
        (b"\x10\x03\x01", b"short\n" + b"y" * 100 + b"\nlast"),
    ]
    for index, (header, body) in enumerate(streams):
        write("fuzz-jsonl", f"stream-{index}", header + body)


if __name__ == "__main__":
    main()
