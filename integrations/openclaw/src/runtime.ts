// The live part of the plugin: one NATS link and one event outbox per
// process and clawmem server. OpenClaw registers the plugin several times in
// one process and, depending on the host version, calls hooks and tools from
// a "discovery" registration while only the "full" one may open connections
// (2026.9.6 runs agent turns through a discovery registration). So the full
// registration creates the runtime here, and every registration's hooks and
// tools look it up when they run.
//
// The gateway's service start (start()) connects at once, in the background,
// and gives the outbox its file in the plugin's state directory; stopping
// saves what is undelivered there.
import { join } from "node:path";
import type { ClawmemConfig } from "./config.js";
import { buildEvent, MAX_EVENT_BYTES, type EventKind, type EventMeta, type WireMessage } from "./events.js";
import { Link } from "./link.js";
import { Mirror } from "./mirror.js";
import { Outbox } from "./outbox.js";
import { lockOutbox, OUTBOX_FILE, unlockOutbox } from "./outboxfile.js";
import { RecentInjections } from "./recall.js";
import { RecallTimings, TIMINGS_ENV, timingsFile } from "./timings.js";
import type { PluginLogger } from "./types.js";

/** How long stopping waits for queued events to reach JetStream. */
const STOP_FLUSH_MS = 1500;
/** How long a prompt counts as answered, so a second hook for it injects nothing. */
const RECALL_DEDUP_MS = 60_000;

/**
 * The outbox directories this process uses, each with the promise of its
 * current user letting go: a runtime replacing another (a reload with new
 * settings) takes the file over after the old one saved it.
 */
function dirClaims(): Map<string, Promise<void>> {
  const g = globalThis as { [k: symbol]: Map<string, Promise<void>> | undefined };
  return (g[Symbol.for("clawmem.openclaw.outbox-dirs")] ??= new Map());
}

export class Runtime {
  readonly link: Link;
  readonly outbox: Outbox;
  /** The MEMORY.md mirror, with mdMirror.enabled. */
  readonly mirror: Mirror | undefined;
  /** What auto-recall injected in each session's last turns (not repeated). */
  readonly injections = new RecentInjections();
  /** How long each auto-recall took, from the hook's call to its block. */
  readonly recallTimings = new RecallTimings();
  #recalled = new Map<string, number>();
  #started: Promise<void> | undefined;
  #stopped = false;
  #lockedDir: string | undefined;
  #letGo: (() => void) | undefined;

  constructor(readonly cfg: ClawmemConfig, readonly log: PluginLogger) {
    this.link = new Link({ servers: cfg.natsUrl, credentialsFile: cfg.credentialsFile, log });
    this.outbox = new Outbox(this.link, { maxEvents: cfg.bufferMaxEvents, maxBytes: cfg.outboxMaxBytes }, log);
    this.mirror = cfg.mdMirror.enabled ? new Mirror(this.link, cfg.mdMirror, cfg.requestTimeoutMs, log) : undefined;
  }

  /**
   * Connects in the background and, with persistOutbox, attaches the outbox
   * file in stateDir (loading what the last run left). Returns at once;
   * whenStarted() resolves when the file is attached (or could not be).
   * With $CLAWMEM_PLUGIN_TIMINGS set, the recall timings go to that file.
   * Never throws; a second call does nothing.
   */
  start(stateDir: string | undefined): void {
    if (this.#started || this.#stopped) return;
    const timings = timingsFile(process.env[TIMINGS_ENV], stateDir);
    if (timings) this.recallTimings.writeTo(timings, this.log);
    this.link.start();
    this.mirror?.start();
    this.#started = this.cfg.persistOutbox && stateDir ? this.#attach(stateDir) : Promise.resolve();
  }

  whenStarted(): Promise<void> {
    return this.#started ?? Promise.resolve();
  }

  async #attach(dir: string): Promise<void> {
    const claims = dirClaims();
    const before = claims.get(dir) ?? Promise.resolve();
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => (letGo = resolve));
    const mine = before.then(() => released);
    claims.set(dir, mine);
    await before;
    this.#letGo = () => {
      letGo();
      if (claims.get(dir) === mine) claims.delete(dir);
    };
    if (this.#stopped) return this.#release();
    try {
      const holder = lockOutbox(dir);
      if (holder !== undefined) {
        this.log.warn(`clawmem: ${join(dir, "outbox.lock")} is held by process ${holder}, another gateway using this state directory; `
          + "this one keeps undelivered hook events in memory only (set the plugin's stateDir to give each gateway its own)");
        return this.#release();
      }
      this.#lockedDir = dir;
      this.outbox.attach(join(dir, OUTBOX_FILE));
    } catch (err) {
      this.log.warn(`clawmem: cannot use the outbox file in ${dir}: ${(err as Error).message}; undelivered hook events are kept in memory only`);
      this.#release();
    }
  }

  #release() {
    if (this.#lockedDir) unlockOutbox(this.#lockedDir);
    this.#lockedDir = undefined;
    this.#letGo?.();
    this.#letGo = undefined;
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

  /**
   * Gives connected delivery a moment, then saves what is left to the
   * outbox file (without a connection there is nothing to wait for) and
   * closes the connection.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.mirror?.stop();
    if (this.link.phase === "up") await this.outbox.flush(STOP_FLUSH_MS);
    await this.outbox.close();
    this.#release();
    await this.link.close();
  }
}

/** The runtimes of one process, by the settings that make a connection. */
export class Runtimes {
  #byKey = new Map<string, { rt: Runtime; refs: number }>();

  static key(cfg: ClawmemConfig): string {
    return JSON.stringify([cfg.natsUrl, cfg.credentialsFile ?? "", cfg.bufferMaxEvents, cfg.outboxMaxBytes, cfg.persistOutbox, cfg.stateDir ?? "", cfg.mdMirror]);
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
