// The live part of the plugin: one NATS link and one event outbox per
// process and clawmem server. OpenClaw registers the plugin several times in
// one process and, depending on the host version, calls hooks and tools from
// a "discovery" registration while only the "full" one may open connections
// (2026.9.6 runs agent turns through a discovery registration). So the full
// registration creates the runtime here, and every registration's hooks and
// tools look it up when they run.
import type { ClawmemConfig } from "./config.js";
import { buildEvent, MAX_EVENT_BYTES, type EventKind, type EventMeta, type WireMessage } from "./events.js";
import { Link } from "./link.js";
import { Outbox } from "./outbox.js";
import type { PluginLogger } from "./types.js";

/** How long stopping waits for queued events to reach JetStream. */
const STOP_FLUSH_MS = 1500;
/** How long a prompt counts as answered, so a second hook for it injects nothing. */
const RECALL_DEDUP_MS = 60_000;

export class Runtime {
  readonly link: Link;
  readonly outbox: Outbox;
  #recalled = new Map<string, number>();

  constructor(readonly cfg: ClawmemConfig, readonly log: PluginLogger) {
    this.link = new Link({ servers: cfg.natsUrl, credentialsFile: cfg.credentialsFile, log });
    this.outbox = new Outbox(this.link, cfg.bufferMaxEvents, log);
  }

  /** Queues one event; never throws, never waits. */
  publish(kind: EventKind, agent: string, body: { messages?: WireMessage[] }, meta: EventMeta): void {
    try {
      const ev = buildEvent(kind, agent, body, meta);
      if (!ev) {
        this.log.warn(`clawmem: ${kind} event for agent ${agent} is over ${MAX_EVENT_BYTES} bytes even without old message text; not sent`);
        return;
      }
      this.outbox.push(ev);
    } catch (err) {
      this.log.warn(`clawmem: ${kind} event not sent: ${(err as Error).message}`);
    }
  }

  /**
   * True the first time a prompt (by run, session and text) asks for recall:
   * hosts that run both recall hooks, or hooks of two registrations, get the
   * block once.
   */
  firstRecall(key: string): boolean {
    const now = Date.now();
    for (const [k, t] of this.#recalled) if (now - t > RECALL_DEDUP_MS) this.#recalled.delete(k);
    if (this.#recalled.has(key)) return false;
    this.#recalled.set(key, now);
    return true;
  }

  async stop(): Promise<void> {
    await this.outbox.flush(STOP_FLUSH_MS);
    this.outbox.close();
    await this.link.close();
  }
}

/** The runtimes of one process, by the settings that make a connection. */
export class Runtimes {
  #byKey = new Map<string, { rt: Runtime; refs: number }>();

  static key(cfg: ClawmemConfig): string {
    return JSON.stringify([cfg.natsUrl, cfg.credentialsFile ?? "", cfg.bufferMaxEvents]);
  }

  /** The runtime for cfg, created on first use; each acquire needs a release. */
  acquire(cfg: ClawmemConfig, log: PluginLogger): Runtime {
    const key = Runtimes.key(cfg);
    let e = this.#byKey.get(key);
    if (!e) {
      e = { rt: new Runtime(cfg, log), refs: 0 };
      this.#byKey.set(key, e);
    }
    e.refs++;
    return e.rt;
  }

  /** Stops the runtime when its last holder lets go. */
  async release(rt: Runtime): Promise<void> {
    const key = Runtimes.key(rt.cfg);
    const e = this.#byKey.get(key);
    if (!e || e.rt !== rt || --e.refs > 0) return;
    this.#byKey.delete(key);
    await rt.stop();
  }

  /** The running runtime for cfg, if a full registration in this process made one. */
  get(cfg: ClawmemConfig): Runtime | undefined {
    return this.#byKey.get(Runtimes.key(cfg))?.rt;
  }
}

/** This process's runtimes, shared by every copy of the plugin module it loaded. */
export function processRuntimes(): Runtimes {
  const g = globalThis as { [k: symbol]: Runtimes | undefined };
  const sym = Symbol.for("clawmem.openclaw.runtimes");
  return (g[sym] ??= new Runtimes());
}
