// Magnetar console (built from internal/console/web/src by build.mjs; do not edit)
"use strict";
(() => {
// Decoding of what the admin API's peek and get-message endpoints return: the stored entry's
// payload, which for a batch is a sequence of [u32 big-endian metadata size][SingleMessageMetadata
// protobuf][payload] (Pulsar's batch format), and the payloads by the topic's schema.

function toHex(b) {
  const out = [];
  for (let i = 0; i < b.length; i += 16) {
    const row = Array.from(b.subarray(i, i + 16));
    out.push(i.toString(16).padStart(6, "0") + "  " + row.map((x) => x.toString(16).padStart(2, "0")).join(" ").padEnd(48) + "  " +
      row.map((x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : ".")).join(""));
  }
  return out.join("\n");
}

// Protobuf wire format reader.
class Reader {
  constructor(b) { this.b = b; this.i = 0; }
  done() { return this.i >= this.b.length; }
  varint() {
    let v = 0, mul = 1;
    for (;;) {
      if (this.i >= this.b.length) throw new Error("truncated varint");
      const x = this.b[this.i++];
      v += (x & 0x7f) * mul;
      if (x < 0x80) return v;
      mul *= 128;
    }
  }
  bytes(n) {
    if (this.i + n > this.b.length) throw new Error("truncated field");
    const out = this.b.subarray(this.i, this.i + n);
    this.i += n;
    return out;
  }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.bytes(8);
    else if (wire === 2) this.bytes(this.varint());
    else if (wire === 5) this.bytes(4);
    else throw new Error("bad wire type " + wire);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const text = (b) => utf8.decode(b);

// SingleMessageMetadata: 1 properties (KeyValue: 1 key, 2 value), 2 partition_key, 3 payload_size.
function singleMetadata(b) {
  const r = new Reader(b);
  const md = { properties: {} };
  while (!r.done()) {
    const tag = r.varint(), field = Math.floor(tag / 8), wire = tag & 7;
    if (field === 1 && wire === 2) {
      const kv = new Reader(r.bytes(r.varint()));
      let k = "", v = "";
      while (!kv.done()) {
        const t = kv.varint();
        if (t === 10) k = text(kv.bytes(kv.varint()));
        else if (t === 18) v = text(kv.bytes(kv.varint()));
        else kv.skip(t & 7);
      }
      md.properties[k] = v;
    } else if (field === 2 && wire === 2) md.key = text(r.bytes(r.varint()));
    else if (field === 3 && wire === 0) md.payloadSize = r.varint();
    else r.skip(wire);
  }
  return md;
}

function splitBatch(b, n) {
  const out = [];
  let i = 0;
  for (let k = 0; k < n; k++) {
    if (i + 4 > b.length) throw new Error("truncated batch");
    const size = ((b[i] << 24) >>> 0) + (b[i + 1] << 16) + (b[i + 2] << 8) + b[i + 3];
    i += 4;
    const md = singleMetadata(b.subarray(i, i + size));
    i += size;
    if (md.payloadSize === undefined || i + md.payloadSize > b.length) throw new Error("bad batch entry");
    out.push({ key: md.key, properties: md.properties, payload: b.subarray(i, i + md.payloadSize) });
    i += md.payloadSize;
  }
  return out;
}

function decodeMessage(headers, body, schema) {
  const n = Number(headers.get("X-Pulsar-Num-Batch-Message") || 0);
  let messages;
  try {
    messages = n > 0 ? splitBatch(body, n) : null;
  } catch (_) {
    messages = null;
  }
  if (!messages) {
    const props = {};
    headers.forEach((v, k) => { if (k.toLowerCase().startsWith("x-pulsar-property-")) props[k.slice(18)] = v; });
    messages = [{ key: headers.get("X-Pulsar-Partition-Key") || undefined, properties: props, payload: body }];
  }
  for (const m of messages) m.decoded = decodePayload(m.payload, schema);
  return { id: headers.get("X-Pulsar-Message-Id") || "", publishTime: headers.get("X-Pulsar-Publish-Time") || "", messages };
}

function decodePayload(b, schema) {
  const type = schema ? String(schema.type).toUpperCase() : "";
  try {
    if (type === "AVRO") return JSON.stringify(avro(JSON.parse(schema.data), new Reader(b)), null, 2);
    if (type === "PROTOBUF" || type === "PROTOBUF_NATIVE") return JSON.stringify(protobufFields(b), null, 2);
  } catch (e) {
    return `(${type} decoding failed: ${e.message})\n` + toHex(b);
  }
  let s;
  try { s = text(b); } catch (_) { return toHex(b); }
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (_) { return s; }
}

// protobufFields decodes the wire format without the descriptor: field numbers to values,
// length-delimited fields as nested messages when they parse as such, else text or hex.
function protobufFields(b, depth = 0) {
  const r = new Reader(b);
  const out = {};
  while (!r.done()) {
    const tag = r.varint(), field = Math.floor(tag / 8), wire = tag & 7;
    let v;
    if (wire === 0) v = r.varint();
    else if (wire === 1) v = new DataView(r.bytes(8).slice().buffer).getFloat64(0, true);
    else if (wire === 5) v = new DataView(r.bytes(4).slice().buffer).getFloat32(0, true);
    else if (wire === 2) {
      const sub = r.bytes(r.varint());
      v = undefined;
      if (depth < 8) { try { v = protobufFields(sub, depth + 1); if (!Object.keys(v).length) v = undefined; } catch (_) { v = undefined; } }
      if (v === undefined) { try { v = text(sub); } catch (_) { v = toHex(sub); } }
    } else throw new Error("bad wire type " + wire);
    out[field] = out[field] === undefined ? v : [].concat(out[field], [v]);
  }
  return out;
}

// avro decodes one value of schema s from r (Avro binary encoding).
function avro(s, r, named = {}) {
  const zz = () => { const v = r.varint(); return v % 2 === 0 ? v / 2 : -(v + 1) / 2; };
  if (typeof s === "string") {
    switch (s) {
      case "null": return null;
      case "boolean": return r.bytes(1)[0] !== 0;
      case "int": case "long": return zz();
      case "float": return new DataView(r.bytes(4).slice().buffer).getFloat32(0, true);
      case "double": return new DataView(r.bytes(8).slice().buffer).getFloat64(0, true);
      case "bytes": return toHex(r.bytes(zz()));
      case "string": return text(r.bytes(zz()));
      default:
        if (named[s]) return avro(named[s], r, named);
        throw new Error("unknown type " + s);
    }
  }
  if (Array.isArray(s)) return avro(s[zz()], r, named);
  switch (s.type) {
    case "record": case "error": {
      named[s.name] = s;
      const out = {};
      for (const f of s.fields) out[f.name] = avro(f.type, r, named);
      return out;
    }
    case "enum": named[s.name] = s; return s.symbols[zz()];
    case "fixed": named[s.name] = s; return toHex(r.bytes(s.size));
    case "array": case "map": {
      const out = s.type === "array" ? [] : {};
      for (let n = zz(); n !== 0; n = zz()) {
        if (n < 0) { n = -n; zz(); } // a negative count is followed by the block's size
        for (let i = 0; i < n; i++) {
          if (s.type === "array") out.push(avro(s.items, r, named));
          else out[text(r.bytes(zz()))] = avro(s.values, r, named);
        }
      }
      return out;
    }
    default: return avro(s.type, r, named);
  }
}

// Magnetar console: a single page over the admin REST API. Every request goes to the same
// /admin/v2 and /admin/v3 endpoints pulsar-admin uses, with the caller's token: the console
// has no data path of its own, so it can show and do exactly what the caller's role may.

const TOKEN = "magnetar.token";
const HISTORY = "magnetar.history";
const VISITED = "magnetar.namespaces"; // namespaces opened, for roles that may not list tenants
const SAMPLE_MS = 10000;
const HOUR_SAMPLES = 360;
const MAX_TOPICS = 200; // stats fetched per namespace page
const MAX_SCAN = 1000; // messages a key search reads at most

const state = { config: { readOnly: false }, superuser: false, tenantAdmin: new Set(), cluster: "", authOn: false };

// AuthError is a 401: no token, or one the broker did not accept (message: its reason).
class AuthError extends Error {}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  const token = sessionStorage.getItem(TOKEN);
  if (token) headers.Authorization = "Bearer " + token;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(opts.json);
  }
  const resp = await fetch(path, { method: opts.method || "GET", headers, body: opts.body });
  if (resp.status === 401) throw new AuthError(reasonOf(await resp.text()) || "authentication required");
  if (opts.raw) return resp;
  const text = await resp.text();
  if (!resp.ok) {
    const err = new Error(`${resp.status}: ${reasonOf(text)}`);
    err.status = resp.status;
    throw err;
  }
  return text === "" ? null : JSON.parse(text);
}

// reasonOf reads Pulsar's {"reason": ...} error body (or returns the text as it is).
function reasonOf(text) {
  try { return JSON.parse(text).reason || text; } catch (_) { return text; }
}

// forbidden tells whether an error is the broker's 403: the role may not see that.
const forbidden = (e) => !(e instanceof AuthError) && e.status === 403;

async function tryApi(path, fallback) {
  try { return await api(path); } catch (e) { if (e instanceof AuthError) throw e; return fallback; }
}

// h builds an element: h("a", {href: "#/"}, "text", child...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

const num = (n) => (n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US", { maximumFractionDigits: 2 }));
function bytes(n) {
  if (n === undefined || n === null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}
const enc = encodeURIComponent;

// can tells whether the caller may change things in tenant: not in read-only mode, and a
// superuser or an admin of that tenant. Buttons for anything else are not drawn at all.
const can = (tenant) => !state.config.readOnly && (state.superuser || state.tenantAdmin.has(tenant));

function confirmAction(title, detail, run) {
  const d = document.getElementById("dialog");
  const msg = h("p", { class: "muted" }, detail);
  const out = h("p", { class: "bad" });
  d.replaceChildren(h("div", { class: "box", role: "dialog" },
    h("h2", {}, title), msg, out,
    h("div", { class: "row" },
      h("button", { class: "danger", id: "confirm", onclick: async () => {
        try { await run(); d.hidden = true; route(); } catch (e) { out.textContent = e.message; }
      } }, "Confirm"),
      h("button", { onclick: () => { d.hidden = true; } }, "Cancel"))));
  d.hidden = false;
}

// sortableTable draws rows with clickable numeric headers.
function sortableTable(cols, rows, initial) {
  let key = initial, dir = -1;
  const table = h("table");
  function draw() {
    const sorted = [...rows];
    if (key) sorted.sort((a, b) => dir * ((a[key] ?? 0) > (b[key] ?? 0) ? 1 : (a[key] ?? 0) < (b[key] ?? 0) ? -1 : 0));
    table.replaceChildren(
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", {
        class: (c.num ? "num " : "") + (c.sort ? "sort" : ""),
        onclick: c.sort ? () => { dir = key === c.key ? -dir : -1; key = c.key; draw(); } : undefined,
      }, c.title + (key === c.key ? (dir < 0 ? " ↓" : " ↑") : ""))))),
      h("tbody", {}, sorted.map((r) => h("tr", {}, cols.map((c) => h("td", { class: c.num ? "num" : "" }, c.cell ? c.cell(r) : r[c.key]))))));
  }
  draw();
  return table;
}

