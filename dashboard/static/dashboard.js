// fastsse dashboard: reads the documented read API and draws the panels.  The URL holds the
// whole view (window, filters, selection, open retry chain), so that a link shows the same;
// the panels refresh every few seconds without reloading the page.
"use strict";

const REFRESH_MS = 5000;
const WINDOWS = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 };
// the protocols fastsse knows, as the service puts them in the page (data-protocols)
const PROTOCOLS = document.body.dataset.protocols.split(" ");
// The read API keeps the busiest gateways and tools and folds the others into this one name,
// which no real gateway or tool has (the page says how many it holds).
const FOLDED = document.body.dataset.folded;
const MATRIX_TOP = 25;   // tools with a row of their own in the matrix, the fallbacks, the retries
const LIST_TOP = 100;    // gateways offered in the filter's list
const VIEW_KEYS = ["window", "since", "until", "gateway", "tool", "protocol", "by", "request"];

let categories = [];   // [{category, message, retryable}] in the verdict's order
let paused = false;
let busy = false;
let again = false;

// ---------------------------------------------------------------------------- the view
function readView() {
  const params = new URLSearchParams(location.search);
  const view = { window: "24h", by: "tool" };
  for (const key of VIEW_KEYS) {
    if (params.get(key)) view[key] = params.get(key);
  }
  if (!(view.window in WINDOWS) && view.window !== "custom") view.window = "24h";
  return view;
}

function writeView(view) {
  const params = new URLSearchParams();
  for (const key of VIEW_KEYS) {
    if (!view[key]) continue;
    if ((key === "since" || key === "until") && view.window !== "custom") continue;
    params.set(key, view[key]);
  }
  const query = params.toString();
  history.replaceState(null, "", query ? `?${query}` : location.pathname);
}

// The span of the window, as the API takes it.
function spanParams(view) {
  if (view.window === "custom" && view.since) {
    const span = { since: `${view.since}:00Z` };
    if (view.until) span.until = `${view.until}:00Z`;
    return span;
  }
  return { window: view.window in WINDOWS ? view.window : "24h" };
}

function sinceIso(view) {  // for /v1/verdicts, which filters on ended_at
  if (view.window === "custom" && view.since) return `${view.since}:00Z`;
  const seconds = WINDOWS[view.window] || WINDOWS["24h"];
  return new Date(Date.now() - seconds * 1000).toISOString();
}

function filterParams(view, withSelection = true) {
  const out = {};
  if (view.gateway) out.gateway = view.gateway;
  if (withSelection && view.tool) out.tool = view.tool;
  if (withSelection && view.protocol) out.protocol = view.protocol;
  return out;
}

function url(path, params) {
  const query = new URLSearchParams(params).toString();
  return query ? `${path}?${query}` : path;
}

async function getJSON(path, params = {}) {
  const response = await fetch(url(path, params), { credentials: "same-origin" });
  if (response.status === 401) {
    location.href = `/signin?next=${encodeURIComponent(location.pathname + location.search)}`;
    throw new Error("signed out");
  }
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return path.endsWith(".svg") ? response.text() : response.json();
}

// ---------------------------------------------------------------------------- helpers
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "width") node.style.width = value;  // CSSOM: allowed by the page's CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(headers, rows, emptyText) {
  const head = el("tr", {}, ...headers.map(([label, cls]) => el("th", { class: cls, scope: "col", text: label })));
  const body = rows.length ? rows : [el("tr", { class: "empty" }, el("td", { colspan: headers.length, text: emptyText }))];
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

const number = (n) => n.toLocaleString("en-US");
const percent = (part, whole) => (whole ? `${(part / whole * 100).toFixed(1)} %` : "–");

function severity(silent, total) {
  if (!total) return ["none", "no traffic"];
  const rate = silent / total;
  if (rate === 0) return ["ok", "ok"];
  if (rate < 0.01) return ["low", "low"];
  if (rate < 0.05) return ["warn", "raised"];
  return ["high", "high"];
}

function timeText(iso) {  // "12-01 08:44": month, day, hour and minute, UTC
  return iso.slice(5, 16).replace("T", " ");
}

