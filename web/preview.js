// The preview pane: images and PDFs from a blob URL, text as its first 64 KiB. Other files say
// what they are and offer the download.
"use strict";

const TEXT_PREVIEW = 64 * 1024;
const MEDIA_LIMIT = 64 * 1024 * 1024;  // larger images and PDFs are downloaded, not previewed
const IMAGE_TYPES = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", svg: "image/svg+xml", bmp: "image/bmp", avif: "image/avif", ico: "image/x-icon" };
let previewUrl = null;

function kindOf(name) {
  const ext = name.includes(".") ? name.split(".").pop().toLowerCase() : "";
  if (IMAGE_TYPES[ext]) return ["image", IMAGE_TYPES[ext]];
  if (ext === "pdf") return ["pdf", "application/pdf"];
  return ["text", "text/plain"];
}

// Text when the bytes decode as UTF-8 and hold no NUL; the cut at 64 KiB may split a character.
function asText(bytes) {
  if (bytes.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (_) {
    try { return new TextDecoder("utf-8", { fatal: true }).decode(bytes.slice(0, -3)); } catch (_) { return null; }
  }
}

async function preview(entry) {
  const pane = $("#preview"), body = $("#preview-body");
  closePreview();
  closeHistory();  // one side pane at a time
  pane.hidden = false;
  pane.dataset.path = entry.path;
  $("#preview-title").textContent = entry.name;
  $("#preview-download").onclick = () => guarded(() => download(entry));
  body.replaceChildren(el("p", { className: "hint", textContent: "loading…" }));
  const [kind, type] = kindOf(entry.name);
  let node;
  if (kind !== "text" && entry.size <= MEDIA_LIMIT) {
    previewUrl = URL.createObjectURL(new Blob([await fileBlob(entry.path)], { type }));
    node = kind === "image"
      ? el("img", { src: previewUrl, alt: entry.name, id: "preview-image" })
      : el("iframe", { src: previewUrl, title: entry.name, id: "preview-pdf" });
  } else if (kind === "text") {
    const bytes = new Uint8Array(await (await fileBlob(entry.path, entry.size > TEXT_PREVIEW ? [0, TEXT_PREVIEW - 1] : null)).arrayBuffer());
    const text = asText(bytes);
    node = text === null
      ? el("p", { className: "hint", textContent: `${entry.name}: ${human(entry.size)} of binary data, no preview.` })
      : el("pre", { id: "preview-text", textContent: text + (entry.size > TEXT_PREVIEW ? `\n… (first ${human(TEXT_PREVIEW)} of ${human(entry.size)})` : "") });
  } else {
    node = el("p", { className: "hint", textContent: `${human(entry.size)}: too large to preview here.` });
  }
  if (pane.dataset.path === entry.path) body.replaceChildren(node);
}

function closePreview() {
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = null;
  $("#preview").hidden = true;
  $("#preview").dataset.path = "";
  $("#preview-body").replaceChildren();
}

function startPreview() {
  $("#preview-close").onclick = closePreview;
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !$("#dialog").open) closePreview(); });
}