// chart draws time series ([t, v] points) as polylines in an SVG.
function chart(title, series, fmt = num) {
  const W = 560, H = 160, P = 34;
  const all = series.flatMap((s) => s.points);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  const add = (tag, attrs, text) => {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    svg.append(el);
  };
  add("text", { x: 8, y: 14, "font-size": 12, fill: "#374151" }, title);
  if (all.length < 2) {
    add("text", { x: W / 2 - 90, y: H / 2, "font-size": 12, fill: "#6b7280" }, "collecting samples every 10 s…");
    return svg;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
  const vmax = Math.max(1e-9, ...all.map((p) => p[1]));
  const x = (t) => P + ((t - t0) / Math.max(1, t1 - t0)) * (W - P - 8);
  const y = (v) => H - 20 - (v / vmax) * (H - 44);
  add("line", { x1: P, y1: H - 20, x2: W - 8, y2: H - 20, stroke: "#e5e7eb" });
  add("text", { x: 4, y: 30, "font-size": 10, fill: "#6b7280" }, fmt(vmax));
  add("text", { x: P, y: H - 6, "font-size": 10, fill: "#6b7280" }, new Date(t0).toLocaleTimeString());
  add("text", { x: W - 70, y: H - 6, "font-size": 10, fill: "#6b7280" }, new Date(t1).toLocaleTimeString());
  const colors = ["#4f46e5", "#059669", "#d97706", "#dc2626"];
  series.forEach((s, i) => {
    add("polyline", { fill: "none", stroke: colors[i % colors.length], "stroke-width": 2, points: s.points.map((p) => `${x(p[0])},${y(p[1])}`).join(" ") });
    add("text", { x: W - 160 + i * 80, y: 14, "font-size": 11, fill: colors[i % colors.length] }, s.name);
  });
  return svg;
}

// The last hour of cluster-wide rates, sampled from /metrics every 10 s while a console page
// is open, kept across page changes in sessionStorage.
function history() {
  try { return JSON.parse(sessionStorage.getItem(HISTORY)) || []; } catch (_) { return []; }
}
function parseMetrics(text) {
  const sums = {};
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = line.match(/^(pulsar_[a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)/);
    if (m) sums[m[1]] = (sums[m[1]] || 0) + Number(m[3]);
  }
  return sums;
}
// labeled returns the samples of one metric with their labels.
function labeled(text, name) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name + "{")) continue;
    const m = line.match(/^[a-z_]+\{([^}]*)\}\s+([0-9.eE+-]+)/);
    if (!m) continue;
    const labels = {};
    for (const kv of m[1].matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[kv[1]] = kv[2];
    out.push({ ...labels, value: Number(m[2]) });
  }
  return out;
}

