// The file browser: log in with a key, then browse, upload, download, rename, delete, share.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { cwd: "/", threshold: 2 * 1024 * 1024 };
// A small file's bytes come back binary only when the first Accept type is one the REST API lists
// in its binaryMediaTypes; without it API Gateway answers them as base64 text. A large file's
// answer is a link (JSON), as the Python client asks.
const DOWNLOAD_ACCEPT = "application/octet-stream, application/vnd.hycloud.link+json";

function human(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i ? `${n.toFixed(1)} ${units[i]}` : `${n} B`;
}

const join = (dir, name) => (dir === "/" ? "" : dir) + "/" + name;
const say = (text) => { $("#message").textContent = text; };  // errors
const note = (text) => { $("#notice").textContent = text; };

async function guarded(action) {
  try { say(""); await action(); } catch (err) { say(err.message); }
}

function ask(text, initial = null) {
  // A dialog instead of prompt()/confirm(): styled, and the same in every browser.
  return new Promise((resolve) => {
    const dialog = $("#dialog");
    $("#dialog-text").textContent = text;
    $("#dialog-input").hidden = initial === null;
    $("#dialog-input").value = initial ?? "";
    dialog.onclose = () => resolve(dialog.returnValue === "ok" ? $("#dialog-input").value : null);
    dialog.showModal();
  });
}

async function login(apiUrl, key) {
  Api.base = apiUrl.replace(/\/+$/, "");
  Api.key = key.trim();
  const me = await Api.json("GET", "/v1/whoami");
  state.threshold = me.small_file_threshold;
  sessionStorage.setItem("hycloud.api", Api.base);
  sessionStorage.setItem("hycloud.key", Api.key);
  $("#who").textContent = me.user;
  $("#login").hidden = true;
  $("#browser").hidden = false;
  $("#logout").hidden = false;
  await Promise.all([show("/"), showUsage()]);
}

function logout() {
  sessionStorage.clear();
  location.reload();
}

async function listing(path) {
  const entries = [];
  let cursor = null;
  do {
    const page = await Api.json("GET", "/v1/dirs", { params: { path, limit: 1000, ...(cursor ? { cursor } : {}) } });
    entries.push(...page.entries);
    cursor = page.cursor;
  } while (cursor);
  return entries.sort((a, b) => (a.type === b.type ? a.name.localeCompare(b.name) : a.type === "dir" ? -1 : 1));
}

let shown = 0;  // the latest show(): an older listing answering late must not draw over it

async function show(path) {
  const mine = ++shown;
  const entries = await listing(path);
  if (mine !== shown) return;
  state.cwd = path;
  renderCrumbs(path);
  const body = $("#entries tbody");
  body.replaceChildren(...entries.map(row));
}

function renderCrumbs(path) {
  const parts = path.split("/").filter(Boolean);
  const links = [["/", "/"], ...parts.map((p, i) => [p, "/" + parts.slice(0, i + 1).join("/")])];
  $("#crumbs").replaceChildren(...links.map(([label, target]) => {
    const a = document.createElement("a");
    a.href = "#";
    a.textContent = label;
    a.onclick = (e) => { e.preventDefault(); guarded(() => show(target)); };
    return a;
  }));
}

function button(label, cls, action) {
  const b = document.createElement("button");
  b.textContent = label;
  b.className = cls;
  b.onclick = () => guarded(action);
  return b;
}

function row(entry) {
  const tr = document.createElement("tr");
  tr.dataset.name = entry.name;
  tr.dataset.type = entry.type;
  const name = document.createElement("td");
  if (entry.type === "dir") {
    const a = document.createElement("a");
    a.href = "#";
    a.className = "open";
    a.textContent = entry.name + "/";
    a.onclick = (e) => { e.preventDefault(); guarded(() => show(entry.path)); };
    name.append(a);
  } else {
    name.textContent = entry.name;
  }
  const cells = [
    name,
    Object.assign(document.createElement("td"), { className: "num", textContent: entry.type === "dir" ? "" : human(entry.size) }),
    Object.assign(document.createElement("td"), { textContent: new Date(entry.mtime * 1000).toISOString().slice(0, 19).replace("T", " ") }),
    Object.assign(document.createElement("td"), { textContent: entry.storage === "large" ? "S3" : entry.type === "dir" ? "" : "EFS" }),
  ];
  const actions = document.createElement("td");
  if (entry.type === "file") {
    actions.append(button("Download", "download", () => download(entry)), button("Share", "share", () => share(entry)));
  }
  actions.append(button("Rename", "rename", () => rename(entry)), button("Delete", "delete", () => remove(entry)));
  tr.append(...cells, actions);
  return tr;
}

