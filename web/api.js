// REST calls with the user's key; every error becomes an Error carrying the API's code.
"use strict";

const Api = {
  base: "",
  key: "",

  async call(method, route, { params, json, body, headers } = {}) {
    const url = new URL(this.base + route);
    for (const [k, v] of Object.entries(params || {})) url.searchParams.set(k, v);
    const init = { method, headers: { Authorization: `Bearer ${this.key}`, ...(headers || {}) } };
    if (json !== undefined) {
      init.body = JSON.stringify(json);
      init.headers["Content-Type"] = "application/json";
    } else if (body !== undefined) {
      init.body = body;
    }
    const response = await fetch(url, init);
    if (!response.ok) throw await Api.error(response);
    return response;
  },

  async json(method, route, options) {
    return (await this.call(method, route, options)).json();
  },

  async error(response) {
    let code = `http-${response.status}`, message = response.statusText;
    try {
      const body = await response.json();
      code = body.error?.code || code;
      message = body.error?.message || body.message || message;
    } catch (_) { /* not JSON */ }
    const err = new Error(`${message} [${code}]`);
    err.code = code;
    err.status = response.status;
    return err;
  },
};

// A small file's bytes come back binary only when the first Accept type is one the REST API lists
// in its binaryMediaTypes; without it API Gateway answers them as base64 text. A large file's
// answer is a link (JSON), as the Python client asks.
const DOWNLOAD_ACCEPT = "application/octet-stream, application/vnd.hycloud.link+json";

// A file's bytes as a Blob; `range` ([start, end] inclusive) asks a large file's store for a slice
// only (a preview needs the first 64 KiB, not the file).
async function fileBlob(path, range = null) {
  const response = await Api.call("GET", "/v1/files", { params: { path }, headers: { Accept: DOWNLOAD_ACCEPT } });
  if (!response.headers.get("Content-Type")?.startsWith("application/vnd.hycloud.link+json")) {
    const blob = await response.blob();
    return range ? blob.slice(range[0], range[1] + 1) : blob;
  }
  let link = await response.json();  // a large file: fetch it straight from S3
  if (link.erasure) {  // coded across instances: one URL of the file made whole
    link = await (await Api.call("GET", "/v1/coded/whole", { params: { path } })).json();
  }
  const direct = await fetch(link.url, range ? { headers: { Range: `bytes=${range[0]}-${range[1]}` } } : {});
  if (!direct.ok) throw new Error(`S3 refused the download: HTTP ${direct.status}`);
  const blob = await direct.blob();
  return range && direct.status === 200 ? blob.slice(range[0], range[1] + 1) : blob;
}

// Every file below a folder as [relative path, type], by the API's paged tree listing.
async function tree(path) {
  const entries = [];
  let cursor = null;
  do {
    const page = await Api.json("GET", "/v1/bundles/tree", { params: { path, ...(cursor ? { cursor } : {}) } });
    entries.push(...page.entries);
    cursor = page.cursor;
  } while (cursor);
  return entries;
}