async function sample() {
  try {
    const resp = await api("/metrics", { raw: true });
    if (!resp.ok) return;
    const m = parseMetrics(await resp.text());
    const hist = history();
    hist.push([Date.now(), m.pulsar_rate_in || 0, m.pulsar_rate_out || 0, m.pulsar_throughput_in || 0, m.pulsar_msg_backlog || 0, m.pulsar_storage_size || 0]);
    sessionStorage.setItem(HISTORY, JSON.stringify(hist.slice(-HOUR_SAMPLES)));
  } catch (_) { /* next time */ }
}

// ---- pages ----

async function overview() {
  const clusters = await api("/admin/v2/clusters");
  state.cluster = clusters[0] || "";
  // Brokers, bookies and tenants are superusers' business (Pulsar's rules): other roles see
  // the cluster-wide rates and go to their namespaces.
  const all = state.superuser;
  const [brokers, leader, bookies, under, tenants] = all ? await Promise.all([
    tryApi(`/admin/v2/brokers/${enc(state.cluster)}`, []),
    tryApi("/admin/v2/brokers/leaderBroker", null),
    tryApi("/admin/v2/bookies/state", []),
    tryApi("/admin/v2/bookies/under-replicated", []),
    tryApi("/admin/v2/tenants", []),
  ]) : [[], null, [], [], []];
  const brokerRows = await Promise.all(brokers.map(async (b) => {
    const owned = await tryApi(`/admin/v2/brokers/${enc(state.cluster)}/${enc(b)}/ownedNamespaces`, null);
    return { broker: b, leader: leader && leader.brokerId === b, bundles: owned ? Object.keys(owned).length : undefined };
  }));
  const hist = history();
  const last = hist[hist.length - 1] || [];
  const pts = (i) => hist.map((s) => [s[0], s[i]]);
  return [
    h("h1", {}, `Cluster ${state.cluster}`),
    h("div", { class: "cards" },
      all ? [card("brokers", brokers.length), card("bookies", bookies.length),
        card("under-replicated ledgers", Array.isArray(under) ? under.length : "–"), card("tenants", tenants.length)] : null,
      card("msg/s in", num(last[1])), card("msg/s out", num(last[2])), card("backlog", num(last[4])), card("storage", bytes(last[5]))),
    h("h2", {}, "Rates over the last hour"),
    h("div", { class: "row" },
      chart("messages/s", [{ name: "in", points: pts(1) }, { name: "out", points: pts(2) }]),
      chart("backlog (messages)", [{ name: "backlog", points: pts(4) }])),
    all ? null : h("p", { class: "muted", id: "superusers-only" }, "Brokers, bookies and tenants are shown to superusers; ",
      h("a", { href: "#/tenants" }, "open a namespace"), " your role may read."),
    ...(all ? overviewTables(brokerRows, bookies) : []),
  ];
}

function overviewTables(brokerRows, bookies) {
  return [
    h("h2", {}, "Brokers"),
    sortableTable([
      { key: "broker", title: "broker" },
      { key: "leader", title: "load-manager leader", cell: (r) => (r.leader ? "yes" : "") },
      { key: "bundles", title: "owned bundles", num: true, cell: (r) => num(r.bundles) },
    ], brokerRows),
    h("h2", {}, "Bookies"),
    sortableTable([
      { key: "address", title: "bookie" },
      { key: "state", title: "state", cell: (r) => h("span", { class: r.state === "writable" ? "ok" : "bad" }, r.state) },
      { key: "rack", title: "rack" },
      { key: "decommissioned", title: "decommissioned", cell: (r) => (r.decommissioned ? "yes" : "") },
    ], bookies),
  ];
}
const card = (k, v) => h("div", { class: "card" }, h("div", { class: "v" }, v), h("div", { class: "k" }, k));

