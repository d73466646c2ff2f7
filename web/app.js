// The file browser: log in with a key, then browse, sort, search, select, upload (also by drag and
// drop), preview, download, rename, move, delete (into the trash), share and restore earlier
// versions or deleted items. Bulk actions are in bulk.js, drag and drop in drop.js, the preview
// pane in preview.js, history in history.js, the Trash view in trash.js.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = {
  cwd: "/",
  threshold: 2 * 1024 * 1024,
  me: "",               // the caller's user id: what "by" names in the history and the trash
  entries: [],          // the current folder's listing, or the deep search's matches
  sort: { key: "name", dir: 1 },
  selected: new Set(),  // paths
  lastClicked: null,    // for shift-click ranges
};

function human(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i ? `${n.toFixed(1)} ${units[i]}` : `${n} B`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const pad = (n) => String(n).padStart(2, "0");

// Long form for wide screens; the short one (a phone's column) is "29 Nov 17:24" this year,
// "29 Nov 2025" before.
function dates(mtime) {
  const d = new Date(mtime * 1000);
  const long = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  const tail = d.getFullYear() === new Date().getFullYear() ? `${pad(d.getHours())}:${pad(d.getMinutes())}` : d.getFullYear();
  return [long, `${d.getDate()} ${MONTHS[d.getMonth()]} ${tail}`];
}

const join = (dir, name) => (dir === "/" ? "" : dir) + "/" + name;
const say = (text) => { $("#message").textContent = text; };  // errors
const note = (text) => { $("#notice").textContent = text; };
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

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
  state.me = me.id ?? "";
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
  return entries;
}

let shown = 0;  // the latest show(): an older listing answering late must not draw over it

async function show(path) {
  const mine = ++shown;
  const entries = await listing(path);
  if (mine !== shown) return;
  if (path !== state.cwd) { state.selected.clear(); $("#search").value = ""; note(""); }
  state.cwd = path;
  state.entries = entries;
  renderCrumbs(path);
  render();
}

const refresh = () => Promise.all([show(state.cwd), showUsage()]);

function compare(a, b) {
  if (a.type !== b.type) return a.type === "dir" ? -1 : 1;  // folders first, whichever the order
  const { key, dir } = state.sort;
  const by = key === "name" ? a.name.localeCompare(b.name, undefined, { numeric: true }) : (a[key] ?? 0) - (b[key] ?? 0);
  return dir * (by || a.name.localeCompare(b.name));
}

// What the table shows: the entries matching the search, in the chosen order.
function visible() {
  const q = $("#search").value.trim().toLowerCase();
  return state.entries.filter((e) => !q || e.name.toLowerCase().includes(q)).sort(compare);
}

function render() {
  const rows = visible();
  const paths = new Set(rows.map((e) => e.path));
  for (const p of [...state.selected]) if (!paths.has(p)) state.selected.delete(p);
  $("#entries tbody").replaceChildren(...rows.map(row));
  $("#empty").hidden = rows.length > 0;
  $("#empty").textContent = $("#search").value ? "Nothing matches the search." : "This folder is empty: drop files here.";
  for (const th of document.querySelectorAll("#entries th[data-sort]")) {
    const on = th.dataset.sort === state.sort.key;
    th.setAttribute("aria-sort", on ? (state.sort.dir > 0 ? "ascending" : "descending") : "none");
  }
  renderSelection();
}

function sortBy(key) {
  state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : 1 };
  render();
}

function renderCrumbs(path) {
  const parts = path.split("/").filter(Boolean);
  const links = [["/", "/"], ...parts.map((p, i) => [p, "/" + parts.slice(0, i + 1).join("/")])];
  $("#crumbs").replaceChildren(...links.map(([label, target]) => {
    const a = el("a", { href: "#", textContent: label });
    a.onclick = (e) => { e.preventDefault(); guarded(() => show(target)); };
    return a;
  }));
}

function button(label, cls, action, title = "") {
  const b = el("button", { textContent: label, className: cls, title });
  b.onclick = (e) => { e.stopPropagation(); guarded(action); };
  return b;
}

