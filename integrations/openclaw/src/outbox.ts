// Hook events on their way to JetStream. push() only queues and returns, so
// an agent never waits on clawmem; one background pump publishes the queue
// in order, each event with its Msg-Id, and keeps events while NATS is down,
// retrying with backoff. The queue is bounded by count (bufferMaxEvents) and
// size (outboxMaxBytes): past either the oldest event is dropped and
// counted. A retry that JetStream already has is a duplicate there and
// stored once.
//
// Once attached to a file (the gateway's service start), the queue is also
// saved there (outboxfile.ts) while it holds undelivered events: a moment
// after each change, when it stops, and when the process exits. Attaching
// loads what the last run left, ahead of anything queued since, and the file
// shrinks (and is removed) as JetStream acknowledges its events.
import { errors, headers } from "@nats-io/transport-node";
import { readFileSync } from "node:fs";
import type { OutgoingEvent } from "./events.js";
import { sleep, within, type Link } from "./link.js";
import { encodeLine, lineBytes, parseOutbox, removeStaleTemps, trimOldest, writeAtomic, writeAtomicSync } from "./outboxfile.js";
import type { PluginLogger } from "./types.js";

/** How long one publish waits for JetStream's ack before it is retried. */
const PUBLISH_TIMEOUT_MS = 5000;
/** Longest time a change to the queue waits to be saved: what a crash can lose. */
export const SAVE_DELAY_MS = 500;

export interface OutboxStats {
  queued: number;
  published: number;
  duplicates: number;
  dropped: number; // pushed out by the bounds
  rejected: number; // refused by the server for good
}

export interface OutboxLimits {
  maxEvents: number;
  maxBytes: number;
}

/** What the outbox file holds and what loading it found. */
export interface OutboxFileStats {
  file: string | undefined;
  /** Events read from the file when it was attached. */
  loaded: number;
  /** Lines of that file that were not events. */
  badLines: number;
  /** Successful saves (removing the file when the queue empties included). */
  saves: number;
}

export class Outbox {
  #q: OutgoingEvent[] = [];
  #bytes = 0;
  #pumping: Promise<void> | undefined;
  #closed = false;
  #stats = { published: 0, duplicates: 0, dropped: 0, rejected: 0 };
  #idle = new Set<() => void>();
  // The file, once attached.
  #file: string | undefined;
  #fileStats = { loaded: 0, badLines: 0, saves: 0 };
  #onDisk = false; // the file exists (as far as this process knows)
  #dirty = false;
  #saveTimer: NodeJS.Timeout | undefined;
  #saving: Promise<void> = Promise.resolve();
  #writeFailing = false;

  constructor(private readonly link: Link, private readonly limits: OutboxLimits, private readonly log: PluginLogger) {}

