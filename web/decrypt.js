// The page of a share link of an encrypted file (share.html#s=TOKEN&k=KEY, docs/ENCRYPTION.md
// "Sharing"). Browsers never send the fragment, so the cloud serving the ciphertext never sees the
// key. The format (HCS1) is layers/core/hycloud_core/crypto/share_format.py: a 16-byte header
// ("HCS1", segment size, nonce prefix), a sealed {name, size}, then AES-256-GCM segments; record i
// has nonce prefix|i and associated data header|i|final, so altered, reordered or cut objects fail.
"use strict";

const HcShare = (() => {
  const HEADER = 16, TAG = 16, MIN_SEG = 1 << 12, MAX_SEG = 1 << 24, MAX_META = 4096;
  const refused = (why) => new Error(`Refused: ${why}. Nothing was saved.`);

  function keyBytes(text) {
    const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const raw = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const key = Uint8Array.from(raw, (c) => c.charCodeAt(0));
    if (key.length !== 32) throw new Error("the link's key is not 32 bytes: was the link cut?");
    return key;
  }

  function record(header, index, final) {
    const iv = new Uint8Array(12), aad = new Uint8Array(HEADER + 5);
    iv.set(header.subarray(8, 16));
    new DataView(iv.buffer).setUint32(8, index);
    aad.set(header);
    new DataView(aad.buffer).setUint32(HEADER, index);
    aad[HEADER + 4] = final ? 1 : 0;
    return { name: "AES-GCM", iv, additionalData: aad, tagLength: 128 };
  }

  async function open(key, header, index, final, sealed) {
    try {
      return new Uint8Array(await crypto.subtle.decrypt(record(header, index, final), key, sealed));
    } catch (_) {
      throw refused(`record ${index} of the shared file failed its check (altered, reordered or cut short, or a wrong key)`);
    }
  }

  // {name, blob} of an HCS1 object; throws on anything that fails a check.
  async function decode(rawKey, buffer, onProgress = () => {}) {
    const bytes = new Uint8Array(buffer);
    if (bytes.length < HEADER + 4 || new TextDecoder().decode(bytes.subarray(0, 4)) !== "HCS1") {
      throw refused("this is not an encrypted HyCloud share");
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const segment = view.getUint32(4), metaLen = view.getUint32(HEADER);
    if (segment < MIN_SEG || segment > MAX_SEG || metaLen < TAG || metaLen > MAX_META) throw refused("the share's header is out of range");
    if (bytes.length < HEADER + 4 + metaLen) throw refused("the shared file is cut short");
    const header = bytes.slice(0, HEADER);
    const key = await crypto.subtle.importKey("raw", rawKey, "AES-GCM", false, ["decrypt"]);
    const start = HEADER + 4;
    const meta = JSON.parse(new TextDecoder().decode(await open(key, header, 0, false, bytes.subarray(start, start + metaLen))));
    const body = bytes.subarray(start + metaLen), sealedLen = segment + TAG;
    const count = Math.max(1, Math.ceil(body.length / sealedLen));
    const parts = [];
    let size = 0;
    for (let j = 0; j < count; j++) {
      const part = await open(key, header, j + 1, j === count - 1, body.subarray(j * sealedLen, (j + 1) * sealedLen));
      parts.push(part);
      size += part.length;
      onProgress(j + 1, count);
    }
    if (size !== meta.size) throw refused("the shared file's length differs from what its sender sealed");
    return { name: String(meta.name), blob: new Blob(parts, { type: "application/octet-stream" }) };
  }

  async function apiBase() {
    const config = await fetch("config.json").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
    const base = config.apiUrl || sessionStorage.getItem("hycloud.api");
    if (!base) throw new Error("this web app does not know its API (no config.json)");
    return base.replace(/\/+$/, "");
  }

  // The ciphertext through the public share route (a redirect to the store); errors say why.
  async function fetchShare(token) {
    const response = await fetch(`${await apiBase()}/v1/shared/${encodeURIComponent(token)}`);
    if (response.ok) return response.arrayBuffer();
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).error?.message || message; } catch (_) { /* not JSON */ }
    throw new Error(`The share link could not be fetched: ${message}`);
  }

  async function start() {
    const status = (text) => { document.getElementById("share-status").textContent = text; };
    const params = new URLSearchParams(location.hash.slice(1));
    const token = params.get("s"), key = params.get("k");
    try {
      if (!token || !key) throw new Error("This link has no share token or key after “#”.");
      const rawKey = keyBytes(key);
      const sealed = await fetchShare(token);
      status(`Decrypting ${sealed.byteLength} bytes…`);
      const file = await decode(rawKey, sealed, (done, all) => status(`Decrypting: segment ${done} of ${all}`));
      const save = document.getElementById("share-save");
      save.href = URL.createObjectURL(file.blob);
      save.download = file.name;
      save.textContent = `Save ${file.name}`;
      save.hidden = false;
      status(`${file.name} (${file.blob.size} bytes) decrypted and checked in this browser.`);
    } catch (err) {
      status("");
      document.getElementById("message").textContent = err.message;
    }
  }

  return { decode, start };
})();

document.addEventListener("DOMContentLoaded", HcShare.start);
window.addEventListener("hashchange", () => location.reload());  // another link pasted into this tab
