// The Snapshots view: read-only copies of a folder (GET /v1/snapshots), newest first, with the
// folder each copies, when it was made, its files and size. "Snapshot this folder" copies the
// folder shown (POST /v1/snapshots; a large tree's job is followed to its end); a snapshot is restored to where it was (what is there now
// goes to the trash first: `replace`) or at another path (POST /v1/snapshots/{name}/restore),
// and removed for good after a confirmation (DELETE /v1/snapshots/{name}).
"use strict";

const snapState = { snapshots: [] };

async function openSnapshots() {
  closePreview();
  closeHistory();
  $("#trash").hidden = true;
  $("#browser").classList.remove("in-trash");
  $("#snapshots").hidden = false;
  $("#browser").classList.add("in-snapshots");
  note("");
  await loadSnapshots();
}

async function closeSnapshots() {
  $("#snapshots").hidden = true;
  $("#browser").classList.remove("in-snapshots");
  await refresh();  // what was restored may be in the folder shown
}

async function loadSnapshots() {
  const answer = await Api.json("GET", "/v1/snapshots");
  snapState.snapshots = answer.snapshots;
  const { totals } = answer;
  $("#snapshots-table tbody").replaceChildren(...answer.snapshots.map(snapshotRow));
  $("#snapshots-none").hidden = answer.snapshots.length > 0;
  $("#snapshots-table").hidden = answer.snapshots.length === 0;
  $("#snapshots-info").textContent = totals.snapshots
    ? `${totals.snapshots} snapshot(s), ${totals.files} file(s), ${human(totals.bytes)}; kept until removed.`
    : "";
}

function snapshotRow(snap) {
  const tr = el("tr");
  tr.dataset.name = snap.name;
  const [long, short] = dates(snap.at);
  const ready = snap.state === "ready";
  tr.append(
    el("td", { className: "name", title: snap.path }, el("span", { className: "base", textContent: snap.name }),
      el("div", { className: "from", textContent: `of ${snap.path}, ${snap.files} file(s)${ready ? "" : ` (${snap.state})`}` })),
    el("td", { className: "num size", textContent: human(snap.bytes) }),
    el("td", { className: "date", title: `made ${new Date(snap.at * 1000).toString()}` },
      el("span", { className: "long", textContent: long }), el("span", { className: "short", textContent: short })),
    el("td", { className: "actions" },
      ready ? button("Restore", "restore", () => restoreSnapshot(snap), `copy it back to ${snap.path} (what is there goes to the trash)`) : "",
      ready ? button("Restore to…", "restore-to", () => restoreSnapshotTo(snap), "copy it to another path") : "",
      button("Delete", "purge danger", () => removeSnapshot(snap), "remove it for good")),
  );
  return tr;
}

async function makeSnapshot() {
  const name = (await ask(`Snapshot ${state.cwd} as (a name, or empty for the time):`, ""))?.trim();
  if (name === undefined) return;
  const answer = await Api.json("POST", "/v1/snapshots", { json: { path: state.cwd, ...(name ? { name } : {}) } });
  let snap = answer.snapshot;
  if (answer.job) {  // a large tree: its moment is taken, a job copies the rest (writes go on)
    note(`snapshot ${snap.name} of ${snap.path}: being made…`);
    await followed(answer.job);
    snap = (await Api.json("GET", "/v1/snapshots")).snapshots.find((s) => s.name === snap.name) ?? snap;
  }
  note(`snapshot ${snap.name} of ${snap.path}: ${snap.files} file(s)`);
  if (!$("#snapshots").hidden) await loadSnapshots();
}

// A tree job's answer (a large snapshot made or restored) followed to its end; others as they are.
async function followed(answer) {
  let status = answer;
  while (status.job && status.state === "running") {
    status = await Api.json("GET", "/v1/tree-jobs", { params: { id: status.job, wait: 20 } });
  }
  if (status.job && status.state !== "succeeded") throw new Error(`${status.op} ${status.dst}: ${status.state} ${JSON.stringify(status.error ?? "")}`);
  return status;
}

async function restoreSnapshot(snap) {
  if ((await ask(`Restore ${snap.path} as it was in ${snap.name}? What is there now goes to the trash.`)) === null) return;
  await followed(await Api.json("POST", `/v1/snapshots/${encodeURIComponent(snap.name)}/restore`, { json: { replace: true } }));
  note(`restored ${snap.path} from ${snap.name}`);
}

async function restoreSnapshotTo(snap) {
  const to = (await ask(`Restore ${snap.name} at the path:`, `${snap.path === "/" ? "" : snap.path}.${snap.name}`))?.trim();
  if (!to) return;
  const dest = "/" + to.split("/").filter(Boolean).join("/");
  await followed(await Api.json("POST", `/v1/snapshots/${encodeURIComponent(snap.name)}/restore`, { json: { to: dest } }));
  note(`restored ${snap.name} at ${dest}`);
}

async function removeSnapshot(snap) {
  if ((await ask(`Remove snapshot ${snap.name} of ${snap.path} for good?`)) === null) return;
  await Api.json("DELETE", `/v1/snapshots/${encodeURIComponent(snap.name)}`);
  await loadSnapshots();
  note(`removed snapshot ${snap.name}`);
}

function startSnapshots() {
  $("#snapshots-open").onclick = () => guarded(openSnapshots);
  $("#snapshots-make").onclick = () => guarded(makeSnapshot);
  $("#snapshots-back").onclick = () => guarded(closeSnapshots);
  $("#snapshots-reload").onclick = () => guarded(loadSnapshots);
  $("#trash-open").addEventListener("click", () => {  // the trash view replaces this one
    $("#snapshots").hidden = true;
    $("#browser").classList.remove("in-snapshots");
  });
}