function replace(id, node) {
  const host = document.getElementById(id);
  host.replaceChildren(node);
}

// ---------------------------------------------------------------------------- panels
function sumGroups(groups) {
  const total = { total: 0, silent: 0, failed: 0, model_fallbacks: 0, by_category: {}, silent_by_category: {} };
  for (const g of groups) {
    total.total += g.total; total.silent += g.silent; total.failed += g.failed;
    total.model_fallbacks += g.model_fallbacks;
    for (const [c, n] of Object.entries(g.by_category)) total.by_category[c] = (total.by_category[c] || 0) + n;
    for (const [c, n] of Object.entries(g.silent_by_category)) total.silent_by_category[c] = (total.silent_by_category[c] || 0) + n;
  }
  return total;
}

// A tool's name as a row says it: the folded one says how many tools it holds.
function toolName(tool, folded) {
  if (tool !== FOLDED) return tool;
  const n = (folded && folded.tool) || 0;
  return `${number(n)} other tool${n === 1 ? "" : "s"}`;
}

function busiestFirst(names, totalOf) {  // the folded one last, whatever its total
  return names.sort((a, b) => (a === FOLDED) - (b === FOLDED) || totalOf(b) - totalOf(a) || a.localeCompare(b));
}

function drawMatrix(view, groups, folded) {
  const tools = [...new Set(groups.map((g) => g.tool))];
  const byTool = (tool) => groups.filter((g) => g.tool === tool);
  busiestFirst(tools, (tool) => sumGroups(byTool(tool)).total);
  const protocols = [...new Set([...PROTOCOLS, ...groups.map((g) => g.protocol)])];

  const cell = (tool, protocol, counts) => {
    const [level, word] = severity(counts.silent, counts.total);
    if (tool === FOLDED) {  // not one tool: nothing to select
      return el("td", {}, el("span", { class: `cell folded sev-${level}` },
        el("span", { class: "rate", text: counts.total ? percent(counts.silent, counts.total) : "no traffic" }),
        counts.total ? el("span", { class: "counts", text: `${number(counts.silent)} / ${number(counts.total)}` }) : null));
    }
    const selected = view.tool === tool && (view.protocol || null) === (protocol || null);
    const label = counts.total
      ? `${tool}, ${protocol || "all protocols"}: ${percent(counts.silent, counts.total)} silent, ${counts.silent} of ${counts.total} streams, ${word}`
      : `${tool}, ${protocol || "all protocols"}: no traffic`;
    return el("td", {}, el("button", {
      type: "button", class: `cell sev-${level}`, "aria-pressed": selected ? "true" : "false",
      "aria-label": label, "data-tool": tool, "data-protocol": protocol || "",
      onclick: () => select(tool, protocol),
    },
    counts.total ? el("span", { class: "sevword", text: word }) : null,
    el("span", { class: "rate", text: counts.total ? percent(counts.silent, counts.total) : "no traffic" }),
    counts.total ? el("span", { class: "counts", text: `${number(counts.silent)} / ${number(counts.total)}` }) : null));
  };

  const header = el("tr", {}, el("th", { scope: "col", text: "tool \\ protocol" }),
    ...protocols.map((p) => el("th", { scope: "col", text: p })),
    el("th", { scope: "col", text: "all protocols" }));
  const rows = tools.map((tool) => {
    const own = byTool(tool);
    return el("tr", { class: tool === FOLDED ? "folded" : null }, el("th", { scope: "row", text: toolName(tool, folded) }),
      ...protocols.map((p) => cell(tool, p, sumGroups(own.filter((g) => g.protocol === p)))),
      cell(tool, null, sumGroups(own)));
  });
  // the keyboard stays on its cell through a redraw (a selection, or the next refresh)
  const focused = document.activeElement && document.activeElement.classList.contains("cell")
    ? [document.activeElement.dataset.tool, document.activeElement.dataset.protocol] : null;
  replace("matrix", rows.length
    ? el("table", { class: "matrix" }, el("thead", {}, header), el("tbody", {}, ...rows))
    : el("p", { class: "explain", text: "No streams in this window." }));
  if (focused) {
    const again = document.querySelector(`.cell[data-tool="${CSS.escape(focused[0])}"][data-protocol="${CSS.escape(focused[1])}"]`);
    if (again) again.focus();
  }
}