async function tenantsPage() {
  let tenants;
  try {
    tenants = await api("/admin/v2/tenants");
  } catch (e) {
    if (!forbidden(e)) throw e;
    return namespaceChooser();
  }
  const rows = await Promise.all(tenants.map(async (t) => ({ tenant: t, namespaces: (await tryApi(`/admin/v2/namespaces/${enc(t)}`, [])) })));
  return [
    h("h1", {}, "Tenants"),
    ...rows.map((r) => h("div", { class: "card tenant-card" },
      h("h2", { class: "flush-top" }, r.tenant, state.tenantAdmin.has(r.tenant) || state.superuser ? h("span", { class: "tag tag-after" }, "admin") : null),
      r.namespaces.length ? h("ul", {}, r.namespaces.map((ns) => h("li", {}, h("a", { href: `#/ns/${ns}` }, ns)))) : h("p", { class: "muted" }, "no namespaces"))),
  ];
}

// The namespaces this session opened (a role that may not list tenants finds its own).
function visited() {
  try { return JSON.parse(sessionStorage.getItem(VISITED)) || []; } catch (_) { return []; }
}
function remember(ns) {
  sessionStorage.setItem(VISITED, JSON.stringify([ns, ...visited().filter((n) => n !== ns)].slice(0, 20)));
}

// namespaceChooser is the tenants page of a role that may not list tenants.
function namespaceChooser() {
  const input = h("input", { id: "open-ns", placeholder: "tenant/namespace" });
  const out = h("p", { class: "bad" });
  const open = () => {
    const v = input.value.trim().replace(/^\/+|\/+$/g, "");
    if (/^[^/]+\/[^/]+$/.test(v)) location.hash = `#/ns/${v}`;
    else out.textContent = "A namespace is tenant/namespace, e.g. public/default.";
  };
  const seen = visited();
  return [
    h("h1", {}, "Namespaces"),
    h("p", { class: "muted" }, "Your role may not list tenants (superusers only): open a namespace it may read."),
    h("div", { class: "row" }, input, h("button", { class: "primary", id: "open-ns-go", onclick: open }, "Open")), out,
    seen.length ? [h("h2", {}, "Opened in this session"), h("ul", {}, seen.map((n) => h("li", {}, h("a", { href: `#/ns/${n}` }, n))))] : null,
  ];
}

async function namespacePage(tenant, ns) {
  const full = `${tenant}/${ns}`;
  const [names, partitioned, policies, retention, ttl] = await Promise.all([
    api(`/admin/v2/namespaces/${enc(tenant)}/${enc(ns)}/topics`),
    tryApi(`/admin/v2/persistent/${enc(tenant)}/${enc(ns)}/partitioned`, []),
    tryApi(`/admin/v2/namespaces/${enc(tenant)}/${enc(ns)}`, null),
    tryApi(`/admin/v2/namespaces/${enc(tenant)}/${enc(ns)}/retention`, null),
    tryApi(`/admin/v2/namespaces/${enc(tenant)}/${enc(ns)}/messageTTL`, null),
  ]);
  remember(`${tenant}/${ns}`);
  await adminOf(tenant);
  // Partitions are listed under their partitioned topic, which is what users address.
  const parents = new Set(partitioned);
  const shown = [...partitioned, ...names.filter((n) => !parents.has(n.replace(/-partition-\d+$/, "")))];
  const rows = await Promise.all(shown.slice(0, MAX_TOPICS).map(async (name) => {
    const path = topicPath(name);
    const st = await tryApi(`/admin/v2/${path}/${parents.has(name) ? "partitioned-stats" : "stats"}`, {});
    const backlog = Object.values(st.subscriptions || {}).reduce((a, s) => a + (s.msgBacklog || 0), 0);
    return { name, short: name.split("/").pop(), rateIn: st.msgRateIn, rateOut: st.msgRateOut, backlog, size: st.storageSize,
      subs: Object.keys(st.subscriptions || {}).length, partitions: parents.has(name) ? "yes" : "" };
  }));
  const tbody = h("div");
  const search = h("input", { placeholder: "search topics", id: "topic-search", oninput: () => draw() });
  function draw() {
    const q = search.value.toLowerCase();
    tbody.replaceChildren(sortableTable([
      { key: "short", title: "topic", sort: true, cell: (r) => h("a", { href: `#/topic/${topicPath(r.name)}` }, r.short) },
      { key: "partitions", title: "partitioned" },
      { key: "rateIn", title: "msg/s in", num: true, sort: true, cell: (r) => num(r.rateIn) },
      { key: "rateOut", title: "msg/s out", num: true, sort: true, cell: (r) => num(r.rateOut) },
      { key: "backlog", title: "backlog", num: true, sort: true, cell: (r) => num(r.backlog) },
      { key: "size", title: "size", num: true, sort: true, cell: (r) => bytes(r.size) },
      { key: "subs", title: "subscriptions", num: true },
    ], rows.filter((r) => r.name.toLowerCase().includes(q)), "backlog"));
  }
  draw();
  return [
    h("div", { class: "crumbs" }, h("a", { href: "#/tenants" }, "tenants"), " / ", tenant),
    h("h1", {}, `Namespace ${full}`),
    h("div", { class: "row" }, search, h("span", { class: "muted" }, `${shown.length} topics` + (shown.length > MAX_TOPICS ? `, first ${MAX_TOPICS} shown` : ""))),
    tbody,
    h("h2", {}, "Policies"),
    // Policies are the tenant's admins' to read (and to change).
    policies === null ? h("p", { class: "muted", id: "policies-hidden" }, "The namespace's policies are shown to the admins of its tenant.")
      : [policyEditor(tenant, ns, retention, ttl), h("pre", {}, JSON.stringify(policies, null, 2))],
  ];
}

