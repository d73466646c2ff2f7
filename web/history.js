// Version history: the versions an overwrite or a delete replaced (GET /v1/versions), newest
// first, each with when it was replaced, its size and who replaced it; Restore writes one back
// (POST /v1/restore), and what it replaces is kept as a version in turn. A deleted file is brought
// back from the Trash view (trash.js); its versions are listed here again once it is.
"use strict";

async function history(entry) {
  const pane = $("#history");
  closePreview();  // one side pane at a time
  pane.hidden = false;
  pane.dataset.path = entry.path;
  $("#history-title").textContent = `History of ${entry.name}`;
  $("#history-body").replaceChildren(el("p", { className: "hint", textContent: "loading…" }));
  const list = await Api.json("GET", "/v1/versions", { params: { path: entry.path } });
  if (pane.dataset.path !== entry.path) return;
  $("#history-body").replaceChildren(historyTable(entry, list));
}

function historyTable(entry, list) {
  const table = el("table", { id: "history-table" });
  const heads = [["", ""], ["replaced, by", "date"], ["size", "num size"], ["", "actions"]];
  table.createTHead().insertRow().append(...heads.map(([t, c]) => el("th", { textContent: t, className: c })));
  const body = table.createTBody();
  if (list.current) body.append(versionRow(list.current, "now", "current", null));
  list.versions.forEach((v, i) => {
    body.append(versionRow(v, v.reason === "delete" ? "deleted" : `v${list.versions.length - i}`, dates(v.at)[1], () => restore(entry, v)));
  });
  if (!list.versions.length) {
    body.insertRow().append(el("td", { colSpan: 4, className: "hint", textContent: "No earlier versions kept." }));
  }
  return table;
}

// A user id ("u-" and 32 hex digits) shortened as git shortens a commit's (the whole one in its
// title), or "you" for the caller's own.
const shortId = (id) => (id === state.me ? "you" : id.length > 12 ? `${id.slice(0, 10)}…` : id);

function versionRow(v, label, when, onRestore) {
  const tr = el("tr");
  if (v.version) tr.dataset.version = v.version;
  tr.append(
    el("td", { className: "label", textContent: label }),
    el("td", { className: "date", title: v.at ? new Date(v.at * 1000).toString() : "" },
      el("span", { textContent: when }), v.by ? el("div", { className: "by", textContent: `by ${shortId(v.by)}`, title: v.by }) : ""),
    el("td", { className: "num size", textContent: human(v.size ?? 0) }),
    el("td", { className: "actions" }, onRestore ? button("Restore", "restore", onRestore, `write this version back at ${v.path}`) : ""),
  );
  return tr;
}

async function restore(entry, version) {
  const when = new Date(version.mtime * 1000).toLocaleString();
  if ((await ask(`Restore ${entry.name} as it was on ${when} (${human(version.size)})? The current file is kept as a version.`)) === null) return;
  await Api.json("POST", "/v1/restore", { json: { path: entry.path, version: version.version } });
  note(`restored ${entry.name} from ${when}`);
  await Promise.all([refresh(), history(entry)]);
}

function closeHistory() {
  $("#history").hidden = true;
  $("#history").dataset.path = "";
  $("#history-body").replaceChildren();
}

function startHistory() {
  $("#history-close").onclick = closeHistory;
}
