// Auto-recall: the prompt goes to clawmem's context endpoint, whose answer
// (details.prependContext, the <relevant-memories> block) is what
// before_prompt_build returns. The whole hook ends by its deadline; while
// clawmem is not connected (or no service answers) it returns nothing at
// once, and on timeout or any error it returns nothing: the turn goes on
// without memories.
import { within, type Link } from "./link.js";
import { FIRST_CONNECT_GRACE_MS, request } from "./service.js";

/** Prompts beyond this are cut: clawmem embeds only the first 8 KB anyway. */
const MAX_PROMPT_CHARS = 64 * 1024;
/** Time kept back from the service's budget for the reply's trip back. */
const REPLY_MARGIN_MS = 150;

/**
 * Cuts a <relevant-memories> block to at most max characters by dropping
 * memory lines ("- [...] ...") from the end, never cutting a line, so the
 * block stays well-formed. A block with no memory line left is "".
 */
export function fitBlock(block: string, max: number): string {
  if (block.length <= max) return block;
  const lines = block.split("\n");
  while (lines.join("\n").length > max) {
    let last = -1;
    lines.forEach((l, i) => {
      if (l.startsWith("- ")) last = i;
    });
    if (last < 0) return "";
    lines.splice(last, 1);
  }
  return lines.some((l) => l.startsWith("- ")) ? lines.join("\n") : "";
}

/** Sessions whose injections are remembered; the least recently recalled go first. */
export const RECENT_SESSIONS = 256;
/** Turns of a session whose injected memories are not repeated. */
export const RECENT_TURNS = 5;
/** Ids sent as exclude at most: clawmem's limit. */
export const MAX_EXCLUDE = 64;

/**
 * The memories auto-recall injected in each session's last RECENT_TURNS
 * turns, for clawmem to leave out of the next blocks (the request's
 * exclude) unless the prompt asks about them again. Bounded: RECENT_SESSIONS
 * sessions, MAX_EXCLUDE ids each.
 */
export class RecentInjections {
  #sessions = new Map<string, string[][]>();

  constructor(
    readonly maxSessions = RECENT_SESSIONS,
    readonly turns = RECENT_TURNS,
  ) {}

  /** The ids to exclude in session's next turn, newest first. */
  exclude(session: string): string[] {
    const turns = this.#sessions.get(session) ?? [];
    return [...new Set(turns.toReversed().flat())].slice(0, MAX_EXCLUDE);
  }

  /** Records the ids one turn of session injected (none is a turn too). */
  record(session: string, ids: string[]): void {
    const turns = this.#sessions.get(session) ?? [];
    this.#sessions.delete(session);
    this.#sessions.set(session, [...turns, ids].slice(-this.turns));
    for (const old of this.#sessions.keys()) {
      if (this.#sessions.size <= this.maxSessions) break;
      this.#sessions.delete(old);
    }
  }
}

/** Memory lines ("- [...] ...") in a block. */
function memoryLines(block: string): number {
  return block.split("\n").filter((l) => l.startsWith("- ")).length;
}

function ids(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

export interface RecallOptions {
  timeoutMs: number;
  maxChars: number;
  /** Sent as tokenBudget when positive. */
  tokenBudget?: number;
  /** The session's injections: sent as exclude, and this turn's recorded. */
  recent?: { injections: RecentInjections; session: string };
}

/** Returns the block to prepend, or undefined; never throws, never runs past timeoutMs. */
export async function recallContext(link: Link, agent: string, prompt: string, opts: RecallOptions): Promise<string | undefined> {
  const started = Date.now();
  const work = (async () => {
    if (!(await link.settled(Math.min(FIRST_CONNECT_GRACE_MS, opts.timeoutMs)))) return undefined;
    // The service's deadline counts from when it receives the request.
    const left = opts.timeoutMs - (Date.now() - started);
    const budget = Math.max(50, left - REPLY_MARGIN_MS);
    const body: Record<string, unknown> = { prompt: prompt.slice(0, MAX_PROMPT_CHARS), timeoutMs: budget };
    if (opts.tokenBudget) body.tokenBudget = opts.tokenBudget;
    const recent = opts.recent;
    const exclude = recent?.injections.exclude(recent.session) ?? [];
    if (exclude.length > 0) body.exclude = exclude;
    const res = await request(link, agent, "context", body, { timeoutMs: left, connectWaitMs: 0 });
    if (res.isError) return undefined;
    const details = res.details as { prependContext?: unknown; memoryIds?: unknown } | undefined;
    const block = typeof details?.prependContext === "string" ? details.prependContext : "";
    const fitted = fitBlock(block, opts.maxChars);
    // The recalled memories' lines follow the core facts' in memoryIds'
    // order, so the lines fitBlock dropped from the end are the last ids.
    // A reply past the deadline injected nothing.
    const recalled = ids(details?.memoryIds);
    const injected = recalled.slice(0, Math.max(0, recalled.length - (memoryLines(block) - memoryLines(fitted))));
    if (Date.now() - started < opts.timeoutMs) recent?.injections.record(recent.session, injected);
    return fitted || undefined;
  })().catch(() => undefined);
  return within(opts.timeoutMs - (Date.now() - started), work, undefined);
}
