// Drag and drop upload: files and whole folders dropped anywhere on the browser go to the folder
// shown. Folders are read with webkitGetAsEntry (every browser in use has it) and made via the
// API before their files are uploaded.
"use strict";

// The dropped items as { files: [{file, path}], dirs: [path] }, paths below `base`.
async function collectDrop(dataTransfer, base) {
  const files = [], dirs = [];
  // Both are taken before the first await: the items are emptied once the drop handler returns.
  const entries = [...(dataTransfer.items || [])].filter((i) => i.kind === "file").map((i) => [i.webkitGetAsEntry?.(), i.getAsFile()]);
  for (const [entry, file] of entries) {
    if (entry) await walkEntry(entry, base, files, dirs);
    else if (file) files.push({ file, path: join(base, file.name) });
  }
  if (!entries.length) for (const file of dataTransfer.files || []) files.push({ file, path: join(base, file.name) });
  return { files, dirs };
}

async function walkEntry(entry, dir, files, dirs) {
  const path = join(dir, entry.name);
  if (entry.isFile) {
    files.push({ file: await new Promise((ok, fail) => entry.file(ok, fail)), path });
    return;
  }
  dirs.push(path);
  const reader = entry.createReader();
  for (;;) {  // readEntries answers in batches (100 in Chromium) until an empty one
    const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
    if (!batch.length) break;
    for (const child of batch) await walkEntry(child, path, files, dirs);
  }
}

function startDrop() {
  const zone = $("#browser");
  let depth = 0;  // dragenter/leave fire for every child crossed
  const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
  zone.addEventListener("dragenter", (e) => { if (hasFiles(e)) { depth++; zone.classList.add("dropping"); } });
  zone.addEventListener("dragleave", () => { if (--depth <= 0) { depth = 0; zone.classList.remove("dropping"); } });
  zone.addEventListener("dragover", (e) => { if (hasFiles(e)) { e.preventDefault(); e.dataTransfer.dropEffect = "copy"; } });
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    depth = 0;
    zone.classList.remove("dropping");
    if (inTrash()) { say("Open a folder to upload into it: the trash takes no uploads."); return; }
    const base = state.cwd;
    // Entries must be read now: the DataTransfer is emptied once the handler returns.
    const collected = collectDrop(e.dataTransfer, base);
    guarded(async () => {
      const { files, dirs } = await collected;
      if (files.length || dirs.length) await uploadAll(files, dirs);
    });
  });
}
