// The part of OpenClaw's plugin API this plugin uses, typed structurally so
// the package needs no dependency on OpenClaw itself (the host injects the
// real objects). Field names follow openclaw/plugin-sdk (2026.x).

export type RegistrationMode = "full" | "discovery" | "tool-discovery" | "setup-only" | "setup-runtime" | "cli-metadata";

export interface PluginLogger {
  debug?: (msg: string) => void;
  info: (msg: string) => void;
  warn: (msg: string) => void;
  error: (msg: string) => void;
}

/** A tool result: content for the model, details for code. */
export interface ToolResult {
  content: Array<{ type: "text"; text: string }>;
  details?: unknown;
  isError?: boolean;
}

export interface AgentTool {
  name: string;
  label?: string;
  description: string;
  parameters: Record<string, unknown>;
  execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<ToolResult>;
}

/** What a tool factory is told about the run it serves. */
export interface ToolContext {
  agentId?: string;
  /** The agent's OpenClaw workspace (where the memory mirror goes). */
  workspaceDir?: string;
  sessionKey?: string;
  sessionId?: string;
}

export type ToolFactory = (ctx: ToolContext) => AgentTool | AgentTool[] | null | undefined;

/** ctx of agent hooks (before_prompt_build, agent_end, before_reset). */
export interface AgentHookContext {
  runId?: string;
  agentId?: string;
  workspaceDir?: string;
  sessionKey?: string;
  sessionId?: string;
  channelId?: string;
}

/** ctx of session hooks (session_end). */
export interface SessionHookContext {
  agentId?: string;
  sessionId?: string;
  sessionKey?: string;
}

export interface PromptBuildEvent {
  prompt?: string;
  messages?: unknown[];
}

export interface PromptBuildResult {
  prependContext?: string;
}

export interface AgentEndEvent {
  runId?: string;
  messages?: unknown[];
  success?: boolean;
  error?: unknown;
  durationMs?: number;
}

export interface BeforeResetEvent {
  sessionFile?: string;
  messages?: unknown[];
  reason?: string;
}

/** before_compaction: the messages about to be summarised away. */
export interface BeforeCompactionEvent {
  messageCount?: number;
  compactingCount?: number;
  messages?: unknown[];
  sessionFile?: string;
}

export interface SessionEndEvent {
  sessionId?: string;
  sessionKey?: string;
  messageCount?: number;
  reason?: string;
  sessionFile?: string;
  nextSessionId?: string;
}

/** An internal (HOOK.md-style) event such as command:new. */
export interface InternalHookEvent {
  type: string;
  action: string;
  sessionKey?: string;
  context?: Record<string, unknown>;
  timestamp?: Date | string | number;
  messages?: string[];
}

/** The commander Command the CLI registrar receives (the subset used). */
export interface CliCommand {
  command(nameAndArgs: string): CliCommand;
  description(text: string): CliCommand;
  option(flags: string, description?: string, defaultValue?: string): CliCommand;
  argument(name: string, description?: string): CliCommand;
  action(fn: (...args: any[]) => void | Promise<void>): CliCommand;
}

export interface CliContext {
  program: CliCommand;
  logger?: PluginLogger;
}

/** What a service's start and stop are given (OpenClawPluginServiceContext, the subset used). */
export interface PluginServiceContext {
  /** OpenClaw's state directory ($OPENCLAW_STATE_DIR, default ~/.openclaw). */
  stateDir?: string;
}

export interface PluginService {
  id: string;
  start: (ctx: PluginServiceContext) => void | Promise<void>;
  stop?: (ctx: PluginServiceContext) => void | Promise<void>;
}

export interface HookOptions {
  timeoutMs?: number;
  priority?: number;
}

export interface PluginApi {
  id?: string;
  registrationMode?: RegistrationMode;
  pluginConfig?: Record<string, unknown>;
  logger: PluginLogger;
  runtime?: { version?: string; state?: { resolveStateDir?: () => string } };
  /** OpenClaw's configuration, as loaded when the plugin registered. */
  config?: { plugins?: { entries?: Record<string, { hooks?: { allowConversationAccess?: boolean; allowPromptInjection?: boolean } }> } };
  registerMemoryCapability?(capability: unknown): void;
  registerTool(tool: AgentTool | ToolFactory, opts?: { name?: string; names?: string[]; optional?: boolean }): void;
  registerHook?(events: string | string[], handler: (event: InternalHookEvent) => void | Promise<void>,
    opts?: { name?: string; description?: string }): void;
  registerCli?(registrar: (ctx: CliContext) => void | Promise<void>,
    opts?: { commands?: string[]; descriptors?: Array<{ name: string; description: string; hasSubcommands: boolean }> }): void;
  registerService?(service: PluginService): void;
  on(hookName: string, handler: (event: any, ctx: any) => unknown, opts?: HookOptions): void;
}
