// The plugin's configuration (plugins.entries.clawmem.config). OpenClaw
// validates it against openclaw.plugin.json's JSON Schema before the plugin
// loads; parseConfig applies the defaults and re-checks what the code relies
// on, so a host that skips validation still gets a working plugin.
import { homedir } from "node:os";
import { isAbsolute, normalize } from "node:path";

export interface ClawmemConfig {
  /** NATS server of clawmem (`clawmem up` listens on 4244 by default). */
  natsUrl: string;
  /** A NATS .creds file, for a server with accounts (deploy/nats). */
  credentialsFile?: string;
  /** OpenClaw agent id → clawmem agent id; unmapped ids are used as they are. */
  agents: Record<string, string>;
  /** Agent for hooks and tools whose context names none; unset refuses them. */
  defaultAgent?: string;
  autoRecall: boolean;
  autoCapture: boolean;
  /** Hard deadline of auto-recall, from the hook's start to its return. */
  recallTimeoutMs: number;
  /** Upper bound on the injected <relevant-memories> block. */
  recallMaxChars: number;
  /** Token bound clawmem keeps the block within; 0: clawmem's retrieval.recallTokenBudget. */
  recallTokenBudget: number;
  enableManagementTools: boolean;
  /** Events kept while NATS is unreachable; the oldest go first. */
  bufferMaxEvents: number;
  /** Bytes of events kept (in memory and in the outbox file); the oldest go first. */
  outboxMaxBytes: number;
  /** Save undelivered events to the outbox file, delivered first on the next start. */
  persistOutbox: boolean;
  /** The plugin's own directory (outbox.jsonl); unset: <OpenClaw state dir>/plugins/clawmem. */
  stateDir?: string;
  /** Deadline of a tool or CLI request to a connected clawmem. */
  requestTimeoutMs: number;
  /** The MEMORY.md digest of each agent's memories in its workspace (src/mirror.ts). */
  mdMirror: MirrorConfig;
}

export interface MirrorConfig {
  enabled: boolean;
  /** The file, relative to the agent's workspace. */
  path: string;
  /** Memories listed, newest first. */
  maxMemories: number;
  /** Period of the check for changes made elsewhere (CLI, other gateways); 0: none. */
  refreshSeconds: number;
}

export const DEFAULTS = {
  natsUrl: "nats://127.0.0.1:4244",
  autoRecall: true,
  autoCapture: true,
  recallTimeoutMs: 1500,
  recallMaxChars: 2000,
  recallTokenBudget: 0,
  enableManagementTools: false,
  bufferMaxEvents: 1000,
  outboxMaxBytes: 8 << 20,
  persistOutbox: true,
  requestTimeoutMs: 10_000,
} as const;

/** A clawmem agent id is one NATS subject token (schemas.ValidateAgentID). */
export const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export class ConfigError extends Error {}

function int(raw: Record<string, unknown>, key: string, dflt: number, min: number, max: number): number {
  const v = raw[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`clawmem: ${key} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

function bool(raw: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "boolean") throw new ConfigError(`clawmem: ${key} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function str(raw: Record<string, unknown>, key: string): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new ConfigError(`clawmem: ${key} must be a string, got ${JSON.stringify(v)}`);
  return v;
}

/** ${VAR} in string settings is replaced from the environment, as in the seed plugin; a leading ~ is the home directory. */
function expand(s: string | undefined, key: string): string | undefined {
  if (s === undefined) return undefined;
  if (s === "~" || s.startsWith("~/")) s = homedir() + s.slice(1);
  return s.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
    const v = process.env[name];
    if (v === undefined || v === "") throw new ConfigError(`clawmem: ${key}: environment variable ${name} is not set`);
    return v;
  });
}

