// clawmem's query service over NATS request-reply: clawmem.v1.<agent>.<op>
// with a JSON request (schemas/service.go) and a ToolResult reply
// ({content, details, isError?}) that tools pass on unchanged.
import { errors } from "@nats-io/transport-node";
import type { Link } from "./link.js";
import type { ToolResult } from "./types.js";

export type Op = "recall" | "context" | "store" | "forget" | "update" | "list" | "stats" | "show";

/**
 * Why clawmem could not be asked: not connected (never, or the connection is
 * lost), still connecting, no service answering on NATS, too slow, or an
 * answer that is not a tool result.
 */
export type UnavailableReason = "not_connected" | "connecting" | "no_responders" | "timeout" | "bad_reply" | "not_running";

/** clawmem could not be asked. */
export class UnavailableError extends Error {
  constructor(message: string, readonly reason: UnavailableReason) {
    super(message);
  }
}

/**
 * How long a tool or auto-recall waits for the outcome of the process's very
 * first connect while it is still in flight. A local connect with credentials
 * takes 10-20 ms, but the process's first one ~75 ms (the nkey signature's
 * code warms up); a refused one fails faster. Once a connect has failed, or
 * an established connection is lost, nothing waits.
 */
export const FIRST_CONNECT_GRACE_MS = 250;

const decoder = new TextDecoder();

export function serviceSubject(agent: string, op: Op): string {
  return `clawmem.v1.${agent}.${op}`;
}

export interface RequestOptions {
  /** Deadline of the request once sent: only a connected, slow clawmem uses it. */
  timeoutMs: number;
  /** Longest wait for a first connect in flight (default FIRST_CONNECT_GRACE_MS); the CLI waits its whole timeout. */
  connectWaitMs?: number;
}

/** Reads: safe to ask twice. */
const READS: ReadonlySet<Op> = new Set<Op>(["recall", "context", "list", "stats", "show"]);

/**
 * The longest first attempt of a read: a query replica that dies with the
 * request in hand never answers, and another answers the same read asked
 * again (as the Go client does).
 */
export const READ_ATTEMPT_MS = 5000;

/**
 * Sends one request and returns the service's reply. Without a connection
 * (or with no service answering: NATS "no responders") it throws
 * UnavailableError at once; a connected clawmem gets timeoutMs to answer.
 * A read that gets no answer within half that (at most READ_ATTEMPT_MS) is
 * sent once more with the time left; a write is sent once.
 */
export async function request(link: Link, agent: string, op: Op, body: object, opts: RequestOptions): Promise<ToolResult> {
  const started = Date.now();
  const conn = await link.settled(opts.connectWaitMs ?? FIRST_CONNECT_GRACE_MS);
  if (!conn) {
    if (link.phase === "first") {
      throw new UnavailableError(`still connecting to NATS at ${link.servers}`, "connecting");
    }
    throw new UnavailableError(`not connected to NATS at ${link.servers} (is \`clawmem up\` running?)`, "not_connected");
  }
  const left = opts.timeoutMs - (Date.now() - started);
  if (left <= 0) throw new UnavailableError(`no answer to ${op} within ${opts.timeoutMs} ms`, "timeout");
  const subject = serviceSubject(agent, op);
  const payload = JSON.stringify(body);
  let data: Uint8Array;
  try {
    if (READS.has(op) && left >= 2) {
      const first = Math.min(Math.floor(left / 2), READ_ATTEMPT_MS);
      try {
        data = (await conn.nc.request(subject, payload, { timeout: first })).data;
      } catch (err) {
        if (!(err instanceof errors.TimeoutError)) throw err;
        const rest = opts.timeoutMs - (Date.now() - started);
        if (rest <= 0) throw err;
        data = (await conn.nc.request(subject, payload, { timeout: rest })).data;
      }
    } else {
      data = (await conn.nc.request(subject, payload, { timeout: left })).data;
    }
  } catch (err) {
    if (isNoResponders(err)) {
      link.noteService(false, subject);
      throw new UnavailableError(`no clawmem query service answers on NATS at ${link.servers} (no responders)`, "no_responders");
    }
    if (err instanceof errors.TimeoutError) {
      throw new UnavailableError(`clawmem did not answer ${op} within ${opts.timeoutMs} ms`, "timeout");
    }
    throw new UnavailableError(`clawmem did not answer ${op}: ${(err as Error).message}`, "not_connected");
  }
  link.noteService(true);
  return parseReply(data);
}

function isNoResponders(err: unknown): boolean {
  if (err instanceof errors.NoRespondersError) return true;
  return err instanceof errors.RequestError && err.isNoResponders();
}

function parseReply(data: Uint8Array): ToolResult {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    throw new UnavailableError("clawmem answered with something that is not JSON", "bad_reply");
  }
  const r = v as Partial<ToolResult> | null;
  if (!r || typeof r !== "object" || !Array.isArray(r.content)) {
    throw new UnavailableError("clawmem answered with something that is not a tool result", "bad_reply");
  }
  return r as ToolResult;
}

/** The tool result for a request clawmem could not answer: "clawmem unavailable", in the error shape. */
export function unavailableResult(err: unknown): ToolResult {
  const msg = `clawmem unavailable: ${err instanceof Error ? err.message : String(err)}`;
  const reason: UnavailableReason = err instanceof UnavailableError ? err.reason : "not_connected";
  return {
    content: [{ type: "text", text: `Memory is unavailable right now (${msg}). Go on without it; do not retry at once.` }],
    details: { error: msg, code: "unavailable", reason },
    isError: true,
  };
}
