// The agent tools. memory_recall, memory_store, memory_forget,
// memory_update and the management tools take the seed plugin's parameters,
// forwarded to clawmem's query service, whose reply (content, details,
// isError) is returned unchanged. memory_search and memory_get take
// memory-core's parameters and answer in its shapes (memorycore.ts).
import type { Link } from "./link.js";
import { GET_CORPORA, memoryGetTool, memorySearchTool, SEARCH_CORPORA } from "./memorycore.js";
import { request, UnavailableError, unavailableResult, type Op } from "./service.js";
import type { AgentTool, ToolResult } from "./types.js";

const CATEGORIES = ["preference", "fact", "decision", "entity", "other", "reflection"];

const scope = { type: "string", description: "Memory scope (e.g. global, agent:<id>, custom:<name>); default: every scope the agent can read" };
const category = { type: "string", enum: CATEGORIES, description: "Memory category" };

interface ToolBase {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  management?: boolean;
}

/** A tool whose arguments go to one of the query service's operations. */
export interface ForwardedTool extends ToolBase {
  op: Op;
  /** The request fields taken from the tool's arguments (the service refuses unknown ones). */
  fields: string[];
}

/** A tool answered here, from one or more requests; link is undefined while the plugin is not running in this process. */
interface ServedTool extends ToolBase {
  serve(link: Link | undefined, agent: string | undefined, params: unknown, timeoutMs: number): Promise<ToolResult>;
}

type ToolSpec = ForwardedTool | ServedTool;

export function isForwarded(t: ToolSpec): t is ForwardedTool {
  return "op" in t;
}

export const TOOL_SPECS: ToolSpec[] = [
  {
    name: "memory_recall",
    label: "Memory recall",
    description: "Search through long-term memories using hybrid retrieval (vector + keyword search). Use when you need context about user preferences, past decisions, or previously discussed topics.",
    op: "recall",
    fields: ["query", "limit", "scope", "category", "includeSuperseded"],
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["query"],
      properties: {
        query: { type: "string", description: "Search query for finding relevant memories" },
        limit: { type: "integer", minimum: 1, maximum: 20, description: "Max results to return (default: 5, max: 20)" },
        scope,
        category,
        includeSuperseded: { type: "boolean", description: "Also search facts that no longer hold (superseded or archived), e.g. for where the user lived before" },
      },
    },
  },
  {
    name: "memory_store",
    label: "Memory store",
    description: "Save important information in long-term memory. Use for preferences, facts, decisions and other notable information. When a fact changes, pass the old memory's id as supersedes: the old one is kept as history and no longer recalled.",
    op: "store",
    fields: ["text", "importance", "category", "scope", "supersedes"],
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["text"],
      properties: {
        text: { type: "string", description: "Information to remember" },
        importance: { type: "number", minimum: 0, maximum: 1, description: "Importance score 0-1 (default: 0.7)" },
        category,
        scope: { type: "string", description: "Memory scope (optional, defaults to the agent's scope)" },
        supersedes: { type: "string", description: "Id (or 8+ character prefix) of a memory this one replaces" },
      },
    },
  },
  {
    name: "memory_forget",
    label: "Memory forget",
    description: "Delete a memory by id, or search by query: a single confident match is deleted, otherwise candidates are listed with their short ids.",
    op: "forget",
    fields: ["memoryId", "query", "scope"],
    parameters: {
      type: "object",
      additionalProperties: false,
      properties: {
        memoryId: { type: "string", description: "Memory id (full UUID or an 8+ character prefix) to delete" },
        query: { type: "string", description: "Search query to find the memory to delete" },
        scope,
      },
    },
  },
  {
    name: "memory_update",
    label: "Memory update",
    description: "Update an existing memory in place (keeps its id and creation time; a changed text keeps the old one as history). memoryId may be an id, an 8+ character prefix, or a search query; several matches are listed as candidates.",
    op: "update",
    fields: ["memoryId", "text", "importance", "category", "scope"],
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["memoryId"],
      properties: {
        memoryId: { type: "string", description: "Memory id or prefix, or a search query to find the memory" },
        text: { type: "string", description: "New text (re-embedded)" },
        importance: { type: "number", minimum: 0, maximum: 1, description: "New importance score 0-1" },
        category,
        scope: { type: "string", description: "Scope to look for the memory in" },
      },
    },
  },
  {
    name: "memory_search",
    label: "Memory search",
    description: "Search long-term memory before answering about prior work, decisions, dates, people, preferences or todos. Returns ranked snippets, each with a path (clawmem/<id>.md) that memory_get reads in full. If the response says disabled or unavailable, tell the user memory could not be searched, with its warning and action.",
    serve: memorySearchTool,
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["query"],
      properties: {
        query: { type: "string", description: "What to search for" },
        maxResults: { type: "integer", minimum: 1, description: "Max results (default: 6, at most 20)" },
        minScore: { type: "number", description: "Leave out results scoring below this (0-1)" },
        corpus: { type: "string", enum: [...SEARCH_CORPORA], description: "memory (default) or all search the memories; there is no wiki, and session transcripts are not searched" },
      },
    },
  },
  {
    name: "memory_get",
    label: "Memory get",
    description: "Read a memory that memory_search found, by its path (clawmem/<id>.md): its text, then its id, category, scope and dates. from and lines pick lines; a longer memory comes back truncated, with nextFrom to continue. status=ok: read; status=not_found: no such memory for this agent; status=error: the read failed (see error and code).",
    serve: memoryGetTool,
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["path"],
      properties: {
        path: { type: "string", description: "The memory's path, as memory_search returned it" },
        from: { type: "integer", minimum: 1, description: "First line to read (default: 1)" },
        lines: { type: "integer", minimum: 1, description: "Number of lines to read (default: 120)" },
        corpus: { type: "string", enum: [...GET_CORPORA], description: "memory (default) or all read the memory; there is no wiki" },
      },
    },
  },
  {
    name: "memory_stats",
    label: "Memory stats",
    description: "Get statistics about memory usage: counts by scope and category, retrieval settings, full-text search status.",
    op: "stats",
    fields: ["scope"],
    management: true,
    parameters: { type: "object", additionalProperties: false, properties: { scope } },
  },
  {
    name: "memory_list",
    label: "Memory list",
    description: "List recent memories, newest first, optionally filtered by scope and category.",
    op: "list",
    fields: ["scope", "category", "limit", "offset", "includeSuperseded"],
    management: true,
    parameters: {
      type: "object",
      additionalProperties: false,
      properties: {
        scope,
        category,
        limit: { type: "integer", minimum: 1, maximum: 100, description: "Max memories to list (default: 20)" },
        offset: { type: "integer", minimum: 0, description: "Number of memories to skip" },
        includeSuperseded: { type: "boolean", description: "Also list facts that no longer hold (superseded or archived)" },
      },
    },
  },
];