export function parseConfig(raw: unknown): ClawmemConfig {
  const r = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const agents: Record<string, string> = {};
  if (r.agents !== undefined && r.agents !== null) {
    if (typeof r.agents !== "object" || Array.isArray(r.agents)) {
      throw new ConfigError("clawmem: agents must map OpenClaw agent ids to clawmem agent ids");
    }
    for (const [from, to] of Object.entries(r.agents as Record<string, unknown>)) {
      if (typeof to !== "string" || !AGENT_ID.test(to)) {
        throw new ConfigError(`clawmem: agents.${from} must be a clawmem agent id (letters, digits, _ and -), got ${JSON.stringify(to)}`);
      }
      agents[from] = to;
    }
  }
  const defaultAgent = str(r, "defaultAgent");
  if (defaultAgent !== undefined && !AGENT_ID.test(defaultAgent)) {
    throw new ConfigError(`clawmem: defaultAgent ${JSON.stringify(defaultAgent)} is not a valid agent id`);
  }
  return {
    natsUrl: expand(str(r, "natsUrl"), "natsUrl") ?? DEFAULTS.natsUrl,
    credentialsFile: expand(str(r, "credentialsFile"), "credentialsFile"),
    agents,
    defaultAgent,
    autoRecall: bool(r, "autoRecall", DEFAULTS.autoRecall),
    autoCapture: bool(r, "autoCapture", DEFAULTS.autoCapture),
    recallTimeoutMs: int(r, "recallTimeoutMs", DEFAULTS.recallTimeoutMs, 100, 10_000),
    recallMaxChars: int(r, "recallMaxChars", DEFAULTS.recallMaxChars, 200, 20_000),
    recallTokenBudget: int(r, "recallTokenBudget", DEFAULTS.recallTokenBudget, 0, 32_000),
    enableManagementTools: bool(r, "enableManagementTools", DEFAULTS.enableManagementTools),
    bufferMaxEvents: int(r, "bufferMaxEvents", DEFAULTS.bufferMaxEvents, 1, 100_000),
    outboxMaxBytes: int(r, "outboxMaxBytes", DEFAULTS.outboxMaxBytes, 65_536, 1 << 30),
    persistOutbox: bool(r, "persistOutbox", DEFAULTS.persistOutbox),
    stateDir: expand(str(r, "stateDir"), "stateDir"),
    requestTimeoutMs: int(r, "requestTimeoutMs", DEFAULTS.requestTimeoutMs, 100, 120_000),
    mdMirror: parseMirror(r.mdMirror),
  };
}

const MIRROR_KEYS = new Set(["enabled", "path", "maxMemories", "refreshSeconds"]);

/**
 * mdMirror: off unless enabled; its path must stay inside the workspace
 * (relative, no ".." segment), since the mirror replaces the file there.
 */
export function parseMirror(raw: unknown): MirrorConfig {
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ConfigError(`clawmem: mdMirror must be an object, got ${JSON.stringify(raw)}`);
  const given = Object.entries(raw as Record<string, unknown>);
  for (const [k] of given) {
    if (!MIRROR_KEYS.has(k)) throw new ConfigError(`clawmem: mdMirror.${k} is not a setting (${[...MIRROR_KEYS].join(", ")})`);
  }
  // Full key names, so that errors name the setting as the user writes it.
  const r = Object.fromEntries(given.map(([k, v]) => [`mdMirror.${k}`, v]));
  const path = str(r, "mdMirror.path") ?? "MEMORY.md";
  const parts = path.split(/[\\/]/);
  if (isAbsolute(path) || /^[A-Za-z]:/.test(path) || parts.includes("..") || path.includes("\0") || parts.at(-1) === "" || parts.at(-1) === ".") {
    throw new ConfigError(`clawmem: mdMirror.path must be a file path relative to the agent's workspace, without "..", got ${JSON.stringify(path)}`);
  }
  return {
    enabled: bool(r, "mdMirror.enabled", false),
    path: normalize(path),
    maxMemories: int(r, "mdMirror.maxMemories", 100, 1, 1000),
    refreshSeconds: int(r, "mdMirror.refreshSeconds", 60, 0, 86_400),
  };
}

/**
 * The clawmem agent an OpenClaw run belongs to: its agentId (mapped), else the
 * agent named by an OpenClaw session key ("agent:<id>:..."), else the
 * configured default. Undefined means no identity: the caller refuses, since
 * clawmem never guesses whose memory to read or write.
 */
export function resolveAgent(cfg: ClawmemConfig, ctx: { agentId?: unknown; sessionKey?: unknown } | undefined): string | undefined {
  let id: string | undefined;
  if (typeof ctx?.agentId === "string" && ctx.agentId !== "") {
    id = ctx.agentId;
  } else if (typeof ctx?.sessionKey === "string") {
    id = /^agent:([^:]+):/.exec(ctx.sessionKey)?.[1];
  }
  const mapped = id === undefined ? cfg.defaultAgent : (cfg.agents[id] ?? id);
  return mapped !== undefined && AGENT_ID.test(mapped) ? mapped : undefined;
}