function row(entry) {
  const tr = el("tr");
  tr.dataset.name = entry.name;
  tr.dataset.type = entry.type;
  tr.dataset.path = entry.path;
  const check = el("input", { type: "checkbox", className: "pick", checked: state.selected.has(entry.path), title: "select" });
  check.setAttribute("aria-label", `select ${entry.name}`);
  check.onclick = (e) => pick(entry, e.target.checked, e.shiftKey);
  const open = el("a", { href: "#", className: "open", textContent: entry.type === "dir" ? entry.name + "/" : entry.name });
  open.onclick = (e) => {
    e.preventDefault();
    guarded(() => (entry.type === "dir" ? show(entry.path) : preview(entry)));
  };
  const [long, short] = dates(entry.mtime);
  const actions = el("td", { className: "actions" });
  if (entry.type === "file") {
    actions.append(
      button("Download", "download", () => download(entry)),
      button("Share", "share", () => share(entry)),
      button("History", "history", () => history(entry), "earlier versions, restore"),
    );
  }
  actions.append(button("Rename", "rename", () => rename(entry)), button("Delete", "delete", () => remove(entry)));
  tr.append(
    el("td", { className: "sel" }, check),
    el("td", { className: "name" }, open),
    el("td", { className: "num size", textContent: entry.type === "dir" ? "" : human(entry.size) }),
    el("td", { className: "date", title: new Date(entry.mtime * 1000).toString() },
      el("span", { className: "long", textContent: long }), el("span", { className: "short", textContent: short })),
    el("td", { className: "where", textContent: entry.storage === "large" ? "S3" : entry.type === "dir" ? "" : "EFS" }),
    actions,
  );
  return tr;
}

const baseName = (path) => path.slice(path.lastIndexOf("/") + 1);
const parentOf = (path) => path.slice(0, path.lastIndexOf("/")) || "/";

async function download(entry) {
  saveBlob(await fileBlob(entry.path), baseName(entry.path));
  note(`downloaded ${entry.name}`);
}

function saveBlob(blob, name) {
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 60_000);
}

async function rename(entry) {
  const name = await ask(`Rename ${entry.name} to:`, baseName(entry.path));
  if (!name || name === baseName(entry.path)) return;
  await Api.json("POST", "/v1/move", { json: { src: entry.path, dst: join(parentOf(entry.path), name) } });
  await show(state.cwd);
}

async function remove(entry) {
  if ((await ask(`Delete ${entry.path}${entry.type === "dir" ? " and everything in it" : ""}? It goes to the trash.`)) === null) return;
  const answer = await removePath(entry);
  await refresh();
  noteUndo(`moved ${entry.path} to the trash`, answer.trash ? [answer.trash] : []);
}

// Deletes a file or a folder tree (into the trash: the answer's `trash` names the item; an empty
// folder keeps none); a large tree runs as a job, which this waits for.
async function removePath(entry) {
  if (entry.type !== "dir") return Api.json("DELETE", "/v1/files", { params: { path: entry.path } });
  let status = await Api.json("DELETE", "/v1/dirs", { params: { path: entry.path, recursive: true } });
  while (status.job && status.state === "running") {
    status = await Api.json("GET", "/v1/tree-jobs", { params: { id: status.job, wait: 20 } });
  }
  if (status.job && status.state !== "done") throw new Error(`deleting ${entry.path}: ${status.state} ${JSON.stringify(status.error ?? "")}`);
  return status;
}

async function share(entry) {
  const made = await Api.json("POST", "/v1/shares", { json: { path: entry.path, expires_in: Number($("#share-expiry").value) } });
  $("#share-url").value = Api.base + made.url_path;
  $("#share-box").hidden = false;
  note(`share link for ${entry.name}, valid until ${new Date(made.expires * 1000).toISOString()}`);
}

// Makes a folder; one that is there already is fine.
async function makeDir(path) {
  try {
    await Api.json("POST", "/v1/dirs", { json: { path, parents: true } });
  } catch (err) {
    if (err.status !== 409) throw err;
  }
}

async function mkdir() {
  const name = $("#mkdir-name").value.trim();
  if (!name) return;
  await Api.json("POST", "/v1/dirs", { json: { path: join(state.cwd, name) } });
  $("#mkdir-name").value = "";
  await show(state.cwd);
}