export function toolNames(management: boolean): string[] {
  return TOOL_SPECS.filter((t) => management || !t.management).map((t) => t.name);
}

/** The fields of params that the request takes; null and undefined mean absent. */
export function requestBody(fields: string[], params: unknown): Record<string, unknown> {
  const p = (params && typeof params === "object" ? params : {}) as Record<string, unknown>;
  const body: Record<string, unknown> = {};
  for (const f of fields) {
    if (p[f] !== undefined && p[f] !== null) body[f] = p[f];
  }
  return body;
}

/**
 * Builds the tools for one agent. agent undefined (no identity) makes every
 * call an error reply (memory_search and memory_get: their "unavailable"
 * shapes): clawmem never guesses whose memory an agent touches.
 * While clawmem is not connected, or no service answers, a call returns the
 * "clawmem unavailable" error at once; only a connected, slow clawmem makes
 * it wait, up to timeoutMs.
 */
export function makeTools(link: () => Link | undefined, agent: string | undefined, management: boolean, timeoutMs: number): AgentTool[] {
  return TOOL_SPECS.filter((t) => management || !t.management).map((spec) => ({
    name: spec.name,
    label: spec.label,
    description: spec.description,
    parameters: spec.parameters,
    async execute(_toolCallId: string, params: unknown): Promise<ToolResult> {
      if (!isForwarded(spec)) return spec.serve(link(), agent, params, timeoutMs);
      if (agent === undefined) {
        const msg = "no agent identity for this run; set the plugin's defaultAgent or agents mapping";
        return { content: [{ type: "text", text: msg }], details: { error: msg, code: "no_identity" }, isError: true };
      }
      const l = link();
      if (!l) return unavailableResult(new UnavailableError("the clawmem plugin is not running in this process", "not_running"));
      try {
        return await request(l, agent, spec.op, requestBody(spec.fields, params), { timeoutMs });
      } catch (err) {
        return unavailableResult(err);
      }
    },
  }));
}
