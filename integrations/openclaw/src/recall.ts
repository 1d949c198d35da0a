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

export interface RecallOptions {
  timeoutMs: number;
  maxChars: number;
}

/** Returns the block to prepend, or undefined; never throws, never runs past timeoutMs. */
export async function recallContext(link: Link, agent: string, prompt: string, opts: RecallOptions): Promise<string | undefined> {
  const started = Date.now();
  const work = (async () => {
    if (!(await link.settled(Math.min(FIRST_CONNECT_GRACE_MS, opts.timeoutMs)))) return undefined;
    // The service's deadline counts from when it receives the request.
    const left = opts.timeoutMs - (Date.now() - started);
    const budget = Math.max(50, left - REPLY_MARGIN_MS);
    const res = await request(link, agent, "context", { prompt: prompt.slice(0, MAX_PROMPT_CHARS), timeoutMs: budget }, { timeoutMs: left, connectWaitMs: 0 });
    if (res.isError) return undefined;
    const block = (res.details as { prependContext?: unknown } | undefined)?.prependContext;
    if (typeof block !== "string" || block === "") return undefined;
    return fitBlock(block, opts.maxChars) || undefined;
  })().catch(() => undefined);
  return within(opts.timeoutMs - (Date.now() - started), work, undefined);
}
