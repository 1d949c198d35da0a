// clawmem's OpenClaw memory plugin. It keeps no memory itself: tools and
// auto-recall ask clawmem's query service over NATS request-reply, and the
// conversation hooks publish events to clawmem's JetStream EVENTS stream,
// where clawmem's workers capture and distil them.
//
// register() runs several times per process (discovery, CLI metadata, the
// live runtime). Only the "full" registration creates the NATS link (see
// runtime.ts); it connects when the gateway starts the plugin's service (or
// on first use), and hooks and tools of every registration use it when they
// run. The service's start also gives the event outbox its file in the
// plugin's state directory, and its stop saves what is undelivered there.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { memoryCapability } from "./capability.js";
import { CLI_DESCRIPTOR, registerCommands } from "./cli.js";
import { parseConfig, resolveAgent, type ClawmemConfig } from "./config.js";
import { agentEndBody, sessionBody, type EventMeta } from "./events.js";
import { recallContext } from "./recall.js";
import { processRuntimes, type Runtime, type Runtimes } from "./runtime.js";
import { makeTools, TOOL_SPECS, toolNames } from "./tools.js";
import type {
  AgentEndEvent, AgentHookContext, BeforeCompactionEvent, BeforeResetEvent, InternalHookEvent, PluginApi, PluginServiceContext, PromptBuildEvent,
  PromptBuildResult, SessionEndEvent, SessionHookContext,
} from "./types.js";

/** session_end reasons that do not end the conversation: it resumes after the restart. */
const NOT_AN_END = new Set(["shutdown", "restart"]);

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * Whether the host runs agent_turn_prepare: OpenClaw 2026.9 does (the
 * version the real-host check runs); an unknown version gets only the
 * hooks every host has, since an unknown hook is a registration warning.
 */
export function offersTurnPrepare(version: string | undefined): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? "");
  return m !== null && (Number(m[1]) > 2026 || (Number(m[1]) === 2026 && Number(m[2]) >= 9));
}

/**
 * What makes two recall hook calls one recall: the run, when the host names
 * it (agent_turn_prepare and before_prompt_build see the prompt differently
 * prepared), else the session and the prompt.
 */
export function recallKey(ctx: AgentHookContext | undefined, prompt: string): string {
  return ctx?.runId ? `run\u0000${ctx.runId}\u0000${ctx.sessionKey ?? ""}` : `prompt\u0000${ctx?.sessionKey ?? ""}\u0000${prompt}`;
}

/**
 * OpenClaw's hook gates that would silently switch clawmem off: a plugin
 * that is not bundled gets agent_end and the prompt hooks only with
 * hooks.allowConversationAccess, and allowPromptInjection false blocks the
 * prompt hooks. Returns one line per blocked feature, naming the setting.
 */
export function hookGateWarnings(cfg: ClawmemConfig, hooks: { allowConversationAccess?: boolean; allowPromptInjection?: boolean } | undefined): string[] {
  const out: string[] = [];
  const key = `plugins.entries.${MANIFEST.id}.hooks`;
  if (hooks?.allowConversationAccess !== true) {
    const blocked = [cfg.autoCapture ? "auto-capture (agent_end)" : "", cfg.autoRecall ? "auto-recall (before_prompt_build)" : ""].filter(Boolean);
    if (blocked.length > 0) {
      out.push(`clawmem: OpenClaw blocks ${blocked.join(" and ")} until ${key}.allowConversationAccess is true: run \`openclaw config set ${key}.allowConversationAccess true\``);
    }
  }
  if (cfg.autoRecall && hooks?.allowPromptInjection === false) {
    out.push(`clawmem: OpenClaw blocks auto-recall because ${key}.allowPromptInjection is false; the memory tools still work`);
  }
  return out;
}

/** Hosts before OpenClaw 2026.2 ran auto-recall from before_agent_start only. */
export function needsLegacyRecallHook(version: string | undefined): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? "");
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < 2026 || (major === 2026 && minor < 2);
}

/** The host's version; reading api.runtime throws in some registration modes. */
function hostVersion(api: PluginApi): string | undefined {
  try {
    return api.runtime?.version;
  } catch {
    return undefined;
  }
}

/**
 * The plugin's own directory, for the outbox file: the stateDir setting;
 * else plugins/clawmem in OpenClaw's state directory, as the service's start
 * context gives it, else as api.runtime.state.resolveStateDir() does, else
 * $OPENCLAW_STATE_DIR, else ~/.openclaw.
 */
export function pluginStateDir(cfg: ClawmemConfig, ctx: PluginServiceContext | undefined, api: PluginApi): string {
  if (cfg.stateDir) return cfg.stateDir;
  let base = str(ctx?.stateDir);
  if (!base) {
    try {
      base = str(api.runtime?.state?.resolveStateDir?.());
    } catch {
      // reading api.runtime throws in some registration modes
    }
  }
  if (!base) {
    const env = process.env.OPENCLAW_STATE_DIR?.trim();
    base = env ? (env === "~" || env.startsWith("~/") ? homedir() + env.slice(1) : env) : join(homedir(), ".openclaw");
  }
  return join(base, "plugins", "clawmem");
}

