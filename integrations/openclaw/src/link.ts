// One NATS connection to clawmem. Nothing connects until start() (the
// gateway's service start) or the first hook or tool needs it; a failed
// connect is retried in the background with backoff, and once connected the
// client reconnects by itself forever. Hooks and tools never wait on any of
// this: while the connection is not up they get "unavailable" at once
// (settled), and only the background event pump waits for it (ready).
//
// The link logs each change of reachability once: "clawmem is unreachable"
// when a connect fails or an established connection drops, "clawmem is
// back" when it is up again; a long outage is one line each way.
import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, nkeyAuthenticator, type Authenticator, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { PluginLogger } from "./types.js";

export interface LinkOptions {
  servers: string;
  credentialsFile?: string;
  name?: string;
  log: PluginLogger;
  /** Log "unreachable"/"back" (default true); a one-shot CLI command reports its own error instead. */
  logOutages?: boolean;
}

/**
 * idle: nothing tried yet; first: the first connect is in flight and nothing
 * has failed; up: connected; down: a connect failed or the connection is
 * lost (reconnecting in the background); closed: close() was called.
 */
export type LinkPhase = "idle" | "first" | "up" | "down" | "closed";

export interface Conn {
  nc: NatsConnection;
  js: JetStreamClient;
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

/**
 * The authenticator for a credentials file: an nkey seed as `clawmem agent
 * add` writes for the embedded server (a line starting "SU"), else a NATS
 * .creds file (JWT and seed) as an operator-mode server issues. The file is
 * read at each connect, so a replaced file takes effect on reconnect.
 */
export function authenticator(file: string): Authenticator {
  const seed = () => {
    const text = readFileSync(file, "utf8");
    const line = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l.startsWith("SU"));
    return line !== undefined && !text.includes("BEGIN NATS USER JWT") ? new TextEncoder().encode(line) : undefined;
  };
  return (nonce?: string) => {
    const s = seed();
    if (s) return nkeyAuthenticator(s)(nonce);
    return credsAuthenticator(() => readFileSync(file))(nonce);
  };
}

export class Link {
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #phase: LinkPhase = "idle";
  #loop: Promise<void> | undefined;
  #onClose!: () => void;
  readonly #closing = new Promise<void>((resolve) => (this.#onClose = resolve));
  #waiters = new Set<() => void>();
  /** What was last logged: undefined (nothing yet), reachable or not. */
  #reachable: boolean | undefined;
  /** Whether the query service answered the last request (false: "no responders" was logged). */
  #serviceAnswers = true;

  constructor(private readonly opts: LinkOptions) {}

  get servers(): string {
    return this.opts.servers;
  }

  get phase(): LinkPhase {
    return this.#phase;
  }

  get closed(): boolean {
    return this.#phase === "closed";
  }

  /** Starts connecting in the background, if it has not started yet. */
  start(): void {
    this.#start();
  }

  /** The connection if it is up now; otherwise starts connecting and returns undefined. */
  current(): Conn | undefined {
    this.#start();
    return this.#phase === "up" && this.#nc && this.#js ? { nc: this.#nc, js: this.#js } : undefined;
  }

  /** Waits up to ms for the connection to be up: for background work that can wait. */
  async ready(ms: number): Promise<Conn | undefined> {
    const now = this.current();
    if (now || ms <= 0 || this.closed) return now;
    await this.#wait(ms);
    return this.current();
  }

  /**
   * The connection if it is up; undefined at once if it is down (a connect
   * failed, or the connection dropped and the client is reconnecting). Only
   * while the very first connect is still in flight does it wait for that
   * attempt's outcome, and at most ms: for tools and auto-recall, which must
   * not wait on a clawmem that is not there.
   */
  async settled(ms: number): Promise<Conn | undefined> {
    const now = this.current();
    if (now || this.#phase !== "first" || ms <= 0) return now;
    await this.#wait(ms);
    return this.current();
  }

  /**
   * Records whether clawmem's query service answered a request over an up
   * connection ("no responders" means NATS is there but clawmem is not);
   * logged once per change.
   */
  noteService(answers: boolean, subject?: string): void {
    if (answers === this.#serviceAnswers) return;
    this.#serviceAnswers = answers;
    if (!answers) {
      this.opts.log.warn(`clawmem: its query service does not answer on NATS at ${this.opts.servers} (no responders on ${subject ?? "clawmem.v1.*"}); is clawmem running against this NATS server?`);
    } else {
      this.opts.log.info(`clawmem: its query service answers again on NATS at ${this.opts.servers}`);
    }
  }

  /** Closes the connection (flushing what it has buffered) and stops reconnecting. */
  async close(): Promise<void> {
    this.#phase = "closed";
    this.#onClose();
    this.#wake();
    const nc = this.#nc;
    this.#nc = undefined;
    if (nc && !nc.isClosed()) {
      await nc.drain().catch(() => nc.close());
    }
    await this.#loop;
  }

  async #wait(ms: number): Promise<void> {
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.#waiters.add(wake);
    try {
      await within(ms, woken, undefined);
    } finally {
      this.#waiters.delete(wake);
    }
  }

  #wake() {
    for (const w of this.#waiters) w();
  }

  /** Moves to phase and logs a change of reachability once. */
  #set(phase: "up" | "down", detail?: string) {
    if (this.closed) return;
    this.#phase = phase;
    this.#wake();
    const reachable = phase === "up";
    if (reachable === this.#reachable || (reachable && this.#reachable === undefined)) {
      this.#reachable = reachable;
      return;
    }
    this.#reachable = reachable;
    if (this.opts.logOutages === false) return;
    if (reachable) {
      this.opts.log.info(`clawmem is back: connected to NATS at ${this.opts.servers}`);
    } else {
      this.opts.log.warn(`clawmem is unreachable: NATS at ${this.opts.servers}: ${detail ?? "not connected"} (is \`clawmem up\` running?); `
        + "memory tools answer \"unavailable\", auto-recall is skipped, and hook events are kept and retried in the background");
    }
  }

  #start() {
    // One connection at a time: once up, the client reconnects by itself.
    if (this.#loop || this.closed || this.#nc) return;
    if (this.#phase === "idle") this.#phase = "first";
    this.#loop = this.#connectLoop().finally(() => {
      this.#loop = undefined;
    });
  }

  async #connectLoop() {
    let backoff = 250;
    while (!this.closed) {
      try {
        const nc = await connect({
          servers: this.opts.servers,
          name: this.opts.name ?? "clawmem-openclaw",
          timeout: 2000,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          authenticator: this.opts.credentialsFile ? authenticator(this.opts.credentialsFile) : undefined,
        });
        if (this.closed) {
          await nc.close();
          return;
        }
        this.#adopt(nc);
        return;
      } catch (err) {
        this.#set("down", (err as Error).message);
        await Promise.race([sleep(backoff), this.#closing]);
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
  }

  #adopt(nc: NatsConnection) {
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#set("up");
    void (async () => {
      for await (const s of nc.status()) {
        if (this.#nc !== nc) return;
        if (s.type === "disconnect") this.#set("down", "lost the connection");
        if (s.type === "reconnect") this.#set("up");
      }
    })().catch(() => {});
    void nc.closed().then((err) => {
      if (this.#nc !== nc) return;
      this.#nc = undefined;
      if (this.closed) return;
      // Closed by the server for good (auth, permissions): start over.
      this.#set("down", err ? `connection closed: ${err.message}` : "connection closed");
      this.#start();
    });
  }
}
