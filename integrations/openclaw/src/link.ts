// One lazily opened NATS connection to clawmem. Nothing connects until the
// first hook or tool needs it; a failed connect is retried in the background
// with backoff, and once connected the client reconnects by itself forever.
// Hooks never wait on any of this longer than their own deadline.
import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { PluginLogger } from "./types.js";

export interface LinkOptions {
  servers: string;
  credentialsFile?: string;
  name?: string;
  log: PluginLogger;
}

/** Resolves after ms without keeping the process alive: for background retries. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Races work against a deadline of ms and clears the timer as soon as either
 * ends, so a bounded wait holds the process only as long as it waits.
 * Resolves to fallback at the deadline.
 */
export async function within<T, F>(ms: number, work: Promise<T>, fallback: F): Promise<T | F> {
  let t: NodeJS.Timeout | undefined;
  const deadline = new Promise<F>((resolve) => (t = setTimeout(() => resolve(fallback), Math.max(0, ms))));
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(t);
  }
}

export class Link {
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #up = false; // connected now (not reconnecting)
  #loop: Promise<void> | undefined;
  #closed = false;
  #onClose!: () => void;
  readonly #closing = new Promise<void>((resolve) => (this.#onClose = resolve));
  #waiters = new Set<() => void>();
  #warned = false;

  constructor(private readonly opts: LinkOptions) {}

  /** The connection if it is up now; otherwise starts connecting and returns undefined. */
  current(): { nc: NatsConnection; js: JetStreamClient } | undefined {
    this.#start();
    return this.#up && this.#nc && this.#js ? { nc: this.#nc, js: this.#js } : undefined;
  }

  /** Waits up to ms for the connection to be up. */
  async ready(ms: number): Promise<{ nc: NatsConnection; js: JetStreamClient } | undefined> {
    const now = this.current();
    if (now || ms <= 0 || this.#closed) return now;
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.#waiters.add(wake);
    try {
      await within(ms, woken, undefined);
    } finally {
      this.#waiters.delete(wake);
    }
    return this.current();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the connection (flushing what it has buffered) and stops reconnecting. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#onClose();
    this.#wake();
    const nc = this.#nc;
    this.#nc = undefined;
    this.#up = false;
    if (nc && !nc.isClosed()) {
      await nc.drain().catch(() => nc.close());
    }
    await this.#loop;
  }

  #wake() {
    for (const w of this.#waiters) w();
  }

  #start() {
    // One connection at a time: once up, the client reconnects by itself.
    if (this.#loop || this.#closed || this.#nc) return;
    this.#loop = this.#connectLoop().finally(() => {
      this.#loop = undefined;
    });
  }

  async #connectLoop() {
    let backoff = 250;
    while (!this.#closed) {
      try {
        const nc = await connect({
          servers: this.opts.servers,
          name: this.opts.name ?? "clawmem-openclaw",
          timeout: 2000,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          authenticator: this.opts.credentialsFile
            ? credsAuthenticator(() => readFileSync(this.opts.credentialsFile!))
            : undefined,
        });
        if (this.#closed) {
          await nc.close();
          return;
        }
        this.#adopt(nc);
        if (this.#warned) this.opts.log.info(`clawmem: connected to NATS at ${this.opts.servers}`);
        this.#warned = false;
        return;
      } catch (err) {
        if (!this.#warned) {
          this.opts.log.warn(`clawmem: cannot reach NATS at ${this.opts.servers} (is \`clawmem up\` running?): ${(err as Error).message}; retrying in the background`);
          this.#warned = true;
        }
        await Promise.race([sleep(backoff), this.#closing]);
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
  }

  #adopt(nc: NatsConnection) {
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#up = true;
    this.#wake();
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") this.#up = false;
        if (s.type === "reconnect") {
          this.#up = true;
          this.#wake();
        }
      }
    })().catch(() => {});
    void nc.closed().then((err) => {
      if (this.#nc !== nc) return;
      this.#nc = undefined;
      this.#up = false;
      if (this.#closed) return;
      // Closed by the server for good (auth, permissions): start over.
      if (err) this.opts.log.warn(`clawmem: NATS connection closed: ${err.message}`);
      this.#start();
    });
  }
}
