// Search by name: typing filters the folder shown; "in subfolders" asks the API for everything
// below the folder (GET /v1/bundles/tree) and lists the matches with their path.
"use strict";

const DEEP_LIMIT = 200;  // matches described (one stat each); more are counted, not listed

async function search() {
  const q = $("#search").value.trim().toLowerCase();
  if (!$("#search-deep").checked || !q) return show(state.cwd);
  const mine = ++shown;
  const base = state.cwd;
  const matches = (await tree(base)).filter((e) => e.rel.split("/").pop().toLowerCase().includes(q));
  const described = await mapLimited(matches.slice(0, DEEP_LIMIT), 8, async (e) => {
    const path = join(base, e.rel);
    const stat = await Api.json("GET", "/v1/stat", { params: { path } }).catch(() => ({}));
    return { size: 0, mtime: 0, ...stat, type: e.type, path, name: e.rel };
  });
  if (mine !== shown) return;
  state.entries = described;
  render();
  note(matches.length > DEEP_LIMIT ? `${matches.length} matches below ${base}; the first ${DEEP_LIMIT} are listed` : `${matches.length} match(es) below ${base}`);
}

// fn over items, at most `limit` at a time, results in order.
async function mapLimited(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => { while (next < items.length) { const i = next++; out[i] = await fn(items[i]); } };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
