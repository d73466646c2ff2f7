// A minimal ZIP writer (STORE, no compression, no ZIP64): enough to hand several files over as
// one download without a library or a build step. Files and the archive must stay under 4 GiB.
"use strict";

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function dosTime(date) {
  const time = (date.getHours() << 11) | (date.getMinutes() << 5) | (date.getSeconds() >> 1);
  const day = ((date.getFullYear() - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate();
  return [time, day];
}

function header(size, fields) {
  const buf = new DataView(new ArrayBuffer(size));
  let at = 0;
  for (const [bytes, value] of fields) {
    if (bytes === 4) buf.setUint32(at, value, true); else buf.setUint16(at, value, true);
    at += bytes;
  }
  return new Uint8Array(buf.buffer);
}

// files: [{ name: "a/b.txt", data: Uint8Array, mtime: Date }] -> Blob (application/zip)
function makeZip(files) {
  const parts = [], central = [];
  let offset = 0;
  for (const { name, data, mtime } of files) {
    const path = new TextEncoder().encode(name);
    const [time, day] = dosTime(mtime || new Date());
    const crc = crc32(data);
    const common = [[2, 20], [2, 0x0800], [2, 0], [2, time], [2, day], [4, crc], [4, data.length], [4, data.length], [2, path.length], [2, 0]];
    const local = header(30, [[4, 0x04034b50], ...common]);
    parts.push(local, path, data);
    central.push(header(46, [[4, 0x02014b50], [2, 20], ...common, [2, 0], [2, 0], [2, 0], [4, 0], [4, offset]]), path);
    offset += local.length + path.length + data.length;
  }
  const size = central.reduce((n, b) => n + b.length, 0);
  if (offset + size > 0xffffffff) throw new Error("the zip would pass 4 GiB: download fewer files at once");
  const end = header(22, [[4, 0x06054b50], [2, 0], [2, 0], [2, files.length], [2, files.length], [4, size], [4, offset], [2, 0]]);
  return new Blob([...parts, ...central, end], { type: "application/zip" });
}