function drawCategories(view, groups) {
  const chosen = groups.filter((g) => (!view.tool || g.tool === view.tool) && (!view.protocol || g.protocol === view.protocol));
  const counts = sumGroups(chosen);
  const failures = counts.failed;
  const rows = categories.filter((c) => c.category !== "complete" && counts.by_category[c.category])
    .map((c) => {
      const n = counts.by_category[c.category];
      return el("tr", {},
        el("td", {}, el("code", { text: c.category })),
        el("td", { class: "message", text: c.message }),
        el("td", { class: "num", text: number(n) }),
        el("td", { class: "num" }, el("span", { class: "bar", width: `${Math.round(n / failures * 60)}px` }), " ", percent(n, failures)),
        el("td", { class: "num", text: number(counts.silent_by_category[c.category] || 0) }),
        el("td", { text: c.retryable ? "yes" : "no" }));
    });
  const summary = el("p", { class: "explain", text: counts.total
    ? `${number(counts.total)} streams: ${number(counts.by_category.complete || 0)} complete, ${number(failures)} failed, ${number(counts.silent)} of them silently (${percent(counts.silent, counts.total)}).`
    : "No streams in this window." });
  const host = document.getElementById("categories");
  host.replaceChildren(summary, table([["category"], ["what happened"], ["streams", "num"], ["of failures", "num"], ["silent", "num"], ["retryable"]], rows, "No failures."));
}

function drawRetries(groups, folded) {
  const rows = groups.map((g) => el("tr", {},
    el("th", { scope: "row", text: toolName(g.tool, folded) }),
    el("td", { class: "num", text: number(g.requests) }),
    el("td", { class: "num", text: `${number(g.first_failures)} (${percent(g.first_failures, g.requests)})` }),
    el("td", { class: "num", text: number(g.recoveries) }),
    el("td", { class: "num", text: number(g.never_recovered) }),
    el("td", { class: "num", text: number(g.retries) }),
    el("td", { class: "num", text: number(g.retries_of_final) })));
  replace("retries", table([["tool"], ["requests", "num"], ["first attempt failed", "num"], ["recovered", "num"],
    ["never recovered", "num"], ["retries", "num"], ["retries of a non-retryable failure", "num"]], rows,
  "No verdicts were posted with a request_id in this window."));
}

function drawChains(view, verdicts) {
  const rows = verdicts.map((v) => {
    const key = `${v.gateway}/${v.request_id}`;
    return el("tr", {},
      el("td", {}, el("button", { type: "button", class: "link", "aria-pressed": view.request === key ? "true" : "false",
        onclick: () => openChain(key), text: v.request_id })),
      el("td", { text: v.tool }),
      el("td", { text: `attempt ${v.attempt ?? "?"}` }),
      el("td", {}, el("code", { text: v.previous_category })),
      el("td", { text: "→" }),
      el("td", {}, el("code", { text: v.category })));
  });
  const host = document.getElementById("chains");
  host.className = "chains";
  host.replaceChildren(table([["request"], ["tool"], ["retry"], ["after"], [""], ["then"]], rows, "No retries in this window."));
}

async function drawChain(view) {
  const host = document.getElementById("chain");
  if (!view.request) { host.replaceChildren(); return; }
  const [gateway, ...rest] = view.request.split("/");
  const requestId = rest.join("/");
  let chain;
  try {
    chain = await getJSON(`/v1/requests/${encodeURIComponent(requestId)}`, { gateway });
  } catch (error) {
    host.replaceChildren(el("p", { class: "explain", text: `Request ${requestId}: ${error.message}` }));
    return;
  }
  const attempts = chain.chains.flatMap((c) => c.attempts);
  const rows = attempts.map((a) => el("tr", {},
    el("td", { text: a.attempt ?? "?" }), el("td", { class: "nowrap", text: timeText(a.ended_at) }),
    el("td", {}, el("code", { text: a.category })), el("td", { text: a.retryable ? "yes" : "no" }),
    el("td", { class: "message", text: a.message }),
    el("td", {}, el("a", { href: `/v1/verdicts/${a.id}`, text: "JSON" }))));
  host.replaceChildren(el("div", { class: "chain-detail" },
    el("strong", { text: `Request ${requestId} (${gateway}): ${attempts.length} attempts ` }),
    el("button", { type: "button", onclick: () => openChain(null), text: "close" }),
    table([["attempt"], ["ended (UTC)"], ["category"], ["retryable"], ["what happened"], ["verdict"]], rows, "")));
}

