#!/usr/bin/env python3
"""Checks test-vector files against kindly_ref, the independent reference.

For every vector (docs/spec/streams.md, "Test-vector files"): decrypts `apns` with
`device_secret_key` and the pinned sender keys `pinned_sender_keys` (absent:
none) and compares with `expected` (the payload as a JSON value, numbers by
exact value; or the reason); for a sealing vector, seals `plaintext` again
with `ephemeral_secret_key` and `nonce` (and, for version 2,
`sender_secret_key`) and compares the bytes of kid, epk, n and ct (and sid);
a version 3 sealing vector has no `nonce` and is sealed again with pyhpke
(kid, enc, ct, and sid in mode_auth).
Then checks that the files are exactly what gen_vectors.py writes, so that a
stale or hand-edited file is noticed.

    python3 tools/reference/check_vectors.py [PATH...]     (default: TestVectors/*.json)

Prints one line per failure and last `N passed, N failed`; exits 0 only when
nothing failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kindly_ref as k  # noqa: E402
from kindly_ref import JsonNumber, JsonObject  # noqa: E402

VECTOR_DIR = Path(__file__).resolve().parents[2] / "TestVectors"
SEALING_FIELDS = ("ephemeral_secret_key", "nonce", "plaintext")
SEALING_FIELDS_V3 = ("ephemeral_secret_key", "plaintext")   # version 3: no nonce
VECTOR_FIELDS = ("description", "device_secret_key", "apns", "expected", "pinned_sender_keys",
                 "sender_secret_key") + SEALING_FIELDS


class VectorError(Exception):
    pass


def plain(value):
    """JsonObject -> dict, recursively; a duplicate name here is a broken vector."""
    if isinstance(value, JsonObject):
        if value.has_duplicates():
            raise VectorError(f"duplicate member names where none are allowed: {value.names()}")
        return {name: plain(item) for name, item in value.members}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def same(a, b) -> bool:
    """JSON value equality: numbers by exact value, and never true == 1."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[n], b[n]) for n in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (JsonNumber, str)):
        return type(a) is type(b) and a == b
    return a is b   # true, false, null


def _key(vector: dict, name: str, size: int) -> bytes:
    value = vector.get(name)
    try:
        data = k.b64decode_canonical(value) if isinstance(value, str) else None
    except ValueError:
        data = None
    if data is None or len(data) != size:
        raise VectorError(f"{name} is not {size} bytes of base64")
    return data


def _pinned(vector: dict) -> list[bytes]:
    if "pinned_sender_keys" not in vector:
        return []
    keys = vector["pinned_sender_keys"]
    if not isinstance(keys, list):
        raise VectorError("pinned_sender_keys is not an array")
    pinned = []
    for index, text in enumerate(keys):
        try:
            key = k.b64decode_canonical(text) if isinstance(text, str) else None
        except ValueError:
            key = None
        if key is None or len(key) != 32:
            raise VectorError(f"pinned_sender_keys[{index}] is not 32 bytes of base64")
        pinned.append(key)
    return pinned


def _envelope_bytes(apns: JsonObject, names=("kid", "epk", "n", "ct")) -> dict[str, bytes]:
    kindly = [v for v in apns.values_of("kindly") if isinstance(v, JsonObject)]
    if len(kindly) != 1:
        raise VectorError("a sealing vector needs exactly one kindly object")
    fields = {}
    for name in names:
        values = kindly[0].values_of(name)
        if len(values) != 1 or not isinstance(values[0], str):
            raise VectorError(f"a sealing vector needs kindly.{name} once, as a string")
        try:
            fields[name] = k.b64decode_canonical(values[0])
        except ValueError as exc:
            raise VectorError(f"kindly.{name} of a sealing vector is not base64: {exc}") from None
    return fields


