"""What the stand-ins' self-tests (tools/fcm/selftest.py, tools/webpush/selftest.py,
tools/unifiedpush/selftest.py) share: one line per check, base64url, a VAPID key pair, and the
self-test run again inside its stand-in's tools/with-* wrapper. The standard library only at
import (the UnifiedPush self-test's fake connector runs on the system Python)."""

import base64
import json
import os
import subprocess
import sys
import tempfile

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def checker(name):
    """check(condition, what, detail=""): prints "ok   NAME: what", or "FAIL NAME: what detail"
    and exits 1."""
    def check(condition, what, detail=""):
        if not condition:
            print(f"FAIL {name}: {what} {detail}", flush=True)
            sys.exit(1)
        print(f"ok   {name}: {what}", flush=True)
    return check


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def vapid_key():
    """An application server's VAPID key pair (PyPI `py_vapid`): (its Vapid, the public key as an
    uncompressed P-256 point in unpadded base64url)."""
    from cryptography.hazmat.primitives import serialization
    from py_vapid import Vapid
    vapid = Vapid()
    vapid.generate_keys()
    raw = vapid.public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return vapid, b64url(raw)


def run(path, wrapper, inside_when, inside, script=None):
    """A self-test's main: `inside()` when the environment has `inside_when` (the wrapper sets
    it), else the self-test (`path`) again on this Python inside tools/WRAPPER, given `script`
    (JSON) as --script FILE when there is one. Returns the exit status."""
    if inside_when in os.environ:
        inside()
        return 0
    command = [sys.executable, os.path.abspath(path)]
    if script is None:
        return subprocess.run([os.path.join(TOOLS, wrapper)] + command).returncode
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(script, f)
    try:
        return subprocess.run([os.path.join(TOOLS, wrapper), "--script", f.name] + command).returncode
    finally:
        os.unlink(f.name)