function drawFallbacks(groups, folded) {
  const tools = {};
  for (const g of groups) {
    const t = tools[g.tool] || (tools[g.tool] = { total: 0, model_fallbacks: 0 });
    t.total += g.total; t.model_fallbacks += g.model_fallbacks;
  }
  const rows = busiestFirst(Object.keys(tools), (tool) => tools[tool].total).map((tool) => [tool, tools[tool]]).map(([tool, t]) => el("tr", {},
    el("th", { scope: "row", text: toolName(tool, folded) }),
    el("td", { class: "num", text: number(t.total) }),
    el("td", { class: "num", text: number(t.model_fallbacks) }),
    el("td", { class: "num" }, el("span", { class: "bar", width: `${Math.round(t.model_fallbacks / (t.total || 1) * 80)}px` }), " ", percent(t.model_fallbacks, t.total))));
  replace("fallbacks", table([["tool"], ["streams", "num"], ["other model", "num"], ["rate", "num"]], rows, "No streams in this window."));
}

function drawIncidents(verdicts) {
  const rows = verdicts.map((v) => el("tr", {},
    el("td", { class: "nowrap", text: timeText(v.ended_at) }), el("td", { class: "nowrap", text: v.tool }),
    el("td", { text: v.protocol }),
    el("td", {}, el("code", { text: v.category })), el("td", { text: v.silent ? "silent" : "visible" }),
    el("td", { class: "message", text: v.message }),
    el("td", {}, el("a", { href: `/v1/verdicts/${v.id}`, text: "JSON" }))));
  replace("incidents", table([["ended (UTC)"], ["tool"], ["protocol"], ["category"], ["to the client"], ["what happened"], ["verdict"]], rows, "No failures in this window."));
}

// The names a filter's field offers (any other can be typed).
function fillList(id, values) {
  const list = document.getElementById(id);
  const options = [...new Set(values)].filter((v) => v !== FOLDED).sort();
  if ([...list.options].map((o) => o.value).join("\n") !== options.join("\n")) {
    list.replaceChildren(...options.map((v) => el("option", { value: v })));
  }
}

function fillSelect(id, values, current) {
  const select = document.getElementById(id);
  const options = ["", ...[...new Set([...values, ...(current ? [current] : [])])].sort()];
  const have = [...select.options].map((o) => o.value).join("\n");
  if (have !== options.join("\n")) {
    select.replaceChildren(...options.map((v) => el("option", { value: v, text: v || "all" })));
  }
  select.value = current || "";
}

