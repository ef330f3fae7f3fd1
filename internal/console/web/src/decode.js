// Decoding of what the admin API's peek and get-message endpoints return: the stored entry's
// payload, which for a batch is a sequence of [u32 big-endian metadata size][SingleMessageMetadata
// protobuf][payload] (Pulsar's batch format), and the payloads by the topic's schema.

export function toHex(b) {
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

export function decodeMessage(headers, body, schema) {
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

export function decodePayload(b, schema) {
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
