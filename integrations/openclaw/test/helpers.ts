// Test helpers: a real `clawmem up` per test file, a fake of OpenClaw's plugin
// API that records registrations and calls hooks as the host does, and a
// polling helper instead of sleeps.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  AgentTool, CliContext, InternalHookEvent, PluginApi, PluginLogger, PluginService, RegistrationMode, ToolContext, ToolFactory,
} from "../src/types.js";

const here = dirname(fileURLToPath(import.meta.url));
/** The plugin package (tests run from dist/test). */
export const pluginDir = resolve(here, "..", "..");
export const repoRoot = resolve(pluginDir, "..", "..");

export function fixture<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(pluginDir, "test", "fixtures", name), "utf8")) as T;
}

/** Polls fn until it returns a truthy value, or fails after timeoutMs. */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000, intervalMs = 100): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * The clawmem binary: $CLAWMEM_BIN, else built from the repo root into a
 * temporary directory (go's build cache makes repeat builds quick).
 */
let built: string | undefined;
export function clawmemBinary(): string {
  if (process.env.CLAWMEM_BIN) return process.env.CLAWMEM_BIN;
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), "clawmem-plugin-bin-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "clawmem");
  execFileSync("go", ["build", "-o", out, "./cmd/clawmem"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  return (built = out);
}

/** A free loopback port, for a clawmem that must come back on the same address. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolvePort(port));
    });
  });
}

export interface Clawmem {
  dataDir: string;
  natsUrl: string;
  /** A gateway's credentials for every agent (`clawmem agent add plugin-tests --agents '*'`): what the plugin connects with. */
  credentialsFile: string;
  /** clawmem's own credentials, for tests that look inside the streams. */
  adminCredentials: string;
  ingestUrl: string;
  /** SIGTERM and wait for the exit (clawmem drains in-flight work). */
  stop(): Promise<void>;
  /** Starts again on the same data dir (and port). */
  restart(): Promise<void>;
  log(): string;
}

/**
 * Starts `clawmem up` on a fresh data dir with the embedded NATS on port
 * (-1: any free port), ingest on a free port and no session-file watcher.
 * Resolves once run.json names the process.
 */
export async function startClawmem(bin: string, port = -1, dataDir?: string): Promise<Clawmem> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), "clawmem-plugin-data-"));
  // autoRecallMinScore 0.3 (the seed's threshold, which these fixtures were written for): these tests check that the recall
  // block reaches the prompt; the default (0.75) is
  // calibrated for precision on months-old conversations and lets few of the local embedder's matches through.
  writeFileSync(join(dir, "config.json"), JSON.stringify({
    // No console: its fixed port would collide with a clawmem another test run on this machine started.
    nats: { port }, ingest: { addr: "127.0.0.1:0" }, watch: { enabled: false }, distill: { schedule: "off" }, ui: { listen: "off" },
    retrieval: { autoRecallMinScore: 0.3, autoRecallMinMargin: 0 },
  }));
  let child: ChildProcess | undefined;
  let output = "";
  const info = { natsUrl: "", ingestUrl: "" };
  const start = async () => {
    rmSync(join(dir, "run.json"), { force: true });
    const c = spawn(bin, ["up", "--data-dir", dir], { stdio: ["ignore", "pipe", "pipe"] });
    child = c;
    c.stdout!.on("data", (d) => (output += d));
    c.stderr!.on("data", (d) => (output += d));
    const run = await waitFor("clawmem up to write run.json", () => {
      if (c.exitCode !== null) throw new Error(`clawmem up exited with ${c.exitCode}:\n${output}`);
      const p = join(dir, "run.json");
      if (!existsSync(p)) return undefined;
      const j = JSON.parse(readFileSync(p, "utf8"));
      return j.pid === c.pid ? j : undefined;
    }, 30_000, 50);
    info.natsUrl = run.natsUrl;
    info.ingestUrl = run.ingestUrl;
    // The embedded server admits only holders of the data dir's credentials.
    execFileSync(bin, ["agent", "add", "plugin-tests", "--agents", "*", "--data-dir", dir], { stdio: "pipe" });
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM");
    const t = setTimeout(() => c.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(t);
  };
  await start();
  return {
    dataDir: dir,
    get natsUrl() { return info.natsUrl; },
    credentialsFile: join(dir, "auth", "nats", "agents", "plugin-tests.nk"),
    adminCredentials: join(dir, "auth", "nats", "clawmem.nk"),
    get ingestUrl() { return info.ingestUrl; },
    stop,
    restart: start,
    log: () => output,
  };
}