// ---------------------------------------------------------------------------- refresh
async function refresh() {
  if (paused) return;
  if (busy) { again = true; return; }  // the view changed while a refresh was under way
  busy = true;
  again = false;
  const view = readView();
  const span = spanParams(view);
  const all = filterParams(view, false);
  const chosen = filterParams(view);
  try {
    const selected = view.tool || view.protocol;
    const [matrix, chosenRates, gateways, svg, retries, chains, incidents] = await Promise.all([
      getJSON("/v1/rates", { ...span, ...all, by: "tool,protocol", top: MATRIX_TOP }),
      // the selection's own counts: its tool may be one the matrix folds
      selected ? getJSON("/v1/rates", { ...span, ...chosen, by: "tool,protocol", top: MATRIX_TOP }) : null,
      getJSON("/v1/rates", { ...span, by: "gateway", top: LIST_TOP }),
      getJSON("/v1/series.svg", { ...span, ...chosen, by: view.by === "protocol" ? "protocol" : "tool" }),
      getJSON("/v1/retries", { ...span, ...chosen, by: "tool", top: MATRIX_TOP }),
      getJSON("/v1/verdicts", { since: sinceIso(view), ...chosen, retry: "true", limit: "8" }),
      getJSON("/v1/verdicts", { since: sinceIso(view), ...chosen, complete: "false", limit: "12" }),
    ]);
    const selection = chosenRates || matrix;
    fillList("gateway-names", gateways.groups.map((g) => g.gateway));
    fillList("tool-names", matrix.groups.map((g) => g.tool));
    fillSelect("protocol", [...PROTOCOLS, ...matrix.groups.map((g) => g.protocol)], view.protocol);
    drawMatrix(view, matrix.groups, matrix.folded);
    drawCategories(view, selection.groups);
    document.getElementById("selection-name").textContent = selectionName(view);
    document.getElementById("retries-scope").textContent = selectionName(view);
    document.getElementById("series").innerHTML = svg;  // our own SVG, its text escaped server-side
    drawRetries(retries.groups, retries.folded);
    drawChains(view, chains.verdicts);
    drawFallbacks(selection.groups, selection.folded);
    drawIncidents(incidents.verdicts);
    await drawChain(view);
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString("en-GB")}`;
  } catch (error) {
    document.getElementById("updated").textContent = `not updated: ${error.message}`;
  } finally {
    busy = false;
    if (again) refresh();
  }
}

function selectionName(view) {
  if (!view.tool && !view.protocol) return view.gateway ? `· gateway ${view.gateway}` : "· everything";
  return `· ${[view.tool, view.protocol].filter(Boolean).join(" on ")}${view.gateway ? ` via ${view.gateway}` : ""}`;
}

function update(changes) {
  const view = { ...readView(), ...changes };
  writeView(view);
  syncForm(view);
  refresh();
}

function select(tool, protocol) {
  const view = readView();
  const same = view.tool === tool && (view.protocol || null) === (protocol || null);
  update(same ? { tool: "", protocol: "" } : { tool, protocol: protocol || "" });
}

function openChain(key) {
  update({ request: key || "" });
}

function syncForm(view) {
  document.getElementById("window").value = view.window;
  document.getElementById("custom-span").hidden = view.window !== "custom";
  document.getElementById("since").value = view.since || "";
  document.getElementById("until").value = view.until || "";
  document.getElementById("by").value = view.by === "protocol" ? "protocol" : "tool";
  for (const id of ["gateway", "tool"]) document.getElementById(id).value = view[id] || "";
  const protocol = document.getElementById("protocol");
  if (view.protocol && ![...protocol.options].some((o) => o.value === view.protocol)) {
    protocol.append(el("option", { value: view.protocol, text: view.protocol }));
  }
  protocol.value = view.protocol || "";
}

function start() {
  const form = document.getElementById("filters");
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => {
    const name = event.target.name;
    const changes = { [name]: event.target.value.trim() };
    if (name === "window" && event.target.value === "custom" && !readView().since) {
      const from = new Date(Date.now() - 86400 * 1000).toISOString().slice(0, 16);
      changes.since = from;
      document.getElementById("since").value = from;
    }
    update(changes);
  });
  for (const id of ["gateway", "tool"]) {  // the field's clear button says "search", not "change"
    document.getElementById(id).addEventListener("search", (event) => {
      if (!event.target.value) update({ [id]: "" });
    });
  }
  document.getElementById("clear").addEventListener("click", () => update({ tool: "", protocol: "", request: "" }));
  document.getElementById("pause").addEventListener("click", (event) => {
    paused = !paused;
    event.target.setAttribute("aria-pressed", String(paused));
    event.target.textContent = paused ? "Resume" : "Pause";
    if (!paused) refresh();
  });
  document.getElementById("theme").addEventListener("click", () => {
    const dark = getComputedStyle(document.documentElement).colorScheme === "dark";
    const next = dark ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    try { localStorage.setItem("fastsse-theme", next); } catch (e) { /* private mode */ }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") update({ tool: "", protocol: "", request: "" });
  });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  syncForm(readView());
  getJSON("/v1/categories").then((answer) => { categories = answer.categories; refresh(); })
    .catch((error) => { document.getElementById("updated").textContent = `not loaded: ${error.message}`; });
  setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", start);