async function download(entry) {
  const response = await Api.call("GET", "/v1/files", { params: { path: entry.path }, headers: { Accept: DOWNLOAD_ACCEPT } });
  let blob;
  if (response.headers.get("Content-Type")?.startsWith("application/vnd.hycloud.link+json")) {
    let link = await response.json();  // a large file: fetch it straight from S3
    if (link.erasure) {  // coded across instances: one URL of the file made whole
      link = await (await Api.call("GET", "/v1/coded/whole", { params: { path: entry.path } })).json();
    }
    const direct = await fetch(link.url);
    if (!direct.ok) throw new Error(`S3 refused the download: HTTP ${direct.status}`);
    blob = await direct.blob();
  } else {
    blob = await response.blob();
  }
  const a = Object.assign(document.createElement("a"), { href: URL.createObjectURL(blob), download: entry.name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 60_000);
  note(`downloaded ${entry.name}`);
}

async function rename(entry) {
  const name = await ask(`Rename ${entry.name} to:`, entry.name);
  if (!name || name === entry.name) return;
  await Api.json("POST", "/v1/move", { json: { src: entry.path, dst: join(state.cwd, name) } });
  await show(state.cwd);
}

async function remove(entry) {
  if ((await ask(`Delete ${entry.path}${entry.type === "dir" ? " and everything in it" : ""}?`)) === null) return;
  if (entry.type === "dir") {
    await Api.json("DELETE", "/v1/dirs", { params: { path: entry.path, recursive: true } });
  } else {
    await Api.json("DELETE", "/v1/files", { params: { path: entry.path } });
  }
  await Promise.all([show(state.cwd), showUsage()]);
}

async function share(entry) {
  const made = await Api.json("POST", "/v1/shares", { json: { path: entry.path, expires_in: Number($("#share-expiry").value) } });
  $("#share-url").value = Api.base + made.url_path;
  $("#share-box").hidden = false;
  note(`share link for ${entry.name}, valid until ${new Date(made.expires * 1000).toISOString()}`);
}

async function mkdir() {
  const name = $("#mkdir-name").value.trim();
  if (!name) return;
  await Api.json("POST", "/v1/dirs", { json: { path: join(state.cwd, name) } });
  $("#mkdir-name").value = "";
  await show(state.cwd);
}

async function upload(files) {
  const progress = $("#upload-progress");
  const total = [...files].reduce((n, f) => n + f.size, 0) || 1;
  let done = 0;
  progress.value = 0;
  progress.dataset.steps = "0";
  for (const file of files) {
    $("#upload-status").textContent = `uploading ${file.name}…`;
    await uploadFile(file, join(state.cwd, file.name), state.threshold, (sent) => {
      const value = Math.floor((100 * (done + sent)) / total);
      if (value > progress.value) progress.dataset.steps = String(Number(progress.dataset.steps) + 1);
      progress.value = value;
    });
    done += file.size;
  }
  progress.value = 100;
  $("#upload-status").textContent = `uploaded ${files.length} file(s)`;
  await Promise.all([show(state.cwd), showUsage()]);
}

async function showUsage() {
  const u = await Api.json("GET", "/v1/usage", { params: { source: "records" } });
  const usage = u.usage, cost = u.costs.hybrid || {};
  const rows = [
    ["files in EFS", `${usage.efs_files} (${human(usage.efs_bytes)})`],
    ["files in S3", `${usage.s3_objects} (${human(usage.s3_bytes)})`],
    ["monthly cost", cost.total !== undefined ? `$${Number(cost.total).toFixed(6)}` : "-"],
    ["share downloads", `${u.share_links?.downloads ?? 0} (${human(u.share_links?.bytes_served ?? 0)})`],
  ];
  const table = document.createElement("table");
  table.id = "usage-table";
  for (const [k, v] of rows) table.insertRow().append(Object.assign(document.createElement("th"), { textContent: k }), Object.assign(document.createElement("td"), { textContent: v }));
  $("#usage").replaceChildren(Object.assign(document.createElement("h3"), { textContent: "Usage and cost" }), table);
}

async function start() {
  $("#login-form").onsubmit = (e) => { e.preventDefault(); guarded(() => login($("#api-url").value, $("#api-key").value)); };
  $("#logout").onclick = logout;
  $("#mkdir-btn").onclick = () => guarded(mkdir);
  $("#upload-input").onchange = (e) => guarded(async () => { await upload(e.target.files); e.target.value = ""; });
  const config = await fetch("config.json").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
  $("#api-url").value = sessionStorage.getItem("hycloud.api") || config.apiUrl || "";
  const key = sessionStorage.getItem("hycloud.key");
  if (key) await guarded(() => login($("#api-url").value, key));
}

start();