function policyEditor(tenant, ns, retention, ttl) {
  const base = `/admin/v2/namespaces/${enc(tenant)}/${enc(ns)}`;
  const r = retention || {};
  const mins = h("input", { type: "number", id: "retention-minutes", value: r.retentionTimeInMinutes ?? 0, disabled: !can(tenant) });
  const mb = h("input", { type: "number", id: "retention-mb", value: r.retentionSizeInMB ?? 0, disabled: !can(tenant) });
  const ttlIn = h("input", { type: "number", id: "ttl-seconds", value: ttl ?? 0, disabled: !can(tenant) });
  const out = h("span", { class: "muted" });
  return h("div", {},
    h("div", { class: "row" }, "retention: minutes", mins, "MB", mb,
      can(tenant) ? h("button", { onclick: async () => {
        try { await api(`${base}/retention`, { method: "POST", json: { retentionTimeInMinutes: Number(mins.value), retentionSizeInMB: Number(mb.value) } }); out.textContent = "retention saved"; } catch (e) { out.textContent = e.message; }
      } }, "Save retention") : null),
    h("div", { class: "row" }, "message TTL (s)", ttlIn,
      can(tenant) ? h("button", { onclick: async () => {
        try { await api(`${base}/messageTTL`, { method: "POST", json: Number(ttlIn.value) }); out.textContent = "TTL saved"; } catch (e) { out.textContent = e.message; }
      } }, "Save TTL") : null),
    out);
}

// topicPath turns persistent://t/ns/x into persistent/t/ns/x (URL-encoded parts).
function topicPath(name) {
  const m = name.match(/^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/);
  return m ? `${m[1]}/${enc(m[2])}/${enc(m[3])}/${enc(m[4])}` : name;
}

const topicSamples = new Map(); // topic -> [[t, in, out, backlog]] while its page is open

async function topicPage(domain, tenant, ns, topic, tab = "overview") {
  await adminOf(tenant);
  const path = `${domain}/${enc(tenant)}/${enc(ns)}/${enc(topic)}`;
  const name = `${domain}://${tenant}/${ns}/${topic}`;
  const meta = await tryApi(`/admin/v2/${path}/partitions`, { partitions: 0 });
  const partitioned = meta.partitions > 0;
  const st = await api(`/admin/v2/${path}/${partitioned ? "partitioned-stats?perPartition=true" : "stats"}`);
  const backlog = Object.values(st.subscriptions || {}).reduce((a, s) => a + (s.msgBacklog || 0), 0);
  const s = topicSamples.get(name) || [];
  s.push([Date.now(), st.msgRateIn || 0, st.msgRateOut || 0, backlog]);
  topicSamples.set(name, s.slice(-HOUR_SAMPLES));
  const tabs = ["overview", "subscriptions", "messages", "storage", "producers", "schema"];
  const head = [
    h("div", { class: "crumbs" }, h("a", { href: "#/tenants" }, "tenants"), " / ", h("a", { href: `#/ns/${tenant}/${ns}` }, `${tenant}/${ns}`)),
    h("h1", {}, topic, partitioned ? h("span", { class: "tag tag-after" }, `${meta.partitions} partitions`) : null),
    h("div", { class: "tabs" }, tabs.map((t) => h("a", { class: t === tab ? "on" : "", href: `#/topic/${domain}/${tenant}/${ns}/${topic}/${t}` }, t))),
  ];
  const body = await ({
    overview: () => topicOverview(st, s, partitioned, meta, name),
    subscriptions: () => subscriptionsTab(path, tenant, st),
    messages: () => messagesTab(path, tenant, ns, topic, st),
    storage: () => storageTab(path, partitioned, meta),
    producers: () => producersTab(st),
    schema: () => schemaTab(tenant, ns, topic),
  }[tab] || (() => []))();
  return [...head, ...body];
}

function topicOverview(st, samples, partitioned, meta, name) {
  const backlog = Object.values(st.subscriptions || {}).reduce((a, s) => a + (s.msgBacklog || 0), 0);
  return [
    h("div", { class: "cards" },
      card("msg/s in", num(st.msgRateIn)), card("msg/s out", num(st.msgRateOut)),
      card("bytes/s in", bytes(st.msgThroughputIn)), card("backlog", num(backlog)),
      card("storage size", bytes(st.storageSize)), card("messages in", num(st.msgInCounter)),
      card("producers", (st.publishers || []).length), card("subscriptions", Object.keys(st.subscriptions || {}).length)),
    h("h2", {}, "Rates and backlog (sampled while this page is open)"),
    h("div", { class: "row" },
      chart("messages/s", [{ name: "in", points: samples.map((p) => [p[0], p[1]]) }, { name: "out", points: samples.map((p) => [p[0], p[2]]) }]),
      chart("backlog", [{ name: "backlog", points: samples.map((p) => [p[0], p[3]]) }])),
    partitioned ? h("div", {}, h("h2", {}, "Partitions"), sortableTable([
      { key: "p", title: "partition", cell: (r) => h("a", { href: `#/topic/${topicPath(r.p).replace(/%2F/g, "/")}` }, r.p.split("/").pop()) },
      { key: "in", title: "msg/s in", num: true, cell: (r) => num(r.in) },
      { key: "size", title: "size", num: true, cell: (r) => bytes(r.size) },
    ], Object.entries(st.partitions || {}).map(([p, ps]) => ({ p, in: ps.msgRateIn, size: ps.storageSize })))) : null,
  ];
}

