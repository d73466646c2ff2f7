// Multi-select and what to do with a selection: delete, move to a folder, download as one zip.
// Rows are picked with their checkbox (shift-click picks a range) or all at once in the header.
"use strict";

function pick(entry, on, range) {
  const rows = visible();
  let targets = [entry];
  if (range && state.lastClicked) {
    const a = rows.findIndex((e) => e.path === state.lastClicked), b = rows.findIndex((e) => e.path === entry.path);
    if (a >= 0 && b >= 0) targets = rows.slice(Math.min(a, b), Math.max(a, b) + 1);
  }
  for (const t of targets) on ? state.selected.add(t.path) : state.selected.delete(t.path);
  state.lastClicked = entry.path;
  render();
}

function selectedEntries() {
  return state.entries.filter((e) => state.selected.has(e.path));
}

function renderSelection() {
  const n = state.selected.size, all = $("#pick-all");
  const shownCount = document.querySelectorAll("#entries tbody tr").length;
  all.checked = n > 0 && n === shownCount;
  all.indeterminate = n > 0 && n < shownCount;
  $("#bulk").hidden = n === 0;
  $("#bulk-count").textContent = `${n} selected`;
  for (const tr of document.querySelectorAll("#entries tbody tr")) tr.classList.toggle("picked", state.selected.has(tr.dataset.path));
}

async function bulkDelete() {
  const chosen = selectedEntries();
  const dirs = chosen.filter((e) => e.type === "dir").length;
  if ((await ask(`Delete ${chosen.length} item(s)${dirs ? `, ${dirs} of them folders with everything in them` : ""}?`)) === null) return;
  const trashed = [];
  const failed = await settle(chosen, async (e) => { const answer = await removePath(e); if (answer.trash) trashed.push(answer.trash); });
  state.selected.clear();
  await refresh();
  if (failed.length) report("deleted", chosen.length, failed);
  else noteUndo(`moved ${chosen.length} item(s) to the trash`, trashed);
}

async function bulkMove() {
  const chosen = selectedEntries();
  const target = (await ask(`Move ${chosen.length} item(s) to the folder:`, state.cwd))?.trim();
  if (!target) return;
  const dest = "/" + target.split("/").filter(Boolean).join("/");
  if (chosen.some((e) => e.type === "dir" && (dest + "/").startsWith(e.path + "/"))) throw new Error("a folder cannot move into itself");
  await makeDir(dest);
  const failed = await settle(chosen, (e) => Api.json("POST", "/v1/move", { json: { src: e.path, dst: join(dest, baseName(e.path)) } }));
  state.selected.clear();
  await show(state.cwd);
  report(`moved to ${dest}:`, chosen.length, failed);
}

async function bulkZip() {
  const chosen = selectedEntries();
  const files = [];
  for (const e of chosen) {
    const top = baseName(e.path);
    if (e.type === "file") files.push({ path: e.path, name: top, mtime: e.mtime });
    else for (const t of await tree(e.path)) if (t.type === "file") files.push({ path: join(e.path, t.rel), name: `${top}/${t.rel}` });
  }
  $("#upload-status").textContent = `zipping ${files.length} file(s)…`;
  const parts = await mapLimited(files, 4, async (f) => ({
    name: f.name,
    data: new Uint8Array(await (await fileBlob(f.path)).arrayBuffer()),
    mtime: f.mtime ? new Date(f.mtime * 1000) : new Date(),
  }));
  const name = chosen.length === 1 ? `${baseName(chosen[0].path)}.zip` : `${baseName(state.cwd) || "hycloud"}.zip`;
  saveBlob(makeZip(parts), name);
  $("#upload-status").textContent = "";
  note(`downloaded ${name} (${files.length} file(s))`);
}

// Runs fn on every entry, 4 at a time; answers the failures as "path: message".
async function settle(entries, fn) {
  const results = await mapLimited(entries, 4, (e) => fn(e).then(() => null, (err) => `${e.path}: ${err.message}`));
  return results.filter(Boolean);
}

function report(verb, count, failed) {
  if (failed.length) say(`${failed.length} of ${count} failed: ${failed.join("; ")}`);
  else note(`${verb} ${count} item(s)`);
}

function startBulk() {
  $("#pick-all").onclick = (e) => {
    for (const entry of visible()) e.target.checked ? state.selected.add(entry.path) : state.selected.delete(entry.path);
    render();
  };
  $("#bulk-delete").onclick = () => guarded(bulkDelete);
  $("#bulk-move").onclick = () => guarded(bulkMove);
  $("#bulk-zip").onclick = () => guarded(bulkZip);
  $("#bulk-clear").onclick = () => { state.selected.clear(); render(); };
}