def check_vector(raw) -> None:
    """Raises VectorError saying what is wrong, or returns when the vector holds."""
    if not isinstance(raw, JsonObject):
        raise VectorError("a vector is not a JSON object")
    if raw.has_duplicates():
        raise VectorError("a vector has a member twice")
    vector = dict(raw.members)
    unknown = set(vector) - set(VECTOR_FIELDS)
    if unknown:
        raise VectorError(f"unknown vector fields {sorted(unknown)}")
    if not isinstance(vector.get("description"), str) or not vector["description"]:
        raise VectorError("description missing")
    secret_key = _key(vector, "device_secret_key", 32)
    apns = vector.get("apns")
    if not isinstance(apns, JsonObject):
        raise VectorError("apns is not a JSON object")
    expected = plain(vector.get("expected"))
    if not isinstance(expected, dict):
        raise VectorError("expected is not an object")

    pinned = _pinned(vector)

    try:
        outcome = {"result": "ok", "payload": k.decrypt(apns, [secret_key], pinned)}
    except k.KindlyError as exc:
        outcome = {"result": "error", "reason": exc.code}
    if expected.get("result") == "ok":
        if set(expected) != {"result", "payload"} or not isinstance(expected["payload"], dict):
            raise VectorError('an "ok" expectation is {"result": "ok", "payload": OBJECT}')
    elif expected.get("result") == "error":
        if set(expected) != {"result", "reason"} or expected["reason"] not in k.DECRYPT_REASONS:
            raise VectorError('an "error" expectation is {"result": "error", "reason": CODE}')
    else:
        raise VectorError('expected.result is neither "ok" nor "error"')
    if not same(expected, outcome):
        got = outcome.get("reason") or "ok " + k.dumps(outcome["payload"])
        want = expected.get("reason") or "ok " + k.dumps(expected["payload"])
        raise VectorError(f"expected {want}, got {got}")

    # A version 3 sealing vector (its envelope's v is 3) has no nonce: HPKE derives it.
    kindly = [value for value in apns.values_of("kindly") if isinstance(value, JsonObject)]
    version3 = len(kindly) == 1 and k.envelope_version(dict(kindly[0].members).get("v")) == 3
    sealing_fields = SEALING_FIELDS_V3 if version3 else SEALING_FIELDS
    present = [name for name in SEALING_FIELDS if name in vector]
    if present and present != list(sealing_fields):
        raise VectorError(f"a sealing vector needs exactly {sealing_fields}, this one has {present}")
    if "sender_secret_key" in vector and not present:
        raise VectorError(f"sender_secret_key belongs to a sealing vector, which also has all of {sealing_fields}")
    if present:
        esk = _key(vector, "ephemeral_secret_key", 32)
        sender_sk = _key(vector, "sender_secret_key", 32) if "sender_secret_key" in vector else None
        if not isinstance(vector["plaintext"], str):
            raise VectorError("plaintext is not a string")
        text = vector["plaintext"].encode("utf-8")
        if version3:
            resealed = k.seal_v3(text, k.public_key_of(secret_key), esk, sender_sk)
            names = ("kid", "enc", "ct") if sender_sk is None else ("kid", "sid", "enc", "ct")
        else:
            nonce = _key(vector, "nonce", 24)
            resealed = k.seal(text, k.public_key_of(secret_key), esk, nonce, sender_sk)
            names = ("kid", "epk", "n", "ct") if sender_sk is None else ("kid", "sid", "epk", "n", "ct")
        for name, data in _envelope_bytes(apns, names).items():
            if getattr(resealed, "epk" if name == "enc" else name) != data:
                raise VectorError(f"re-sealing gives a different {name}")


def check_text(text: str) -> list[str]:
    """Problems of one vector file's text, one line per failing vector ([] when it all holds)."""
    return [problem for _, problem in _run(text) if problem]


def _run(text: str) -> list[tuple[str, str | None]]:
    """(description, problem or None) for every vector of a file."""
    try:
        doc = k.parse_json(text, keep_duplicates=True)
    except ValueError as exc:
        return [("(file)", f"not JSON: {exc}")]
    if isinstance(doc, JsonObject) and doc.names() == ["vectors"]:
        vectors = doc.values_of("vectors")[0]
        if not isinstance(vectors, list):
            return [("(file)", '"vectors" is not an array')]
    else:
        vectors = [doc]
    results = []
    for index, vector in enumerate(vectors):
        description = vector.values_of("description") if isinstance(vector, JsonObject) else []
        label = f"#{index} {description[0] if description and isinstance(description[0], str) else '?'}"
        try:
            check_vector(vector)
            results.append((label, None))
        except VectorError as exc:
            results.append((label, f"{label}: {exc}"))
    return results


def _files(paths: list[str]) -> list[Path]:
    if not paths:
        return sorted(VECTOR_DIR.glob("*.json"))
    files = []
    for path in map(Path, paths):
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="vector files or folders (default: TestVectors/)")
    parser.add_argument("--skip-generator-check", action="store_true",
                        help="do not compare TestVectors/ with what gen_vectors.py writes")
    args = parser.parse_args(argv)

    passed = failed = 0
    for path in _files(args.paths):
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: cannot read: {exc}")
            failed += 1
            continue
        for _, problem in _run(text):
            if problem:
                print(f"{path.name}: {problem}")
                failed += 1
            else:
                passed += 1

    stale = 0
    if not args.paths and not args.skip_generator_check:
        import gen_vectors
        for name, text in gen_vectors.build().items():
            path = VECTOR_DIR / name
            if not path.exists() or path.read_bytes() != text.encode("utf-8"):
                print(f"{name}: differs from what gen_vectors.py writes (run it again, or it was hand-edited)")
                stale += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and stale == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