  push(ev: OutgoingEvent): void {
    if (this.#closed) return;
    this.#q.push(ev);
    this.#bytes += lineBytes(ev);
    this.#bound();
    this.#changed();
    this.#pump();
  }

  stats(): OutboxStats {
    return { queued: this.#q.length, ...this.#stats };
  }

  fileStats(): OutboxFileStats {
    return { file: this.#file, ...this.#fileStats };
  }

  /**
   * Saves the queue to file from now on, after loading the events the file
   * holds (a previous run's) ahead of those queued. Throws only when the
   * file exists but cannot be read, and then changes nothing: an unreadable
   * file is never overwritten.
   */
  attach(file: string): void {
    if (this.#closed || this.#file) return;
    let text: string | undefined;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    removeStaleTemps(file);
    this.#file = file;
    this.#onDisk = text !== undefined;
    exitSaves().add(this);
    const r = parseOutbox(text ?? "");
    this.#fileStats.loaded = r.events.length;
    this.#fileStats.badLines = r.badLines;
    if (r.badLines > 0) {
      const where = r.badLineNumbers.join(", ") + (r.badLines > r.badLineNumbers.length ? ", ..." : "");
      this.log.warn(`clawmem: outbox file ${file} is damaged${r.truncated ? " (cut short: its last line is incomplete)" : ""}: `
        + `skipped ${r.badLines} unreadable line${r.badLines === 1 ? "" : "s"} (line ${where}); kept the ${r.events.length} readable events`);
    }
    if (r.events.length > 0) {
      this.log.info(`clawmem: ${r.events.length} undelivered hook events loaded from ${file}; delivering them first`);
    }
    this.#q = [...r.events, ...this.#q];
    this.#bytes = this.#q.reduce((n, ev) => n + lineBytes(ev), 0);
    this.#bound();
    // Rewrite a damaged, trimmed or empty file, and save what was queued before the file was known.
    if (r.badLines > 0 || this.#q.length !== r.events.length || (this.#onDisk && this.#q.length === 0)) this.#changed();
    this.#pump();
  }

  /** Waits up to ms for the queue to empty; reports whether it did. */
  async flush(ms: number): Promise<boolean> {
    if (!this.#pumping) return this.#q.length === 0;
    let wake!: () => void;
    const idle = new Promise<void>((resolve) => (wake = resolve));
    this.#idle.add(wake);
    try {
      await within(ms, idle, undefined);
    } finally {
      this.#idle.delete(wake);
    }
    return this.#q.length === 0;
  }

  /**
   * Stops publishing. What is still queued is saved to the file for the next
   * start, or (without a file, or if saving fails) lost and logged.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    const n = this.#q.length;
    if (this.#file) {
      exitSaves().delete(this);
      this.#dirty = true;
      await (this.#saving = this.#saving.then(() => this.#write()));
      if (n > 0) {
        if (!this.#dirty) {
          this.log.info(`clawmem: ${n} hook events not delivered at shutdown; saved to ${this.#file}, to be delivered first on the next start`);
        } else {
          this.log.warn(`clawmem: ${n} hook events not delivered at shutdown and not saved (${this.#file} cannot be written)`);
        }
      }
    } else if (n > 0) {
      this.log.warn(`clawmem: ${n} hook events not delivered at shutdown`);
    }
    this.#q = [];
    this.#bytes = 0;
  }

  /** Drops the oldest events past the bounds; the newest stays whatever its size. */
  #bound() {
    const overCount = this.#q.length > this.limits.maxEvents;
    if (!overCount && this.#bytes <= this.limits.maxBytes) return;
    const dropped = trimOldest(this.#q, this.limits.maxEvents, this.limits.maxBytes);
    if (dropped === 0) return;
    this.#bytes = this.#q.reduce((n, ev) => n + lineBytes(ev), 0);
    for (let i = 0; i < dropped; i++) {
      const n = ++this.#stats.dropped;
      // Logged at 1, 2, 4, 8, ... so a long outage does not flood the log.
      if ((n & (n - 1)) === 0) {
        const why = overCount ? `event buffer full (${this.limits.maxEvents})` : `event buffer over ${this.limits.maxBytes} bytes (outboxMaxBytes)`;
        this.log.warn(`clawmem: ${why}; dropped the oldest event (${n} dropped so far)`);
      }
    }
  }

  /** The queue changed: save it a moment from now, if there is a file. */
  #changed() {
    if (!this.#file || this.#closed) return;
    this.#dirty = true;
    if (this.#saveTimer) return;
    this.#saveTimer = setTimeout(() => {
      this.#saveTimer = undefined;
      this.#saving = this.#saving.then(() => this.#write());
    }, SAVE_DELAY_MS);
    this.#saveTimer.unref();
  }

  async #write(): Promise<void> {
    const file = this.#file;
    if (!file || !this.#dirty) return;
    this.#dirty = false;
    const lines = this.#q.map(encodeLine);
    if (lines.length === 0 && !this.#onDisk) return;
    try {
      await writeAtomic(file, lines);
      this.#onDisk = lines.length > 0;
      this.#fileStats.saves++;
      if (this.#writeFailing) this.log.info(`clawmem: outbox file ${file} written again`);
      this.#writeFailing = false;
    } catch (err) {
      this.#dirty = true; // tried again on the next change, and at shutdown
      if (!this.#writeFailing) {
        this.log.warn(`clawmem: cannot write the outbox file ${file}: ${(err as Error).message}; undelivered events are only in memory until it works`);
      }
      this.#writeFailing = true;
    }
  }

  /** The last save, at process exit, of changes the timer has not saved yet. */
  saveAtExit(): void {
    if (!this.#file || this.#closed || !this.#dirty) return;
    try {
      writeAtomicSync(this.#file, this.#q.map(encodeLine));
    } catch {
      // the process is exiting; the last good save stays
    }
  }

  #pump() {
    if (this.#q.length === 0 || this.#closed) return;
    this.#pumping ??= this.#run().finally(() => {
      this.#pumping = undefined;
      for (const w of this.#idle) w();
    });
  }

  async #run(): Promise<void> {
    let backoff = 250;
    while (this.#q.length > 0 && !this.#closed) {
      const conn = await this.link.ready(10_000);
      if (!conn) {
        if (this.link.closed) break;
        continue;
      }
      const ev = this.#q[0];
      try {
        const h = headers();
        h.set("Nats-Msg-Id", ev.msgId);
        const reply = await conn.nc.request(ev.subject, ev.data, { timeout: PUBLISH_TIMEOUT_MS, headers: h });
        const ack = hookAck(reply.data);
        if (ack.duplicate) this.#stats.duplicates++;
        else this.#stats.published++;
        backoff = 250;
      } catch (err) {
        if (!isPermanent(err)) {
          await sleep(backoff);
          backoff = Math.min(backoff * 2, 10_000);
          continue;
        }
        this.#stats.rejected++;
        this.log.error(`clawmem: ${ev.kind} event for agent ${ev.agent} refused by NATS and dropped: ${(err as Error).message}`);
      }
      if (this.#closed) break;
      // Still queued unless the bounds pushed it out meanwhile.
      const i = this.#q.indexOf(ev);
      if (i >= 0) {
        this.#q.splice(i, 1);
        this.#bytes -= lineBytes(ev);
        this.#changed();
      }
    }
  }
}

/** The outboxes with a file, saved once more when the process exits (one listener for all). */
function exitSaves(): Set<Outbox> {
  const g = globalThis as { [k: symbol]: Set<Outbox> | undefined };
  const sym = Symbol.for("clawmem.openclaw.outbox-exit-saves");
  let set = g[sym];
  if (!set) {
    const created = new Set<Outbox>();
    process.once("exit", () => {
      for (const o of created) o.saveAtExit();
    });
    set = g[sym] = created;
  }
  return set;
}

/**
 * A refusal that a retry cannot change: the subject is not permitted, or
 * JetStream answered with an API error other than "stream not found" (which
 * only means clawmem has not created its streams yet).
 */
function isPermanent(err: unknown): boolean {
  if (err instanceof errors.PermissionViolationError) return true;
  return err instanceof HookRefused && err.permanent;
}

/** clawmem's ingest refused an event: invalid or too large (permanent), or not persisted now (retry). */
export class HookRefused extends Error {
  constructor(message: string, readonly permanent: boolean) {
    super(message);
  }
}

/**
 * Reads the ingest's reply to a hook request: {"ok":true,"duplicate":…}, or
 * {"error","code"} where code invalid or too_large cannot change on a retry.
 */
export function hookAck(data: Uint8Array): { duplicate: boolean } {
  let r: { ok?: unknown; duplicate?: unknown; error?: unknown; code?: unknown };
  try {
    r = JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw new HookRefused("clawmem's ingest answered something that is not JSON", false);
  }
  if (r?.ok === true) return { duplicate: r.duplicate === true };
  const msg = typeof r?.error === "string" ? r.error : "no reason given";
  throw new HookRefused(msg, r?.code === "invalid" || r?.code === "too_large");
}
