// Auto-recall's cost on the turn's hot path: every recall hook call that ran
// a recall is timed from the call to the returned block (performance.now()),
// and a ring keeps the last durations for p50 and p99. The figures stay in
// memory and cost nothing to read; they leave the process only when the
// gateway's environment has CLAWMEM_PLUGIN_TIMINGS naming a file, which is
// then rewritten after each recall, after the hook has returned (the
// real-host check reads it). Unset, nothing is logged or written.
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import type { PluginLogger } from "./types.js";

/** The environment variable naming the timings file. */
export const TIMINGS_ENV = "CLAWMEM_PLUGIN_TIMINGS";
/** Durations kept: enough for a stable p99, small enough to sort per report. */
export const RING_SIZE = 512;

/** The nearest-rank percentile p (0 < p ≤ 100) of ascending values; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export interface TimingSummary {
  /** Durations summarised. */
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function summarize(values: readonly number[]): TimingSummary {
  const sorted = values.toSorted((a, b) => a - b);
  return { n: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1) ?? NaN };
}

/** The last size durations in a fixed buffer, with how many were ever recorded. */
export class TimingRing {
  #buf: Float64Array;
  #count = 0;

  constructor(readonly size = RING_SIZE) {
    this.#buf = new Float64Array(size);
  }

  record(ms: number): void {
    this.#buf[this.#count % this.size] = ms;
    this.#count++;
  }

  /** Durations recorded since the start, kept or not. */
  get count(): number {
    return this.#count;
  }

  /** The kept durations, oldest first. */
  values(): number[] {
    const kept = Math.min(this.#count, this.size);
    const out = new Array<number>(kept);
    for (let i = 0; i < kept; i++) out[i] = this.#buf[(this.#count - kept + i) % this.size];
    return out;
  }
}

/** What the timings file holds. */
export interface RecallReport extends TimingSummary {
  /** The gateway process: a restart starts the counts again. */
  pid: number;
  /** Recall hook calls timed since the gateway started. */
  count: number;
  /** Of those, the calls that returned a block. */
  withBlock: number;
  /** Timed calls by hook: the first of a run's recall hooks does the recall, the others return at once and are not timed. */
  byHook: Record<string, number>;
  /** The kept durations (ms), oldest first; n, p50Ms, p99Ms and maxMs are over them. */
  recentMs: number[];
}

/** Auto-recall's timings in one gateway process. */
export class RecallTimings {
  readonly ring: TimingRing;
  #withBlock = 0;
  #byHook: Record<string, number> = {};
  #file: string | undefined;
  #log: PluginLogger | undefined;
  #writing = false;
  #again = false;
  #warned = false;

  constructor(size = RING_SIZE) {
    this.ring = new TimingRing(size);
  }

  record(hook: string, ms: number, block: boolean): void {
    this.ring.record(ms);
    if (block) this.#withBlock++;
    this.#byHook[hook] = (this.#byHook[hook] ?? 0) + 1;
    if (this.#file) this.#schedule();
  }

  report(): RecallReport {
    const recentMs = this.ring.values().map((ms) => Math.round(ms * 1000) / 1000);
    return { pid: process.pid, count: this.ring.count, withBlock: this.#withBlock, byHook: { ...this.#byHook }, ...summarize(recentMs), recentMs };
  }

  /** Keeps report() in file from now on (written on the next record). */
  writeTo(file: string, log: PluginLogger): void {
    this.#file = file;
    this.#log = log;
  }

  // One write at a time, begun after the hook has returned; records that
  // arrive meanwhile are in the next write.
  #schedule(): void {
    if (this.#writing) {
      this.#again = true;
      return;
    }
    this.#writing = true;
    setImmediate(() => void this.#write());
  }

  async #write(): Promise<void> {
    const file = this.#file!;
    do {
      this.#again = false;
      try {
        await mkdir(dirname(file), { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        await writeFile(tmp, JSON.stringify(this.report()) + "\n");
        await rename(tmp, file);
      } catch (err) {
        if (!this.#warned) this.#log?.warn(`clawmem: cannot write the recall timings to ${file}: ${(err as Error).message}`);
        this.#warned = true;
      }
    } while (this.#again);
    this.#writing = false;
  }
}

/**
 * The file ${TIMINGS_ENV} names: an absolute path as it is, a relative one in
 * the plugin's state directory (none without one); unset or empty, none.
 */
export function timingsFile(env: string | undefined, stateDir: string | undefined): string | undefined {
  const v = env?.trim();
  if (!v) return undefined;
  if (isAbsolute(v)) return v;
  return stateDir ? join(stateDir, v) : undefined;
}
