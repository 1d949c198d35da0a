// `openclaw clawmem stats|search|list`: the running clawmem asked over NATS,
// as the agent named by --agent (default: the plugin's defaultAgent, else
// main). Each command opens its own connection and closes it.
import type { ClawmemConfig } from "./config.js";
import { AGENT_ID } from "./config.js";
import { Link } from "./link.js";
import { request, type Op } from "./service.js";
import type { CliCommand, PluginLogger } from "./types.js";

interface CliOptions {
  agent?: string;
  scope?: string;
  category?: string;
  limit?: string;
  offset?: string;
  json?: boolean;
}

function intOption(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

type Write = (s: string) => void;

async function run(cfg: ClawmemConfig, log: PluginLogger, write: Write, op: Op, opts: CliOptions, body: Record<string, unknown>): Promise<void> {
  const agent = opts.agent ?? cfg.defaultAgent ?? "main";
  if (!AGENT_ID.test(agent)) throw new Error(`--agent ${JSON.stringify(agent)} is not a valid agent id`);
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  const link = new Link({ servers: cfg.natsUrl, credentialsFile: cfg.credentialsFile, name: "clawmem-openclaw-cli", log, logOutages: false });
  try {
    // A one-shot command waits for its own connect (up to the deadline), not just a grace.
    const res = await request(link, agent, op, body, { timeoutMs: cfg.requestTimeoutMs, connectWaitMs: cfg.requestTimeoutMs });
    write((opts.json ? JSON.stringify(res, null, 2) : res.content.map((c) => c.text).join("\n")) + "\n");
    if (res.isError) process.exitCode = 1;
  } finally {
    await link.close();
  }
}

/** The root command, as openclaw.plugin.json's cliCommands declares it too. */
export const CLI_DESCRIPTOR = { name: "clawmem", description: "Query clawmem, the long-term memory service (stats, search, list)", hasSubcommands: true };

export function registerCommands(program: CliCommand, cfg: ClawmemConfig, log: PluginLogger,
  write: Write = (s) => void process.stdout.write(s)): void {
  const fail = (err: unknown) => {
    process.stderr.write(`clawmem: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  };
  const root = program.command(CLI_DESCRIPTOR.name).description(CLI_DESCRIPTOR.description);
  root.command("stats")
    .description("Memory statistics: counts by scope and category, retrieval settings")
    .option("--agent <id>", "clawmem agent to ask as (default: the plugin's defaultAgent, else main)")
    .option("--scope <scope>", "only this scope")
    .option("--json", "print the whole reply as JSON")
    .action((opts: CliOptions) => run(cfg, log, write, "stats", opts, { scope: opts.scope }).catch(fail));
  root.command("search")
    .description("Search memories with clawmem's hybrid retrieval")
    .argument("<query>", "what to look for")
    .option("--agent <id>", "clawmem agent to ask as (default: the plugin's defaultAgent, else main)")
    .option("--scope <scope>", "only this scope")
    .option("--category <category>", "only this category")
    .option("--limit <n>", "at most this many results (default 5, max 20)")
    .option("--json", "print the whole reply as JSON")
    .action((query: string, opts: CliOptions) =>
      Promise.resolve()
        .then(() => run(cfg, log, write, "recall", opts, { query, scope: opts.scope, category: opts.category, limit: intOption("limit", opts.limit) }))
        .catch(fail));
  root.command("list")
    .description("List memories, newest first")
    .option("--agent <id>", "clawmem agent to ask as (default: the plugin's defaultAgent, else main)")
    .option("--scope <scope>", "only this scope")
    .option("--category <category>", "only this category")
    .option("--limit <n>", "at most this many memories (default 20)")
    .option("--offset <n>", "skip this many")
    .option("--json", "print the whole reply as JSON")
    .action((opts: CliOptions) =>
      Promise.resolve()
        .then(() => run(cfg, log, write, "list", opts, {
          scope: opts.scope, category: opts.category, limit: intOption("limit", opts.limit), offset: intOption("offset", opts.offset),
        }))
        .catch(fail));
}
