"""web/decrypt.js against objects made by the Python encoder, in Node's WebCrypto (the same
`crypto.subtle` API as the browser): byte-exact round trip, and altered, cut, reordered or
wrong-key objects refused. Skipped where no Node is installed; the browser itself is
tests/e2e/test_encrypted_share.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from hycloud_core.crypto import share_format as sf

DECRYPT_JS = Path(__file__).resolve().parents[2] / "web" / "decrypt.js"
NODE = shutil.which("node")
KEY = os.urandom(32)
SEG = 4096

HARNESS = """
import fs from "fs"; import crypto from "crypto";
globalThis.document = { addEventListener() {} };
globalThis.window = { addEventListener() {} };
const HcShare = new Function(fs.readFileSync(process.argv[2], "utf8") + "; return HcShare;")();
const key = Buffer.from(process.argv[3], "hex");
const out = [];
for (const path of process.argv.slice(4)) {
  try {
    const file = await HcShare.decode(key, fs.readFileSync(path));
    const digest = crypto.createHash("sha256").update(Buffer.from(await file.blob.arrayBuffer())).digest("hex");
    out.push({ name: file.name, sha256: digest });
  } catch (err) { out.push({ error: err.message }); }
}
console.log(JSON.stringify(out));
"""

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def _decode_in_node(tmp_path: Path, blobs: list[bytes], key: bytes = KEY) -> list[dict]:
    script = tmp_path / "harness.mjs"
    script.write_text(HARNESS)
    files = []
    for i, blob in enumerate(blobs):
        files.append(tmp_path / f"{i}.hcs")
        files[-1].write_bytes(blob)
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(script), str(DECRYPT_JS), key.hex(), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(done.stdout))


def test_decrypt_js_reads_the_python_format_and_refuses_every_change(tmp_path):
    data = os.urandom(3 * SEG + 100)
    blob = sf.encode(KEY, "plan ü.bin", data, segment=SEG)
    start = sf.HEADER_LEN + 4 + struct.unpack(">I", blob[16:20])[0]
    sealed = SEG + sf.TAG_LEN
    altered = bytearray(blob)
    altered[start + sealed + 7] ^= 1
    reordered = blob[:start] + blob[start + sealed : start + 2 * sealed] + blob[start : start + sealed]
    reordered += blob[start + 2 * sealed :]
    cut_at_boundary = blob[:-116]  # the last segment (100 bytes + tag) dropped whole
    header = bytearray(blob)
    header[12] ^= 1

    got = _decode_in_node(tmp_path, [blob, bytes(altered), reordered, cut_at_boundary, bytes(header)])
    assert got[0] == {"name": "plan ü.bin", "sha256": hashlib.sha256(data).hexdigest()}
    for refused in got[1:]:
        assert refused["error"].startswith("Refused:"), refused
    assert "record 2" in got[1]["error"] and "record 1" in got[2]["error"]


def test_decrypt_js_refuses_a_wrong_key_and_reads_an_empty_file(tmp_path):
    blob = sf.encode(KEY, "empty", b"", segment=SEG)
    assert _decode_in_node(tmp_path, [blob])[0]["sha256"] == hashlib.sha256(b"").hexdigest()
    assert "Refused" in _decode_in_node(tmp_path, [blob], key=bytes(32))[0]["error"]