function subscriptionsTab(path, tenant, st) {
  const subs = Object.entries(st.subscriptions || {}).map(([name, s]) => ({ name, ...s, consumersN: (s.consumers || []).length }));
  const base = (sub) => `/admin/v2/${path}/subscription/${enc(sub)}`;
  const actions = (r) => {
    if (!can(tenant)) return h("span", { class: "muted" }, "read only");
    const when = h("input", { type: "datetime-local", class: "reset-time", step: 1 });
    const id = h("input", { placeholder: "ledger:entry", size: 10, class: "reset-id" });
    const n = h("input", { type: "number", value: 1, min: 1, class: "skip-n narrow" });
    return h("div", {},
      h("div", { class: "row" }, when, h("button", { class: "reset-by-time", onclick: () => {
        const ms = new Date(when.value).getTime();
        if (!ms) return;
        confirmAction(`Reset ${r.name} to ${when.value}?`, "Consumers will receive every message published since then again.",
          () => api(`${base(r.name)}/resetcursor/${ms}`, { method: "POST" }));
      } }, "Reset to time")),
      h("div", { class: "row" }, id, h("button", { class: "reset-by-id", onclick: () => {
        const [l, e] = id.value.split(":").map(Number);
        if (!Number.isInteger(l) || !Number.isInteger(e)) return;
        confirmAction(`Reset ${r.name} to ${l}:${e}?`, "The subscription moves to this message id.",
          () => api(`${base(r.name)}/resetcursor`, { method: "POST", json: { ledgerId: l, entryId: e } }));
      } }, "Reset to id")),
      h("div", { class: "row" }, n, h("button", { onclick: () => confirmAction(`Skip ${n.value} messages on ${r.name}?`, "Skipped messages are acknowledged without delivery.",
        () => api(`${base(r.name)}/skip/${Number(n.value)}`, { method: "POST" })) }, "Skip"),
      h("button", { class: "danger clear-backlog", onclick: () => confirmAction(`Clear the backlog of ${r.name}?`, `All ${num(r.msgBacklog)} messages are acknowledged without delivery.`,
        () => api(`${base(r.name)}/skip_all`, { method: "POST" })) }, "Clear backlog"),
      h("button", { class: "danger delete-sub", onclick: () => confirmAction(`Delete subscription ${r.name}?`, "Its cursor and backlog are removed; this cannot be undone.",
        () => api(base(r.name), { method: "DELETE" })) }, "Delete")));
  };
  return [
    subs.length ? sortableTable([
      { key: "name", title: "subscription" },
      { key: "type", title: "type" },
      { key: "msgBacklog", title: "backlog", num: true, sort: true, cell: (r) => num(r.msgBacklog) },
      { key: "unackedMessages", title: "unacked", num: true, sort: true, cell: (r) => num(r.unackedMessages) },
      { key: "msgRateOut", title: "msg/s out", num: true, sort: true, cell: (r) => num(r.msgRateOut) },
      { key: "consumersN", title: "consumers", num: true, cell: (r) => h("div", {}, String(r.consumersN),
        (r.consumers || []).map((c) => h("div", { class: "muted" }, `${c.consumerName || "?"} ${c.address || ""} unacked ${num(c.unackedMessages)}`))) },
      { key: "actions", title: "", cell: actions },
    ], subs, "msgBacklog") : h("p", { class: "muted" }, "no subscriptions"),
  ];
}

// The message browser: peek through a subscription, find by message id or publish time, and
// search by key over at most MAX_SCAN messages with a progress bar. Payloads are decoded by
// the topic's schema (JSON, Avro, Protobuf, text) with hex always available.
async function messagesTab(path, tenant, ns, topic, st) {
  const subs = Object.keys(st.subscriptions || {});
  const schema = await tryApi(`/admin/v2/schemas/${enc(tenant)}/${enc(ns)}/${enc(topic)}/schema`, null);
  const out = h("div", { id: "messages" });
  const status = h("span", { class: "muted", id: "browse-status" });
  const progress = h("progress", { max: 1, value: 0, hidden: true, id: "scan-progress" });
  const subSel = h("select", { id: "browse-sub" }, subs.map((s) => h("option", { value: s }, s)));
  const count = h("input", { type: "number", value: 10, min: 1, max: 100, class: "narrow" });
  const idIn = h("input", { placeholder: "ledger:entry", id: "find-id" });
  const timeIn = h("input", { type: "datetime-local", step: 1, id: "find-time" });
  const keyIn = h("input", { placeholder: "key", id: "find-key" });
  const prodKey = h("input", { placeholder: "key (optional)", id: "produce-key" });
  const prodPayload = h("textarea", { placeholder: schema && schema.type !== "STRING" ? `${schema.type} payload as JSON` : "payload", id: "produce-payload", rows: 3, class: "wide" });
  const show = (msgs) => out.replaceChildren(...msgs.map((m) => messageView(m, schema)));
  const fetchAt = async (url) => {
    const resp = await api(url, { raw: true });
    if (!resp.ok) throw new Error(`${resp.status}: ${(await resp.text()).slice(0, 200)}`);
    return decodeMessage(resp.headers, new Uint8Array(await resp.arrayBuffer()), schema);
  };
  const peek = (k) => fetchAt(`/admin/v2/${path}/subscription/${enc(subSel.value)}/position/${k}`);
  const run = (f) => async () => { status.textContent = ""; try { await f(); } catch (e) { status.textContent = e.message; } };
  return [
    h("div", { class: "row" }, "subscription", subSel, count,
      h("button", { id: "peek", disabled: !subs.length, onclick: run(async () => {
        const msgs = [];
        for (let k = 1; k <= Number(count.value); k++) {
          try { msgs.push(await peek(k)); } catch (e) { if (k === 1) throw e; break; }
        }
        show(msgs);
        status.textContent = `${msgs.length} messages from the subscription's position`;
      }) }, "Peek")),
    h("div", { class: "row" }, idIn, h("button", { id: "find-by-id", onclick: run(async () => {
      const [l, e] = idIn.value.split(":").map(Number);
      show([await fetchAt(`/admin/v2/${path}/ledger/${l}/entry/${e}`)]);
    }) }, "Find by id"),
    timeIn, h("button", { id: "find-by-time", onclick: run(async () => {
      const id = await api(`/admin/v2/${path}/messageid/${new Date(timeIn.value).getTime()}`);
      show([await fetchAt(`/admin/v2/${path}/ledger/${id.ledgerId}/entry/${id.entryId}`)]);
      status.textContent = `first message at or after ${timeIn.value}: ${id.ledgerId}:${id.entryId}`;
    }) }, "Find by time")),
    h("div", { class: "row" }, keyIn, h("button", { id: "find-by-key", disabled: !subs.length, onclick: run(async () => {
      const backlog = (st.subscriptions[subSel.value] || {}).msgBacklog || 0;
      const limit = Math.min(MAX_SCAN, Math.max(1, backlog));
      progress.hidden = false;
      progress.max = limit;
      const found = [];
      for (let k = 1; k <= limit; k++) {
        let m;
        try { m = await peek(k); } catch (_) { break; }
        progress.value = k;
        status.textContent = `scanned ${k} of ${limit}`;
        for (const one of m.messages) if (one.key === keyIn.value) found.push({ ...m, messages: [one] });
      }
      show(found);
      status.textContent = `${found.length} messages with key "${keyIn.value}" in ${progress.value} scanned (at most ${MAX_SCAN})`;
    }) }, "Search by key"), progress),
    // Produce through Pulsar's REST producer (POST /topics/...), with the topic's schema.
    can(tenant) ? h("div", { class: "row" }, prodKey, prodPayload, h("button", { id: "produce", onclick: run(async () => {
      const body = { producerName: `console-${Date.now()}`, messages: [{ payload: prodPayload.value }] };
      if (prodKey.value) body.messages[0].key = prodKey.value;
      if (schema) body.valueSchema = JSON.stringify({ name: "", type: schema.type, schema: btoa(unescape(encodeURIComponent(schema.data || ""))), properties: schema.properties || {} });
      const acks = await api(`/topics/${path}`, { method: "POST", json: body });
      const r = acks.messagePublishResults[0];
      if (r.errorCode) throw new Error(r.error || `error code ${r.errorCode}`);
      status.textContent = `produced ${r.messageId}`;
    }) }, "Produce")) : null,
    status,
    h("p", { class: "muted" }, schema ? `schema: ${schema.type} v${schema.version}` : "no schema: payloads shown as text, JSON or hex"),
    out,
  ];
}

