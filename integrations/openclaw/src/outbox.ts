// Hook events on their way to JetStream. push() only queues and returns, so
// an agent never waits on clawmem; one background pump publishes the queue
// in order, each event with its Msg-Id, and keeps events while NATS is down,
// retrying with backoff. The queue is bounded: past the limit the oldest
// event is dropped and counted. A retry that JetStream already has is a
// duplicate there and stored once.
import { errors } from "@nats-io/transport-node";
import { JetStreamApiError, JetStreamApiCodes } from "@nats-io/jetstream";
import type { OutgoingEvent } from "./events.js";
import { sleep, within, type Link } from "./link.js";
import type { PluginLogger } from "./types.js";

/** How long one publish waits for JetStream's ack before it is retried. */
const PUBLISH_TIMEOUT_MS = 5000;

export interface OutboxStats {
  queued: number;
  published: number;
  duplicates: number;
  dropped: number; // pushed out by the bound
  rejected: number; // refused by the server for good
}

export class Outbox {
  #q: OutgoingEvent[] = [];
  #pumping: Promise<void> | undefined;
  #closed = false;
  #stats = { published: 0, duplicates: 0, dropped: 0, rejected: 0 };
  #idle = new Set<() => void>();

  constructor(private readonly link: Link, private readonly max: number, private readonly log: PluginLogger) {}

  push(ev: OutgoingEvent): void {
    if (this.#closed) return;
    if (this.#q.length >= this.max) {
      this.#q.shift();
      this.#stats.dropped++;
      const n = this.#stats.dropped;
      // Logged at 1, 2, 4, 8, ... so a long outage does not flood the log.
      if ((n & (n - 1)) === 0) {
        this.log.warn(`clawmem: event buffer full (${this.max}); dropped the oldest event (${n} dropped so far)`);
      }
    }
    this.#q.push(ev);
    this.#pumping ??= this.#pump().finally(() => {
      this.#pumping = undefined;
      for (const w of this.#idle) w();
    });
  }

  stats(): OutboxStats {
    return { queued: this.#q.length, ...this.#stats };
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

  /** Stops publishing; what is still queued is lost (and logged). */
  close(): void {
    this.#closed = true;
    if (this.#q.length > 0) this.log.warn(`clawmem: ${this.#q.length} hook events not delivered at shutdown`);
    this.#q = [];
  }

  async #pump(): Promise<void> {
    let backoff = 250;
    while (this.#q.length > 0 && !this.#closed) {
      const conn = await this.link.ready(10_000);
      if (!conn) {
        if (this.link.closed) break;
        continue;
      }
      const ev = this.#q[0];
      try {
        const ack = await conn.js.publish(ev.subject, ev.data, {
          msgID: ev.msgId,
          timeout: PUBLISH_TIMEOUT_MS,
          expect: { streamName: "CLAWMEM_EVENTS" },
        });
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
      // The head is still ev unless the bound pushed it out meanwhile.
      if (this.#q[0] === ev) this.#q.shift();
    }
  }
}

/**
 * A refusal that a retry cannot change: the subject is not permitted, or
 * JetStream answered with an API error other than "stream not found" (which
 * only means clawmem has not created its streams yet).
 */
function isPermanent(err: unknown): boolean {
  if (err instanceof errors.PermissionViolationError) return true;
  if (err instanceof JetStreamApiError) return err.code !== JetStreamApiCodes.StreamNotFound;
  return false;
}
