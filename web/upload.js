// Uploads by the API's protocol: small files in one PUT, large ones as presigned multipart PUTs
// of 8 MiB parts, each with its SHA-256 checksum, then a commit (see routes/uploads.py).
"use strict";

const PART_SIZE = 8 * 1024 * 1024;
const PARALLEL = 4;

const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)));
const sha256 = (data) => crypto.subtle.digest("SHA-256", data);

async function partDigests(file) {
  const digests = [];
  for (let offset = 0; offset < file.size || digests.length === 0; offset += PART_SIZE) {
    digests.push(await sha256(await file.slice(offset, offset + PART_SIZE).arrayBuffer()));
  }
  return digests;
}

function concat(buffers) {
  const out = new Uint8Array(buffers.reduce((n, b) => n + b.byteLength, 0));
  let at = 0;
  for (const b of buffers) { out.set(new Uint8Array(b), at); at += b.byteLength; }
  return out;
}

// PUT with upload progress: fetch() cannot report it, XMLHttpRequest can.
function putWithProgress(url, body, headers, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => (xhr.status < 300 ? resolve(xhr) : reject(new Error(`upload refused: HTTP ${xhr.status} ${xhr.responseText.slice(0, 200)}`)));
    xhr.onerror = () => reject(new Error("network error during upload"));
    xhr.send(body);
  });
}

async function uploadSmall(file, path, onProgress) {
  const data = await file.arrayBuffer();
  const url = new URL(Api.base + "/v1/files");
  url.searchParams.set("path", path);
  const headers = {
    Authorization: `Bearer ${Api.key}`,
    "Content-Type": "application/octet-stream",
    "x-hycloud-sha256": hex(await sha256(data)),
  };
  const xhr = await putWithProgress(url, data, headers, (sent) => onProgress(sent, file.size));
  return JSON.parse(xhr.responseText);
}

async function uploadLarge(file, path, onProgress) {
  const digests = await partDigests(file);
  const contentHash = hex(await sha256(concat(digests)));
  const plan = await Api.json("POST", "/v1/uploads", {
    json: { size: file.size, content_hash: contentHash, part_digests: digests.map(b64) },
  });
  let proof = null;
  if (plan.dedup) {
    const pieces = [];
    for (const [offset, length] of plan.challenge.ranges) pieces.push(await file.slice(offset, offset + length).arrayBuffer());
    proof = hex(await sha256(concat([new TextEncoder().encode(plan.challenge.nonce), ...pieces])));
    onProgress(file.size, file.size);
  } else {
    await sendParts(file, plan, digests, contentHash, onProgress);
  }
  return Api.json("POST", "/v1/uploads/commit", { json: { path, content_hash: contentHash, proof, parents: false } });
}

async function sendParts(file, plan, digests, contentHash, onProgress) {
  const sent = {};
  for (const n of plan.parts_done) sent[n] = Math.min(PART_SIZE, file.size - (n - 1) * PART_SIZE);
  const report = () => onProgress(Object.values(sent).reduce((a, b) => a + b, 0), file.size);
  const urls = { ...plan.urls };
  const queue = [...plan.missing];
  async function worker() {
    while (queue.length) {
      const n = queue.shift();
      if (!urls[n]) Object.assign(urls, (await Api.json("POST", "/v1/uploads/urls", { json: { content_hash: contentHash, parts: [n, ...queue.slice(0, 999)] } })).urls);
      const part = file.slice((n - 1) * PART_SIZE, n * PART_SIZE);
      await putWithProgress(urls[n], part, { "x-amz-checksum-sha256": b64(digests[n - 1]) }, (loaded) => { sent[n] = loaded; report(); });
      sent[n] = part.size;
      report();
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

async function uploadFile(file, path, threshold, onProgress) {
  return file.size > threshold ? uploadLarge(file, path, onProgress) : uploadSmall(file, path, onProgress);
}
