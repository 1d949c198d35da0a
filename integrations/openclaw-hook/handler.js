// OpenClaw internal hook (see HOOK.md): forwards /new, /reset and chat
// messages to clawmem's hook ingest, falling back to `clawmem publish`.
// Plain JavaScript with no dependencies, so OpenClaw loads it as it is.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const KINDS = {
  "command:new": "command_new",
  "command:reset": "command_reset",
  "message:received": "message_received",
  "message:sent": "message_sent",
};

const POST_TIMEOUT_MS = 2000;
const PUBLISH_TIMEOUT_MS = 5000;
/** clawmem refuses events over 4 MiB; a chat message never needs that much. */
const MAX_CONTENT_CHARS = 256 * 1024;
const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

// Per-hook env from openclaw.json comes only with events that carry the
// config (command events); message events reuse what was seen last.
let configEnv = {};

function setting(name) {
  return process.env[name] || configEnv[name] || undefined;
}

function str(v) {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The clawmem agent: the event's agentId, else its session key's, else CLAWMEM_AGENT. */
function agentOf(event, ctx) {
  const id = str(ctx.agentId) ?? /^agent:([^:]+):/.exec(event.sessionKey ?? "")?.[1] ?? setting("CLAWMEM_AGENT");
  return id && AGENT_ID.test(id) ? id : undefined;
}

/** The hook body clawmem's ingest and `clawmem publish` read, or undefined to skip the event. */
export function hookBody(event) {
  const kind = KINDS[`${event?.type}:${event?.action}`];
  if (!kind) return undefined;
  const ctx = event.context && typeof event.context === "object" ? event.context : {};
  const agentId = agentOf(event, ctx);
  if (!agentId) return undefined;
  const ts = event.timestamp instanceof Date ? event.timestamp.getTime() : Number.isSafeInteger(ctx.timestamp) ? ctx.timestamp : Date.now();
  const body = { kind, ctx: { agentId, sessionKey: str(event.sessionKey) }, ts };
  if (kind === "command_new" || kind === "command_reset") {
    // The session being replaced; the chat and Gateway paths emit at different points of the reset.
    const prev = ctx.previousSessionEntry ?? ctx.sessionEntry ?? {};
    const sessionId = str(prev.sessionId);
    if (!sessionId) return undefined;
    body.ctx.sessionId = sessionId;
    body.event = { sessionId, sessionFile: str(prev.sessionFile), reason: event.action };
    return body;
  }
  const content = str(ctx.content);
  if (!content || (kind === "message_sent" && ctx.success === false)) return undefined;
  body.event = {
    role: kind === "message_received" ? "user" : "assistant",
    content: content.slice(0, MAX_CONTENT_CHARS),
    from: str(ctx.from),
  };
  // Two messages in one millisecond are still two events: name them by their message id.
  const messageId = str(ctx.messageId);
  if (messageId) {
    body.msgId = `${kind}.${agentId}.` + createHash("sha256").update(`${body.ctx.sessionKey ?? ""}\0${messageId}`).digest("hex").slice(0, 32);
  }
  return body;
}

/**
 * The ingest's bearer token: CLAWMEM_INGEST_TOKEN, else the one clawmem
 * made in its data dir (auth/ingest.token, readable by its user only).
 */
export function ingestToken() {
  const token = setting("CLAWMEM_INGEST_TOKEN");
  if (token) return token;
  const dir = setting("CLAWMEM_DATA_DIR") ?? join(homedir(), ".clawmem");
  try {
    return readFileSync(join(dir, "auth", "ingest.token"), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

async function post(kind, json) {
  const url = `${(setting("CLAWMEM_INGEST_URL") ?? "http://127.0.0.1:7433").replace(/\/+$/, "")}/v1/hooks/${kind}`;
  const headers = { "content-type": "application/json" };
  const token = ingestToken();
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method: "POST", headers, body: json, signal: AbortSignal.timeout(POST_TIMEOUT_MS) });
  if (res.status === 202) return "ok";
  // Refused for who sent it, not for what: `clawmem publish` may still
  // deliver it with the data dir's own credentials.
  if (res.status === 401) throw new Error(`ingest answered 401: no or wrong token (CLAWMEM_INGEST_TOKEN, or auth/ingest.token in the data dir)`);
  const text = (await res.text()).slice(0, 300);
  // 4xx: the event itself was refused, and `clawmem publish` would refuse it too.
  if (res.status < 500) return `refused (${res.status}): ${text}`;
  throw new Error(`ingest answered ${res.status}: ${text}`);
}

function publish(kind, json) {
  return new Promise((resolve, reject) => {
    const child = spawn(setting("CLAWMEM_BIN") ?? "clawmem", ["publish", kind], { stdio: ["pipe", "ignore", "pipe"], timeout: PUBLISH_TIMEOUT_MS });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`clawmem publish exited ${code}: ${err.trim().slice(0, 300)}`))));
    child.stdin.end(json);
  });
}

export default async function handler(event) {
  try {
    const env = event?.context?.cfg?.hooks?.internal?.entries?.clawmem?.env;
    if (env && typeof env === "object") configEnv = env;
    const body = hookBody(event);
    if (!body) return;
    const json = JSON.stringify(body);
    try {
      const result = await post(body.kind, json);
      if (result !== "ok") console.warn(`[clawmem] ${body.kind} ${result}`);
    } catch (err) {
      try {
        await publish(body.kind, json);
      } catch (err2) {
        console.warn(`[clawmem] ${body.kind} not delivered: ${err.message}; fallback: ${err2.message}`);
      }
    }
  } catch (err) {
    console.warn(`[clawmem] hook failed: ${err?.message ?? err}`);
  }
}