/** A temporary directory, removed when the test process exits. */
const tempDirs: string[] = [];
process.once("exit", () => {
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** A logger that keeps its lines for assertions. */
export function memoryLogger(): PluginLogger & { lines: string[] } {
  const lines: string[] = [];
  const add = (level: string) => (msg: string) => void lines.push(`${level} ${msg}`);
  return { lines, debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
}

/**
 * A fake of OpenClaw's plugin API: it records what register() registers and
 * calls hooks the way the host does (typed hooks get (event, ctx); internal
 * hooks get one event object).
 */
export class FakeApi implements PluginApi {
  readonly logger = memoryLogger();
  readonly runtime = { version: "2026.9.6" };
  readonly toolFactories: Array<{ factory: AgentTool | ToolFactory; names?: string[] }> = [];
  readonly typedHooks = new Map<string, Array<(event: any, ctx: any) => unknown>>();
  readonly internalHooks = new Map<string, Array<(event: InternalHookEvent) => unknown>>();
  readonly cli: Array<(ctx: CliContext) => void | Promise<void>> = [];
  readonly services: PluginService[] = [];
  /** What registerMemoryCapability got (OpenClaw keeps the memory slot owner's). */
  readonly memoryCapabilities: unknown[] = [];
  /** OpenClaw's configuration as the plugin sees it at registration. */
  config?: PluginApi["config"];

  /** OpenClaw's state directory as the service's start context gives it; a fresh one unless set before start(). */
  stateDir: string | undefined;

  constructor(readonly pluginConfig: Record<string, unknown>, readonly registrationMode: RegistrationMode = "full") {}

  /** Starts the registered services, as the gateway does once the plugins are loaded. */
  async start(stateDir = this.stateDir ?? tempDir("clawmem-plugin-state-")): Promise<void> {
    this.stateDir = stateDir;
    for (const s of this.services) await s.start({ stateDir });
  }

  registerTool(tool: AgentTool | ToolFactory, opts?: { names?: string[] }): void {
    this.toolFactories.push({ factory: tool, names: opts?.names });
  }

  registerHook(events: string | string[], handler: (event: InternalHookEvent) => unknown): void {
    for (const e of Array.isArray(events) ? events : [events]) {
      this.internalHooks.set(e, [...(this.internalHooks.get(e) ?? []), handler]);
    }
  }

  registerCli(registrar: (ctx: CliContext) => void | Promise<void>): void {
    this.cli.push(registrar);
  }

  registerMemoryCapability(capability: unknown): void {
    this.memoryCapabilities.push(capability);
  }

  registerService(service: PluginService): void {
    this.services.push(service);
  }

  on(name: string, handler: (event: any, ctx: any) => unknown): void {
    this.typedHooks.set(name, [...(this.typedHooks.get(name) ?? []), handler]);
  }

  /** The tools as the host builds them for one run. */
  tools(ctx: ToolContext): Map<string, AgentTool> {
    const out = new Map<string, AgentTool>();
    for (const { factory } of this.toolFactories) {
      const made = typeof factory === "function" ? factory(ctx) : factory;
      for (const t of Array.isArray(made) ? made : made ? [made] : []) out.set(t.name, t);
    }
    return out;
  }

  /** Runs a typed hook's handlers and returns the first defined result. */
  async emit(name: string, event: unknown, ctx: unknown): Promise<unknown> {
    let result: unknown;
    for (const h of this.typedHooks.get(name) ?? []) {
      const r = await h(event, ctx);
      if (result === undefined) result = r;
    }
    return result;
  }

  async emitInternal(key: string, event: InternalHookEvent): Promise<void> {
    for (const h of this.internalHooks.get(key) ?? []) await h(event);
  }

  async stop(): Promise<void> {
    for (const s of this.services) await s.stop?.({});
  }
}

/** The generated JSON Schema of a clawmem wire type (schemas/jsonschema). */
export function wireSchema(name: string): unknown {
  return JSON.parse(readFileSync(join(repoRoot, "schemas", "jsonschema", `${name}.json`), "utf8"));
}

/**
 * Checks value against the subset of JSON Schema that clawmem's generated
 * schemas use (type, properties, required, additionalProperties, items,
 * enum) and returns the violations.
 */
export function schemaErrors(schema: unknown, value: unknown, path = "$"): string[] {
  if (schema === true) return [];
  if (schema === false) return [`${path}: not allowed`];
  const s = schema as Record<string, any>;
  const errs: string[] = [];
  const typeOf = (v: unknown) => v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v;
  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    const t = typeOf(value);
    if (!types.includes(t) && !(t === "integer" && types.includes("number"))) return [`${path}: want ${types.join("|")}, got ${t}`];
  }
  if (s.enum && !s.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) errs.push(`${path}: not one of ${JSON.stringify(s.enum)}`);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    for (const k of s.required ?? []) if (!(k in o)) errs.push(`${path}: missing ${k}`);
    for (const [k, v] of Object.entries(o)) {
      if (s.properties && k in s.properties) errs.push(...schemaErrors(s.properties[k], v, `${path}.${k}`));
      else if (s.additionalProperties !== undefined) errs.push(...schemaErrors(s.additionalProperties, v, `${path}.${k}`));
    }
  }
  if (Array.isArray(value) && s.items !== undefined) value.forEach((v, i) => errs.push(...schemaErrors(s.items, v, `${path}[${i}]`)));
  return errs;
}
