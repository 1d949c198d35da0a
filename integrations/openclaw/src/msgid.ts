// Nats-Msg-Id derivation, mirroring producers.deriveMsgID in the Go code, so
// that an event published here and the same event posted to clawmem's HTTP
// ingest (or piped to `clawmem publish`) are one event to JetStream's
// duplicate window. The test suite checks the two agree.
import { createHash } from "node:crypto";

export interface MsgIdMeta {
  sessionKey?: string;
  sessionId?: string;
  runId?: string;
  /** The hook's own time in Unix ms (never the time of a retry). */
  ts: number;
}

/**
 * agent_end carries the whole history, so (session, run, message count)
 * identifies it; other kinds use (session key, session id, run, timestamp).
 * Where the hook gave no session or run, a hash of the canonical event body
 * joins them, as in Go.
 */
export function deriveMsgId(kind: string, agent: string, event: unknown, meta: MsgIdMeta, messageCount: number): string {
  const h = createHash("sha256");
  const field = (s: string) => {
    const b = Buffer.from(s, "utf8");
    const n = Buffer.alloc(8);
    n.writeBigUInt64BE(BigInt(b.length));
    h.update(n);
    h.update(b);
  };
  field(kind);
  field(agent);
  const noContext = !meta.sessionKey && !meta.sessionId && !meta.runId;
  if (kind === "agent_end") {
    field(meta.sessionKey || meta.sessionId || "");
    field(meta.runId ?? "");
    field(String(messageCount));
    if (noContext) field(canonicalHash(event));
  } else {
    field(meta.sessionKey ?? "");
    field(meta.sessionId ?? "");
    field(meta.runId ?? "");
    field(String(meta.ts));
    if (noContext || meta.ts === 0) field(canonicalHash(event));
  }
  return `${kind}.${agent}.${h.digest("hex").slice(0, 32)}`;
}

/**
 * SHA-256 (hex) of value encoded as Go's encoding/json encodes a decoded
 * JSON value with SetEscapeHTML(false): object keys sorted by their UTF-8
 * bytes, no whitespace, a trailing newline. Numbers keep the literal
 * JSON.stringify sends, which Go (decoding with UseNumber) keeps too.
 */
export function canonicalHash(value: unknown): string {
  return createHash("sha256").update(canonicalJSON(JSON.parse(JSON.stringify(value))) + "\n", "utf8").digest("hex");
}

function canonicalJSON(v: unknown): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return goString(v);
    case "number":
    case "boolean":
      return JSON.stringify(v);
    case "object": {
      if (Array.isArray(v)) return "[" + v.map(canonicalJSON).join(",") + "]";
      const keys = Object.keys(v as object).sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
      return "{" + keys.map((k) => goString(k) + ":" + canonicalJSON((v as Record<string, unknown>)[k])).join(",") + "}";
    }
  }
  throw new TypeError(`not a JSON value: ${typeof v}`);
}

const GO_ESCAPES: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * A string as Go writes it: JSON.stringify's escapes plus \u2028 and \u2029;
 * a lone surrogate, which reaches Go as invalid text, becomes U+FFFD there.
 */
function goString(s: string): string {
  let out = '"';
  for (const ch of s.toWellFormed()) {
    const c = ch.codePointAt(0)!;
    if (GO_ESCAPES[ch] !== undefined) out += GO_ESCAPES[ch];
    else if (c < 0x20 || c === 0x2028 || c === 0x2029) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}
