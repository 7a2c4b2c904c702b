#!/usr/bin/env python3
"""Corpus making for tools/bench (standard library only).

  corpus.py plaintexts N SEED          realistic plaintext objects, one compact JSON per line, on stdout
  corpus.py decrypt-binary KEY SEALED OUT   the sealed pushes decoded, for limit-decrypt.c
  corpus.py decrypt-binary-v2 KEY SENDER SEALED OUT   version 2 pushes decoded, for limit-decrypt-v2.c
  corpus.py decrypt-binary-v3 KEY SENDER|- SEALED OUT   version 3 pushes decoded, for limit-decrypt-v3.c
  corpus.py seal-binary KEY PLAIN OUT       the plaintext texts, for limit-seal.c
  corpus.py inline KEYS PLAIN SEED          each plaintext for a device drawn from KEYS (one
                                            base64url public key per line), as
                                            `seal --recipients-inline` reads it, on stdout

A plaintext has chat_id, title (5-40 characters), body (20-300 characters), message_id and
sent_at; the text mixes scripts (Latin, Cyrillic, Greek, CJK, Arabic, emoji), with now and then
a quote, a backslash or a line break that JSON must escape.
"""
import base64
import json
import random
import struct
import sys

SCRIPTS = [
    "abcdefghijklmnopqrstuvwxyz      ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-",
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюя      АБВГДЕЖЗИКЛМНОПРСТУФХЦЧШЩЭЮЯ.,!?",
    "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώ      ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ.,;",
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生。，！？",
    "ابتثجحخدذرزسشصضطظعغفقكلمنهوي      ،؟",
    "日本語のテキストですかなにがあるひらがなカタカナ漢字。、",
    "😀😂🥰😎🍜🎉👍🔥❤️🙏✨🚀",
]
SPECIAL = ['"', "\\", "\n", "\t", "/"]


def text(rng, low, high):
    length = rng.randint(low, high)
    script = rng.choice(SCRIPTS[:6] if rng.random() < 0.9 else SCRIPTS)
    out = []
    while len(out) < length:
        roll = rng.random()
        if roll < 0.04:
            script = rng.choice(SCRIPTS)
        elif roll < 0.045:
            out.append(rng.choice(SPECIAL))
            continue
        out.append(rng.choice(script))
    return "".join(out)[:length]


def plaintexts(count, seed):
    rng = random.Random(seed)
    write = sys.stdout.write
    for index in range(count):
        message = {
            "chat_id": "chat-%d" % rng.randint(1, 50000),
            "title": text(rng, 5, 40),
            "body": text(rng, 20, 300),
            "message_id": "m-%08d" % index,
            "sent_at": 1764460800 + index,
        }
        write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")


def b64(text):
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def key_file(path):
    with open(path) as file:
        key = json.load(file)
    return b64(key["secret_key"]), b64(key["public_key"])


def decrypt_binary(key_path, sealed_path, out_path):
    secret, public = key_file(key_path)
    with open(sealed_path, "rb") as sealed, open(out_path, "wb") as out:
        out.write(secret + public)
        for line in sealed:
            envelope = json.loads(line)["kindly"]
            ct = b64(envelope["ct"])
            out.write(b64(envelope["kid"]) + b64(envelope["epk"]) + b64(envelope["n"]) + struct.pack("<I", len(ct)) + ct)


def decrypt_binary_v2(key_path, sender_path, sealed_path, out_path):
    secret, public = key_file(key_path)
    with open(sender_path) as file:
        sender_public = b64(json.load(file)["public_key"])
    with open(sealed_path, "rb") as sealed, open(out_path, "wb") as out:
        out.write(secret + public + sender_public)
        for line in sealed:
            envelope = json.loads(line)["kindly"]
            ct = b64(envelope["ct"])
            out.write(b64(envelope["kid"]) + b64(envelope["sid"]) + b64(envelope["epk"]) + b64(envelope["n"])
                      + struct.pack("<I", len(ct)) + ct)


def decrypt_binary_v3(key_path, sender_path, sealed_path, out_path):
    """Version 3 pushes decoded for limit-decrypt-v3.c; SENDER "-" for mode_base."""
    secret, public = key_file(key_path)
    sender_public = bytes(32)
    if sender_path != "-":
        with open(sender_path) as file:
            sender_public = b64(json.load(file)["public_key"])
    with open(sealed_path, "rb") as sealed, open(out_path, "wb") as out:
        out.write(secret + public + sender_public + bytes([0 if sender_path == "-" else 2]))
        for line in sealed:
            envelope = json.loads(line)["kindly"]
            ct = b64(envelope["ct"])
            sid = b64(envelope["sid"]) if "sid" in envelope else bytes(8)
            out.write(b64(envelope["kid"]) + sid + b64(envelope["enc"]) + struct.pack("<I", len(ct)) + ct)


def seal_binary(key_path, plain_path, out_path):
    _, public = key_file(key_path)
    with open(plain_path, "rb") as plain, open(out_path, "wb") as out:
        out.write(public)
        for line in plain:
            text = line.rstrip(b"\n")
            out.write(struct.pack("<I", len(text)) + text)


def inline(keys_path, plain_path, seed):
    rng = random.Random(seed)
    with open(keys_path) as keys:
        devices = [line.strip() for line in keys if line.strip()]
    write = sys.stdout.write
    with open(plain_path) as plain:
        for line in plain:
            write('{"public_key":"%s","plaintext":%s}\n' % (rng.choice(devices), line.rstrip("\n")))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "plaintexts" and len(sys.argv) == 4:
        plaintexts(int(sys.argv[2]), int(sys.argv[3]))
    elif command == "decrypt-binary" and len(sys.argv) == 5:
        decrypt_binary(*sys.argv[2:])
    elif command == "decrypt-binary-v2" and len(sys.argv) == 6:
        decrypt_binary_v2(*sys.argv[2:])
    elif command == "decrypt-binary-v3" and len(sys.argv) == 6:
        decrypt_binary_v3(*sys.argv[2:])
    elif command == "seal-binary" and len(sys.argv) == 5:
        seal_binary(*sys.argv[2:])
    elif command == "inline" and len(sys.argv) == 5:
        inline(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