/**
 * Registers tools, hooks, the CLI and (in full mode) the service that owns
 * this process's connection. runtimes is the process's registry; tests pass
 * their own to stand for separate gateway processes. Returns the runtime a
 * full registration holds.
 */
export function register(api: PluginApi, runtimes: Runtimes = processRuntimes()): Runtime | undefined {
  const cfg = parseConfig(api.pluginConfig);
  const log = api.logger;
  const held = api.registrationMode === "full" ? runtimes.acquire(cfg, log) : undefined;
  if (held) for (const w of hookGateWarnings(cfg, api.config?.plugins?.entries?.[MANIFEST.id]?.hooks)) log.warn(w);
  const runtime = () => held ?? runtimes.get(cfg);
  const link = () => runtime()?.link;

  const management = cfg.enableManagementTools;
  api.registerTool((ctx) => {
    const agent = resolveAgent(cfg, ctx);
    const tools = makeTools(link, agent, management, cfg.requestTimeoutMs);
    return runtime()?.mirror?.watchTools(agent, ctx?.workspaceDir, tools) ?? tools;
  }, { names: toolNames(management) });

  if (cfg.mdMirror.enabled) {
    api.on("agent_end", (_event: AgentEndEvent, ctx: AgentHookContext) => {
      try {
        runtime()?.mirror?.captured(resolveAgent(cfg, ctx), ctx?.workspaceDir);
      } catch (err) {
        log.warn(`clawmem: memory mirror: ${(err as Error).message}`);
      }
    });
  }

  if (cfg.autoRecall) {
    // Timed from the call to the returned block when it runs the recall (a
    // run's later recall hooks return at once and are not timed): the
    // runtime's recallTimings, in src/timings.ts.
    const recall = async (hook: string, event: PromptBuildEvent, ctx: AgentHookContext): Promise<PromptBuildResult | undefined> => {
      const started = performance.now();
      let timed: Runtime | undefined;
      let block: string | undefined;
      try {
        const rt = runtime();
        const agent = resolveAgent(cfg, ctx);
        const prompt = typeof event?.prompt === "string" ? event.prompt : "";
        if (!rt || !agent || prompt.trim() === "") return undefined;
        if (!rt.firstRecall(recallKey(ctx, prompt))) return undefined;
        timed = rt;
        const session = str(ctx?.sessionKey) ?? str(ctx?.sessionId);
        block = await recallContext(rt.link, agent, prompt, {
          timeoutMs: cfg.recallTimeoutMs,
          maxChars: cfg.recallMaxChars,
          tokenBudget: cfg.recallTokenBudget,
          recent: session === undefined ? undefined : { injections: rt.injections, session: `${agent}\u0000${session}` },
        });
        return block ? { prependContext: block } : undefined;
      } catch {
        return undefined;
      } finally {
        timed?.recallTimings.record(hook, performance.now() - started, block !== undefined);
      }
    };
    const on = (hook: "agent_turn_prepare" | "before_prompt_build" | "before_agent_start") =>
      api.on(hook, (event: PromptBuildEvent, ctx: AgentHookContext) => recall(hook, event, ctx));
    // agent_turn_prepare runs first where the host wires it (its embedded
    // and CLI runners); before_prompt_build covers the runners it does not
    // reach. A run gets the block once, from whichever runs first.
    const version = hostVersion(api);
    if (offersTurnPrepare(version)) on("agent_turn_prepare");
    on("before_prompt_build");
    if (needsLegacyRecallHook(version)) on("before_agent_start");
  }

  if (cfg.autoCapture) {
    const meta = (ctx: AgentHookContext | undefined): EventMeta => ({
      sessionKey: str(ctx?.sessionKey), sessionId: str(ctx?.sessionId), runId: str(ctx?.runId), channelId: str(ctx?.channelId), ts: Date.now(),
    });
    api.on("agent_end", (event: AgentEndEvent, ctx: AgentHookContext) => {
      try {
        const rt = runtime();
        const agent = resolveAgent(cfg, ctx);
        if (!rt || !agent || !Array.isArray(event?.messages) || event.messages.length === 0) return;
        rt.publish("agent_end", agent, agentEndBody(event), { ...meta(ctx), runId: str(ctx?.runId) ?? str(event.runId) });
      } catch (err) {
        log.warn(`clawmem: agent_end not sent: ${(err as Error).message}`);
      }
    });
    api.on("before_reset", (event: BeforeResetEvent, ctx: AgentHookContext) => {
      try {
        const rt = runtime();
        const agent = resolveAgent(cfg, ctx);
        if (!rt || !agent) return;
        rt.publish("before_reset", agent, sessionBody({ ...event, sessionId: ctx?.sessionId }), meta(ctx));
      } catch (err) {
        log.warn(`clawmem: before_reset not sent: ${(err as Error).message}`);
      }
    });
    // Compaction summarises the oldest messages away: clawmem distils them
    // first (no model turn needed, so the capability has no flush plan).
    // Most of OpenClaw 2026.9's compaction paths give no messages, only the
    // session: clawmem then reads the session's transcript from its stream,
    // as for a session end without messages.
    api.on("before_compaction", (event: BeforeCompactionEvent, ctx: AgentHookContext) => {
      try {
        const rt = runtime();
        const agent = resolveAgent(cfg, ctx);
        const carried = Array.isArray(event?.messages) && event.messages.length > 0;
        if (!rt || !agent || (!carried && (event?.messageCount === 0 || !str(ctx?.sessionId)))) return;
        // messageCount -1 is OpenClaw's "unknown".
        const count = typeof event?.messageCount === "number" && event.messageCount >= 0 ? event.messageCount : undefined;
        rt.publish("before_compaction", agent, sessionBody({ ...event, messageCount: count, sessionId: ctx?.sessionId, reason: "compaction" }), meta(ctx));
      } catch (err) {
        log.warn(`clawmem: before_compaction not sent: ${(err as Error).message}`);
      }
    });
    api.on("session_end", (event: SessionEndEvent, ctx: SessionHookContext) => {
      try {
        const rt = runtime();
        const agent = resolveAgent(cfg, { agentId: ctx?.agentId, sessionKey: ctx?.sessionKey ?? event?.sessionKey });
        if (!rt || !agent || NOT_AN_END.has(event?.reason ?? "")) return;
        const sessionId = str(event?.sessionId) ?? str(ctx?.sessionId);
        rt.publish("session_end", agent, sessionBody({ ...event, sessionId }), {
          sessionKey: str(ctx?.sessionKey) ?? str(event?.sessionKey), sessionId, ts: Date.now(),
        });
      } catch (err) {
        log.warn(`clawmem: session_end not sent: ${(err as Error).message}`);
      }
    });
    // /new and /reset are internal (HOOK.md-style) events, where the host offers them.
    api.registerHook?.(["command:new", "command:reset"], (event: InternalHookEvent) => {
      try {
        if (event?.type !== "command" || (event.action !== "new" && event.action !== "reset")) return;
        const c = (event.context ?? {}) as Record<string, unknown>;
        const agent = resolveAgent(cfg, { agentId: c.agentId, sessionKey: event.sessionKey });
        const prev = (c.previousSessionEntry ?? c.sessionEntry ?? {}) as Record<string, unknown>;
        const sessionId = str(prev.sessionId);
        const rt = runtime();
        if (!rt || !agent || !sessionId) return;
        const ts = event.timestamp instanceof Date ? event.timestamp.getTime() : Date.now();
        rt.publish(event.action === "new" ? "command_new" : "command_reset", agent,
          sessionBody({ sessionId, sessionFile: prev.sessionFile, reason: event.action }),
          { sessionKey: str(event.sessionKey), sessionId, ts });
      } catch (err) {
        log.warn(`clawmem: command:${event?.action} not sent: ${(err as Error).message}`);
      }
    }, { name: "clawmem-session-end", description: "Sends /new and /reset to clawmem for session distillation" });
  }

  // OpenClaw's memory capability: its status, doctor and Memory page ask
  // clawmem; registered in every mode, as OpenClaw's CLI loads the plugin
  // without starting it (the runtime then opens its own connection).
  api.registerMemoryCapability?.(memoryCapability(cfg, log, link));

  api.registerCli?.(({ program }) => registerCommands(program, cfg, log), { descriptors: [CLI_DESCRIPTOR] });

  if (held) {
    const start = (ctx: PluginServiceContext | undefined) => {
      try {
        held.start(pluginStateDir(cfg, ctx, api));
      } catch (err) {
        log.warn(`clawmem: cannot start: ${(err as Error).message}`);
      }
    };
    if (api.registerService) {
      api.registerService({ id: "clawmem", start, stop: () => runtimes.release(held) });
    } else {
      start(undefined); // a host without services: nothing will stop it, but events still get a file
    }
  }
  return held;
}

export { listMirrorArtifacts } from "./mirror.js";

/** openclaw.plugin.json, the one description of the plugin's identity and config. */
export const MANIFEST = JSON.parse(readFileSync(new URL("../../openclaw.plugin.json", import.meta.url), "utf8")) as {
  id: string; name: string; description: string; activation: unknown; configSchema: unknown;
};

const plugin = {
  id: MANIFEST.id,
  name: MANIFEST.name,
  description: MANIFEST.description,
  register(api: PluginApi): void {
    register(api);
  },
};

// The metadata OpenClaw's SDK (defineToolPlugin) attaches to an entry, which
// `openclaw plugins validate` compares with openclaw.plugin.json: with it,
// validate checks that the manifest's tool contracts match these tools.
Object.defineProperty(plugin, Symbol.for("openclaw.plugin-sdk.tool-plugin.metadata"), {
  enumerable: false,
  value: {
    id: MANIFEST.id,
    name: MANIFEST.name,
    description: MANIFEST.description,
    activation: MANIFEST.activation,
    configSchema: MANIFEST.configSchema,
    tools: TOOL_SPECS.map((t) => ({ name: t.name, label: t.label, description: t.description, parameters: t.parameters })),
  },
});

export default plugin;
