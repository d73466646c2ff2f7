// The Trash view: what a delete moved into the user's trash (GET /v1/trash), newest first, with
// where it was, its size, when and by whom it was deleted. Items are restored where they were, one
// or several at once (POST /v1/trash/restore; a path taken since is refused and named, nothing is
// overwritten), or at another path; one item or the whole trash is removed for good after a
// confirmation (POST /v1/trash/empty). Upkeep purges items once the retention has passed.
"use strict";

const trashState = { items: [], picked: new Set(), retention: 0 };

const inTrash = () => !$("#trash").hidden;

async function openTrash() {
  closePreview();
  closeHistory();
  $("#trash").hidden = false;
  $("#browser").classList.add("in-trash");
  note("");
  await loadTrash();
}

async function closeTrash() {
  $("#trash").hidden = true;
  $("#browser").classList.remove("in-trash");
  await refresh();  // what was restored may be in the folder shown
}

// The items, and the usage below them (its trash line changes with each restore or removal).
async function loadTrash() {
  const [answer] = await Promise.all([Api.json("GET", "/v1/trash"), showUsage()]);
  trashState.items = answer.items;
  trashState.retention = answer.retention_s;
  const ids = new Set(answer.items.map((i) => i.item));
  for (const id of [...trashState.picked]) if (!ids.has(id)) trashState.picked.delete(id);
  renderTrash();
}

const days = (s) => (s % 86400 === 0 ? `${s / 86400} day(s)` : s >= 3600 ? `${(s / 3600).toFixed(1)} hour(s)` : `${s} s`);

function renderTrash() {
  const { items, picked, retention } = trashState;
  $("#trash-table tbody").replaceChildren(...items.map(trashRow));
  $("#trash-none").hidden = items.length > 0;
  $("#trash-table").hidden = items.length === 0;
  const bytes = items.reduce((n, i) => n + i.size, 0);
  $("#trash-info").textContent = items.length
    ? `${items.length} item(s), ${human(bytes)}; each is removed for good ${days(retention)} after it was deleted.`
    : "";
  $("#trash-empty").disabled = items.length === 0;
  $("#trash-restore").disabled = picked.size === 0;
  $("#trash-restore").textContent = picked.size ? `Restore ${picked.size} selected` : "Restore selected";
  const all = $("#trash-pick-all");
  all.checked = picked.size > 0 && picked.size === items.length;
  all.indeterminate = picked.size > 0 && picked.size < items.length;
}

function trashRow(item) {
  const tr = el("tr", { className: trashState.picked.has(item.item) ? "picked" : "" });
  tr.dataset.item = item.item;
  tr.dataset.path = item.path;
  const check = el("input", { type: "checkbox", className: "pick", checked: trashState.picked.has(item.item), title: "select" });
  check.setAttribute("aria-label", `select ${item.path}`);
  check.onclick = (e) => {
    e.target.checked ? trashState.picked.add(item.item) : trashState.picked.delete(item.item);
    renderTrash();
  };
  const [long, short] = dates(item.at);
  const gone = new Date((item.at + trashState.retention) * 1000).toString();
  const name = baseName(item.path) + (item.type === "dir" ? "/" : "");
  tr.append(
    el("td", { className: "sel" }, check),
    el("td", { className: "name", title: item.path }, el("span", { className: "base", textContent: name }),
      item.type === "dir" ? el("span", { className: "files", textContent: ` ${item.files} file(s)` }) : "",
      el("div", { className: "from", textContent: `in ${parentOf(item.path)}` })),
    el("td", { className: "num size", textContent: human(item.size) }),
    el("td", { className: "date", title: `deleted ${new Date(item.at * 1000).toString()}; removed for good after ${gone}` },
      el("span", { className: "long", textContent: long }), el("span", { className: "short", textContent: short }),
      el("div", { className: "by", textContent: `by ${shortId(item.by)}`, title: item.by })),
    el("td", { className: "actions" },
      button("Restore", "restore", () => restoreItems([item]), `put it back at ${item.path}`),
      button("Restore to…", "restore-to", () => restoreTo(item), "put it back at another path"),
      button("Delete forever", "purge danger", () => purge(item), "remove it for good")),
  );
  return tr;
}

// Restores each item where it was; one whose path is taken now is named in the error, the others
// are restored all the same.
async function restoreItems(items) {
  const failed = (await mapLimited(items, 4, (i) => Api.json("POST", "/v1/trash/restore", { json: { item: i.item } })
    .then(() => null, (err) => `${i.path}: ${err.status === 409 ? "something is there now (use Restore to…)" : err.message}`)))
    .filter(Boolean);
  for (const i of items) trashState.picked.delete(i.item);
  await loadTrash();
  if (failed.length) say(`${failed.length} of ${items.length} not restored: ${failed.join("; ")}`);
  else note(items.length === 1 ? `restored ${items[0].path}` : `restored ${items.length} item(s)`);
}

// The notice after a delete, with an Undo that restores what it moved into the trash.
function noteUndo(text, items) {
  note(text);
  if (items.length) {
    $("#notice").append(" ", button("Undo", "undo", async () => { await restoreItems(items); await refresh(); }, "restore it from the trash"));
  }
}

async function restoreTo(item) {
  const to = (await ask(`Restore ${item.path} at the path:`, item.path))?.trim();
  if (!to) return;
  const dest = "/" + to.split("/").filter(Boolean).join("/");
  await Api.json("POST", "/v1/trash/restore", { json: { item: item.item, to: dest } });
  trashState.picked.delete(item.item);
  await loadTrash();
  note(`restored ${item.path} at ${dest}`);
}

async function purge(item) {
  if ((await ask(`Remove ${item.path} (${human(item.size)}) for good? It cannot be restored after.`)) === null) return;
  await Api.json("POST", "/v1/trash/empty", { json: { item: item.item } });
  await loadTrash();
  note(`removed ${item.path} for good`);
}

async function emptyTrash() {
  const { items } = trashState;
  const bytes = human(items.reduce((n, i) => n + i.size, 0));
  if ((await ask(`Empty the trash: remove all ${items.length} item(s) (${bytes}) for good? They cannot be restored after.`)) === null) return;
  const answer = await Api.json("POST", "/v1/trash/empty", { json: {} });
  trashState.picked.clear();
  await loadTrash();
  note(`emptied the trash: ${answer.emptied.length} item(s) removed for good`);
}

function startTrash() {
  $("#trash-open").onclick = () => guarded(openTrash);
  $("#trash-back").onclick = () => guarded(closeTrash);
  $("#trash-reload").onclick = () => guarded(loadTrash);
  $("#trash-restore").onclick = () => guarded(() => restoreItems(trashState.items.filter((i) => trashState.picked.has(i.item))));
  $("#trash-empty").onclick = () => guarded(emptyTrash);
  $("#trash-pick-all").onclick = (e) => {
    for (const i of trashState.items) e.target.checked ? trashState.picked.add(i.item) : trashState.picked.delete(i.item);
    renderTrash();
  };
}