function messageView(m, schema) {
  return h("div", { class: "card message" },
    h("div", { class: "row" }, h("b", {}, m.id), h("span", { class: "muted" }, m.publishTime || "")),
    ...m.messages.map((one) => h("div", {},
      h("div", { class: "row" }, one.key !== undefined ? h("span", { class: "tag" }, `key ${one.key}`) : null,
        Object.entries(one.properties || {}).map(([k, v]) => h("span", { class: "tag" }, `${k}=${v}`))),
      h("pre", { class: "payload" }, one.decoded),
      h("details", {}, h("summary", { class: "muted" }, "hex"), h("pre", {}, toHex(one.payload))))));
}

async function storageTab(path, partitioned, meta) {
  if (partitioned) return [h("p", { class: "muted" }, `Storage is per partition: open one of the ${meta.partitions} partitions.`)];
  const s = await api(`/admin/v2/${path}/internalStats`);
  const cursors = Object.entries(s.cursors || {}).map(([name, c]) => ({ name, ...c }));
  return [
    h("div", { class: "cards" }, card("entries", num(s.numberOfEntries)), card("total size", bytes(s.totalSize)),
      card("ledgers", (s.ledgers || []).length), card("last confirmed", s.lastConfirmedEntry), card("state", s.state)),
    h("h2", {}, "Ledgers"),
    sortableTable([
      { key: "ledgerId", title: "ledger", num: true },
      { key: "entries", title: "entries", num: true, cell: (r) => num(r.entries) },
      { key: "size", title: "size", num: true, cell: (r) => bytes(r.size) },
      { key: "offloaded", title: "offloaded", cell: (r) => (r.offloaded ? "yes" : "no") },
    ], s.ledgers || []),
    h("h2", {}, "Cursors"),
    sortableTable([
      { key: "name", title: "cursor" }, { key: "markDeletePosition", title: "mark-delete" },
      { key: "readPosition", title: "read position" }, { key: "messageBacklog", title: "backlog", num: true },
    ], cursors),
  ];
}

function producersTab(st) {
  const pubs = st.publishers || [];
  return [pubs.length ? sortableTable([
    { key: "producerName", title: "producer" }, { key: "address", title: "address" },
    { key: "accessMode", title: "access mode" },
    { key: "msgRateIn", title: "msg/s", num: true, cell: (r) => num(r.msgRateIn) },
    { key: "connectedSince", title: "since" },
  ], pubs) : h("p", { class: "muted" }, "no producers connected")];
}

async function schemaTab(tenant, ns, topic) {
  const s = await tryApi(`/admin/v2/schemas/${enc(tenant)}/${enc(ns)}/${enc(topic)}/schema`, null);
  if (!s) return [h("p", { class: "muted" }, "no schema registered")];
  let def = s.data;
  try { def = JSON.stringify(JSON.parse(s.data), null, 2); } catch (_) { /* not JSON */ }
  return [h("div", { class: "cards" }, card("type", s.type), card("version", s.version)), h("pre", {}, def)];
}

// knownNamespaces are every namespace (superusers, tenant admins), else those this session
// opened.
async function knownNamespaces() {
  let tenants;
  try {
    tenants = await api("/admin/v2/tenants");
  } catch (e) {
    if (!forbidden(e)) throw e;
    return { namespaces: visited(), partial: true };
  }
  const namespaces = [];
  for (const t of tenants) namespaces.push(...await tryApi(`/admin/v2/namespaces/${enc(t)}`, []));
  return { namespaces, partial: false };
}

async function functionsPage() {
  const { namespaces, partial } = await knownNamespaces();
  const rows = [];
  for (const ns of namespaces) {
    const [tt, n] = ns.split("/");
    for (const kind of ["functions", "sources", "sinks"]) {
      const names = await tryApi(`/admin/v3/${kind}/${enc(tt)}/${enc(n)}`, null);
      for (const name of names || []) {
        const st = await tryApi(`/admin/v3/${kind}/${enc(tt)}/${enc(n)}/${enc(name)}/status`, {});
        rows.push({ kind: kind.slice(0, -1), ns, name, running: st.numRunning, instances: st.numInstances });
      }
    }
  }
  return [
    h("h1", {}, "Functions, sources and sinks"),
    partial ? h("p", { class: "muted" }, `In the namespaces opened in this session (${namespaces.join(", ") || "none yet"}): your role may not list tenants.`) : null,
    rows.length ? sortableTable([
      { key: "kind", title: "kind" }, { key: "ns", title: "namespace" }, { key: "name", title: "name" },
      { key: "running", title: "running", num: true, cell: (r) => `${num(r.running)} / ${num(r.instances)}` },
    ], rows) : h("p", { class: "muted" }, "none deployed"),
  ];
}