// Uploads [{file, path}] one after the other with one progress bar; folders are made first.
async function uploadAll(items, dirs = []) {
  const progress = $("#upload-progress");
  const total = items.reduce((n, it) => n + it.file.size, 0) || 1;
  let done = 0;
  progress.value = 0;
  progress.dataset.steps = "0";
  for (const dir of dirs) await makeDir(dir);
  for (const { file, path } of items) {
    $("#upload-status").textContent = `uploading ${file.name}…`;
    await uploadFile(file, path, state.threshold, (sent) => {
      const value = Math.floor((100 * (done + sent)) / total);
      if (value > progress.value) progress.dataset.steps = String(Number(progress.dataset.steps) + 1);
      progress.value = value;
    });
    done += file.size;
  }
  progress.value = 100;
  $("#upload-status").textContent = `uploaded ${items.length} file(s)`;
  await refresh();
}

const upload = (files) => uploadAll([...files].map((file) => ({ file, path: join(state.cwd, file.name) })));

// A folder chosen with the folder picker: its files carry their path below the chosen folder.
function uploadFolder(files) {
  const items = [...files].map((file) => ({ file, path: join(state.cwd, file.webkitRelativePath || file.name) }));
  const dirs = new Set();
  for (const { path } of items) {
    for (let p = path.slice(0, path.lastIndexOf("/")); p.length > state.cwd.length; p = p.slice(0, p.lastIndexOf("/"))) dirs.add(p);
  }
  return uploadAll(items, [...dirs].sort());
}

async function showUsage() {
  const u = await Api.json("GET", "/v1/usage", { params: { source: "records" } });
  const usage = u.usage, cost = u.costs.hybrid || {};
  const rows = [
    ["files in EFS", `${usage.efs_files} (${human(usage.efs_bytes)})`],
    ["files in S3", `${usage.s3_objects} (${human(usage.s3_bytes)})`],
    ["monthly cost", cost.total !== undefined ? `$${Number(cost.total).toFixed(6)}` : "-"],
    ["share downloads", `${u.share_links?.downloads ?? 0} (${human(u.share_links?.bytes_served ?? 0)})`],
    ["trash", `${u.trash?.items ?? 0} item(s), ${u.trash?.files ?? 0} file(s) (${human(u.trash?.bytes ?? 0)})`],
  ];
  const table = el("table", { id: "usage-table" });
  for (const [k, v] of rows) table.insertRow().append(el("th", { textContent: k }), el("td", { textContent: v }));
  $("#trash-open").textContent = u.trash?.items ? `Trash (${u.trash.items})` : "Trash";
  $("#usage").replaceChildren(el("h3", { textContent: "Usage and cost" }), table);
}

async function start() {
  $("#login-form").onsubmit = (e) => { e.preventDefault(); guarded(() => login($("#api-url").value, $("#api-key").value)); };
  $("#logout").onclick = logout;
  $("#mkdir-btn").onclick = () => guarded(mkdir);
  $("#upload-input").onchange = (e) => guarded(async () => { await upload(e.target.files); e.target.value = ""; });
  $("#folder-input").onchange = (e) => guarded(async () => { await uploadFolder(e.target.files); e.target.value = ""; });
  $("#search").oninput = () => { if (!$("#search-deep").checked) render(); };
  $("#search-form").onsubmit = (e) => { e.preventDefault(); guarded(search); };
  $("#search-deep").onchange = () => guarded(search);
  for (const th of document.querySelectorAll("#entries th[data-sort]")) {
    th.querySelector("button").onclick = () => sortBy(th.dataset.sort);
  }
  startBulk();
  startDrop();
  startPreview();
  startHistory();
  startTrash();
  startSnapshots();
  const config = await fetch("config.json").then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
  $("#api-url").value = sessionStorage.getItem("hycloud.api") || config.apiUrl || "";
  const key = sessionStorage.getItem("hycloud.key");
  if (key) await guarded(() => login($("#api-url").value, key));
}

document.addEventListener("DOMContentLoaded", start);
