// Turning OpenClaw hook payloads into clawmem events: the versioned envelope
// of schemas.HookEvent around an event body of the kind's schema
// (schemas/jsonschema/*.json), with messages reduced to what clawmem reads.
import { deriveMsgId } from "./msgid.js";

/** Kinds as clawmem spells them (subject tokens; command:new is command_new). */
export type EventKind = "agent_end" | "before_reset" | "before_compaction" | "session_end" | "command_new" | "command_reset";

/** schemas.MaxEventBytes: the EVENTS stream refuses larger messages. */
export const MAX_EVENT_BYTES = 4 << 20;

/** A message as schemas.Message decodes it. */
export interface WireMessage {
  role: string;
  content: string | Array<{ type: "text"; text: string }>;
  timestamp?: number;
  id?: string;
}

/** The hook context that travels in the envelope beside the event. */
export interface EventMeta {
  sessionKey?: string;
  sessionId?: string;
  runId?: string;
  channelId?: string;
  ts: number;
}

/** One event ready to publish: subject, Msg-Id and body bytes. */
export interface OutgoingEvent {
  kind: EventKind;
  agent: string;
  subject: string;
  msgId: string;
  data: Uint8Array;
}

const encoder = new TextEncoder();

/**
 * Keeps a message's role, its text blocks, and integer timestamp and string
 * id. Images and tool payloads carry no memory and can be megabytes; other
 * roles (toolResult, custom) keep their place in the list with empty content,
 * since clawmem's capture cursor counts messages.
 */
export function slimMessage(m: unknown): WireMessage {
  const o = (m && typeof m === "object" ? m : {}) as Record<string, unknown>;
  const role = typeof o.role === "string" ? o.role : "unknown";
  let content: WireMessage["content"] = "";
  if (role === "user" || role === "assistant") {
    if (typeof o.content === "string") {
      content = o.content;
    } else if (Array.isArray(o.content)) {
      content = o.content
        .filter((b): b is { type: "text"; text: string } =>
          !!b && typeof b === "object" && (b as { type?: unknown }).type === "text" && typeof (b as { text?: unknown }).text === "string")
        .map((b) => ({ type: "text" as const, text: b.text }));
    }
  }
  const out: WireMessage = { role, content };
  if (Number.isSafeInteger(o.timestamp)) out.timestamp = o.timestamp as number;
  if (typeof o.id === "string" && o.id !== "") out.id = o.id;
  return out;
}

export function slimMessages(ms: unknown): WireMessage[] | undefined {
  return Array.isArray(ms) ? ms.map(slimMessage) : undefined;
}

function optString(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Drops undefined fields, so bodies carry only what the hook gave. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function agentEndBody(e: { messages?: unknown; success?: unknown; error?: unknown; durationMs?: unknown }) {
  return compact({
    messages: slimMessages(e.messages) ?? [],
    success: e.success === true,
    error: typeof e.error === "string" ? e.error : e.error instanceof Error ? e.error.message : undefined,
    durationMs: Number.isSafeInteger(e.durationMs) ? (e.durationMs as number) : undefined,
  });
}

/** schemas.SessionEvent: command_new, command_reset, before_reset, before_compaction, session_end. */
export function sessionBody(e: {
  sessionId?: unknown; sessionFile?: unknown; messages?: unknown; messageCount?: unknown; reason?: unknown; nextSessionId?: unknown;
}) {
  return compact({
    sessionId: optString(e.sessionId),
    sessionFile: optString(e.sessionFile),
    messages: slimMessages(e.messages),
    messageCount: Number.isSafeInteger(e.messageCount) ? (e.messageCount as number) : undefined,
    reason: optString(e.reason),
    nextSessionId: optString(e.nextSessionId),
  });
}

/**
 * Where an agent hands in a hook event: a request that clawmem's ingest
 * checks (the envelope names this agent and kind, the Msg-Id is in the
 * agent's own namespace) and persists. Agents never write the events
 * stream themselves, so one agent cannot suppress another's events.
 */
export function hookSubject(kind: EventKind, agent: string): string {
  return `clawmem.hooks.v1.${agent}.${kind}`;
}

/**
 * Wraps body in the envelope and derives its Msg-Id. A body whose envelope
 * is over the stream's limit loses the text of its oldest messages (never
 * their count, which the capture cursor relies on): those were seen by the
 * earlier turns' events already. Returns undefined when even that cannot
 * make it fit.
 */
export function buildEvent(kind: EventKind, agent: string, body: { messages?: WireMessage[] }, meta: EventMeta): OutgoingEvent | undefined {
  const envelope = (b: unknown) => JSON.stringify(compact({
    v: 1, kind, agentId: agent, sessionKey: meta.sessionKey, sessionId: meta.sessionId, runId: meta.runId,
    channelId: meta.channelId, ts: meta.ts, event: b,
  }));
  let json = envelope(body);
  if (Buffer.byteLength(json) > MAX_EVENT_BYTES && body.messages) {
    const messages = body.messages.map((m) => ({ ...m }));
    body = { ...body, messages };
    for (let i = 0; i < messages.length - 1 && Buffer.byteLength(json) > MAX_EVENT_BYTES; i++) {
      messages[i].content = "";
      if (i % 64 === 63 || i === messages.length - 2) json = envelope(body);
    }
  }
  if (Buffer.byteLength(json) > MAX_EVENT_BYTES) return undefined;
  const msgId = deriveMsgId(kind, agent, body, meta, body.messages?.length ?? 0);
  return { kind, agent, subject: hookSubject(kind, agent), msgId, data: encoder.encode(json) };
}