// Kafka consumer groups with their lag per partition, from the Kafka front end's
// pulsar_kafka_group_lag gauge (high watermark minus committed offset). A group is also a
// Pulsar subscription of the topic, so its backlog shows on the topic's page too.
async function kafkaPage() {
  const resp = await api("/metrics", { raw: true });
  const rows = resp.ok ? labeled(await resp.text(), "pulsar_kafka_group_lag") : [];
  const groups = {};
  for (const r of rows) groups[r.group] = (groups[r.group] || 0) + r.value;
  return [
    h("h1", {}, "Kafka consumer groups"),
    rows.length ? [
      sortableTable([{ key: "group", title: "group" }, { key: "lag", title: "total lag", num: true, sort: true, cell: (r) => num(r.lag) }],
        Object.entries(groups).map(([group, lag]) => ({ group, lag })), "lag"),
      h("h2", {}, "Lag per partition"),
      sortableTable([{ key: "group", title: "group" }, { key: "topic", title: "topic" }, { key: "partition", title: "partition", num: true },
        { key: "value", title: "lag", num: true, sort: true, cell: (r) => num(r.value) }], rows, "value"),
    ] : h("p", { class: "muted", id: "no-kafka-groups" }, "No Kafka consumer groups: the Kafka protocol front end is off (kafkaListeners) or no group has committed offsets."),
  ];
}

// loginPage asks for a token; error says why the last one was refused.
function loginPage(error) {
  const ta = h("textarea", { id: "token", placeholder: "eyJhbGciOi…" });
  const login = () => {
    const token = ta.value.trim().replace(/^token:/, "");
    if (!token) return;
    sessionStorage.setItem(TOKEN, token);
    start();
  };
  return [h("div", { class: "login" },
    h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "Authentication is on: paste a token (as for pulsar-admin --auth-params token:…)."),
    error ? h("p", { class: "bad", id: "login-error", role: "alert" }, `That token was not accepted: ${error}`) : null,
    ta,
    h("div", { class: "row" }, h("button", { class: "primary", id: "login", onclick: login }, "Log in")))];
}

// showLogin replaces the page with the login form; a refused token is forgotten.
function showLogin(e) {
  const refused = sessionStorage.getItem(TOKEN) ? e.message : "";
  sessionStorage.removeItem(TOKEN);
  clearInterval(sampler);
  document.getElementById("who").replaceChildren();
  document.getElementById("main").replaceChildren(...loginPage(refused));
}

// roleOf reads the subject of a JWT for display only (the broker verifies the token).
function roleOf(token) {
  try {
    const p = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof p.sub === "string" ? p.sub : "";
  } catch (_) { return ""; }
}

// ---- roles and routing ----

async function detectRole() {
  // A superuser may read the broker's configuration; a tenant's admins may read the tenant.
  // Without authentication both answer, and everything is allowed. Only superusers may list
  // tenants: other roles' admin rights are found per tenant as they open its namespaces.
  state.superuser = (await tryApi("/admin/v2/brokers/configuration", null)) !== null;
  state.tenantAdmin = new Set();
  state.tenantChecked = new Set();
  const tenants = state.superuser ? await tryApi("/admin/v2/tenants", []) : [];
  for (const t of [...tenants, ...visited().map((ns) => ns.split("/")[0])]) await adminOf(t);
  drawWho();
}

// adminOf finds out (once per tenant) whether the caller administers tenant.
async function adminOf(tenant) {
  if (!state.tenantChecked || state.tenantChecked.has(tenant)) return;
  state.tenantChecked.add(tenant);
  if (state.superuser || (await tryApi(`/admin/v2/tenants/${enc(tenant)}`, null)) !== null) {
    if (!state.tenantAdmin.has(tenant)) {
      state.tenantAdmin.add(tenant);
      drawWho();
    }
  }
}

function drawWho() {
  const token = sessionStorage.getItem(TOKEN);
  const role = token ? roleOf(token) : "";
  const rights = state.superuser ? "superuser" : state.tenantAdmin.size ? `admin of ${[...state.tenantAdmin].join(", ")}` : "no admin rights";
  document.getElementById("who").replaceChildren(
    state.config.readOnly ? h("span", { class: "tag" }, "read-only") : "",
    " ", role ? h("b", { id: "role" }, role) : "", role ? ": " : "", h("span", { id: "rights" }, rights),
    token ? " · " : "", token ? h("a", { href: "#/", id: "logout", onclick: (ev) => {
      ev.preventDefault();
      sessionStorage.removeItem(TOKEN);
      sessionStorage.removeItem(VISITED);
      window.history.replaceState(null, "", "#/"); // the next login starts at the overview (no hashchange)
      start();
    } }, "log out") : "");
}

async function route() {
  const main = document.getElementById("main");
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    let page;
    switch (parts[0]) {
      case "": page = await overview(); break;
      case "tenants": page = await tenantsPage(); break;
      case "ns": page = await namespacePage(parts[1], parts[2]); break;
      case "topic": page = await topicPage(parts[1], parts[2], parts[3], parts[4], parts[5]); break;
      case "functions": page = await functionsPage(); break;
      case "kafka": page = await kafkaPage(); break;
      default: page = [h("p", {}, "No such page.")];
    }
    // Pages are lists with optional parts (null) and nested lists.
    main.replaceChildren(...page.flat(Infinity).filter((el) => el !== null && el !== undefined && el !== false));
  } catch (e) {
    if (e instanceof AuthError) {
      showLogin(e);
      return;
    }
    main.replaceChildren(h("p", { class: "bad" }, e.message));
  }
}

let sampler;
async function start() {
  try {
    state.config = await (await fetch("/ui/config.json")).json();
  } catch (_) { /* defaults */ }
  try {
    await api("/admin/v2/clusters");
    await detectRole();
  } catch (e) {
    if (e instanceof AuthError) {
      showLogin(e);
      return;
    }
  }
  clearInterval(sampler);
  await sample();
  sampler = setInterval(sample, SAMPLE_MS);
  route();
}

window.addEventListener("hashchange", route);
start();
})();
