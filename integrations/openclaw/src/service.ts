// clawmem's query service over NATS request-reply: clawmem.v1.<agent>.<op>
// with a JSON request (schemas/service.go) and a ToolResult reply
// ({content, details, isError?}) that tools pass on unchanged.
import type { Link } from "./link.js";
import type { ToolResult } from "./types.js";

export type Op = "recall" | "context" | "store" | "forget" | "update" | "list" | "stats";

/** clawmem could not be asked: not running, unreachable, or too slow. */
export class UnavailableError extends Error {}

const decoder = new TextDecoder();

export function serviceSubject(agent: string, op: Op): string {
  return `clawmem.v1.${agent}.${op}`;
}

/**
 * Sends one request and returns the service's reply. The whole call,
 * connecting included, takes at most timeoutMs; past it, or with no
 * service answering, it throws UnavailableError.
 */
export async function request(link: Link, agent: string, op: Op, body: object, timeoutMs: number): Promise<ToolResult> {
  const deadline = Date.now() + timeoutMs;
  const conn = await link.ready(timeoutMs);
  const left = deadline - Date.now();
  if (!conn || left <= 0) throw new UnavailableError("clawmem is not reachable over NATS (is `clawmem up` running?)");
  let data: Uint8Array;
  try {
    const msg = await conn.nc.request(serviceSubject(agent, op), JSON.stringify(body), { timeout: left });
    data = msg.data;
  } catch (err) {
    throw new UnavailableError(`clawmem did not answer ${op}: ${(err as Error).message}`);
  }
  return parseReply(data);
}

function parseReply(data: Uint8Array): ToolResult {
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(data));
  } catch {
    throw new UnavailableError("clawmem answered with something that is not JSON");
  }
  const r = v as Partial<ToolResult> | null;
  if (!r || typeof r !== "object" || !Array.isArray(r.content)) {
    throw new UnavailableError("clawmem answered with something that is not a tool result");
  }
  return r as ToolResult;
}

/** The tool result for a request clawmem could not answer. */
export function unavailableResult(err: unknown): ToolResult {
  const msg = err instanceof Error ? err.message : String(err);
  return { content: [{ type: "text", text: `Memory is unavailable right now: ${msg}` }], details: { error: msg, code: "unavailable" }, isError: true };
}
