// The outbox file: the hook events not yet acknowledged by JetStream, saved
// so that a gateway restart (or crash) does not lose them. JSON Lines, one
// event per line, oldest first:
//
//   {"v":1,"kind":"agent_end","agent":"main","subject":"clawmem.hooks.v1.main.agent_end","msgId":"agent_end.main.…","data":"<envelope JSON>"}
// (a file written before hook requests names the events stream's subject
// clawmem.events.<kind>.<agent>; it is read and sent the new way)
//
// data is the exact envelope text that is published, and msgId the
// Nats-Msg-Id it was first published with, so delivering a saved event again
// is deduplicated by JetStream. Every save replaces the whole file atomically
// (a temporary file, fsync, rename), so a crash leaves the old file or the
// new one, never a mix. Reading skips a line it cannot parse (a truncated or
// damaged file) and keeps the others.
//
// One process at a time uses a file: outbox.lock holds the owner's pid, and a
// lock whose process is gone is taken over.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { hookSubject, type EventKind, type OutgoingEvent } from "./events.js";

export const OUTBOX_FILE = "outbox.jsonl";
export const LOCK_FILE = "outbox.lock";

const KINDS: ReadonlySet<string> = new Set<EventKind>(["agent_end", "before_reset", "session_end", "command_new", "command_reset"]);
const decoder = new TextDecoder();
const encoder = new TextEncoder();

const lines = new WeakMap<OutgoingEvent, string>();

/** One event as a line of the file, newline included (encoded once per event). */
export function encodeLine(ev: OutgoingEvent): string {
  let l = lines.get(ev);
  if (l === undefined) {
    l = JSON.stringify({ v: 1, kind: ev.kind, agent: ev.agent, subject: ev.subject, msgId: ev.msgId, data: decoder.decode(ev.data) }) + "\n";
    lines.set(ev, l);
  }
  return l;
}

/** The event a line holds, or undefined for a line that is not one. */
export function decodeLine(line: string): OutgoingEvent | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!o || typeof o !== "object" || o.v !== 1) return undefined;
  const { kind, agent, subject, msgId, data } = o;
  if (typeof kind !== "string" || !KINDS.has(kind) || typeof agent !== "string" || agent === "" || typeof msgId !== "string" || msgId === ""
    || typeof data !== "string" || (subject !== hookSubject(kind as EventKind, agent) && subject !== `clawmem.events.${kind}.${agent}`)) {
    return undefined;
  }
  return { kind: kind as EventKind, agent, subject: hookSubject(kind as EventKind, agent), msgId, data: encoder.encode(data) };
}

const sizes = new WeakMap<OutgoingEvent, number>();

/** Bytes an event takes in the file (computed once per event). */
export function lineBytes(ev: OutgoingEvent): number {
  let n = sizes.get(ev);
  if (n === undefined) {
    n = Buffer.byteLength(encodeLine(ev));
    sizes.set(ev, n);
  }
  return n;
}

export interface LoadResult {
  events: OutgoingEvent[];
  /** Lines that were not events (truncated, garbage), with the first few line numbers. */
  badLines: number;
  badLineNumbers: number[];
  /** The last line had no newline: the file was cut short. */
  truncated: boolean;
}

/** Parses the text of an outbox file; never throws. */
export function parseOutbox(text: string): LoadResult {
  const out: LoadResult = { events: [], badLines: 0, badLineNumbers: [], truncated: false };
  const all = text.split("\n");
  const unterminated = all.at(-1) !== ""; // a whole file ends with a newline
  if (!unterminated) all.pop();
  all.forEach((line, i) => {
    if (line.trim() === "") return;
    const ev = decodeLine(line);
    if (ev) {
      out.events.push(ev);
      return;
    }
    out.badLines++;
    if (out.badLineNumbers.length < 5) out.badLineNumbers.push(i + 1);
    if (unterminated && i === all.length - 1) out.truncated = true;
  });
  return out;
}

/**
 * Keeps the newest events that fit maxEvents and maxBytes (the newest one
 * always stays, whatever its size) and returns how many of the oldest it
 * dropped.
 */
export function trimOldest(events: OutgoingEvent[], maxEvents: number, maxBytes: number, size: (ev: OutgoingEvent) => number = lineBytes): number {
  let bytes = 0;
  let keep = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const b = size(events[i]);
    if (keep > 0 && (keep >= maxEvents || bytes + b > maxBytes)) break;
    bytes += b;
    keep++;
  }
  const dropped = events.length - keep;
  events.splice(0, dropped);
  return dropped;
}

/** The temporary file of a save; the exit save has its own, apart from an async save still running. */
function tmpName(file: string, kind = "save"): string {
  return `${file}.${process.pid}.${kind}.tmp`;
}

/** fsyncs a directory so a rename in it is durable; some platforms refuse, which is fine. */
function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // best effort
  }
}

/**
 * Replaces file with the given lines atomically: the text goes to a
 * temporary file next to it, is fsynced, and is renamed over it. No lines
 * removes the file. On any error the file is as it was and the temporary
 * file is gone.
 */
export async function writeAtomic(file: string, lines: string[]): Promise<void> {
  if (lines.length === 0) {
    await rm(file, { force: true });
    return;
  }
  const tmp = tmpName(file);
  try {
    const fh = await open(tmp, "w", 0o600);
    try {
      await fh.writeFile(lines.join(""));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  syncDir(dirname(file));
}

/** writeAtomic, synchronously: for the process's exit. */
export function writeAtomicSync(file: string, lines: string[]): void {
  if (lines.length === 0) {
    rmSync(file, { force: true });
    return;
  }
  const tmp = tmpName(file, "exit");
  try {
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeFileSync(fd, lines.join(""));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  syncDir(dirname(file));
}

/** Removes temporary files a crash in the middle of a save left next to file. */
export function removeStaleTemps(file: string): void {
  const prefix = `${basename(file)}.`;
  try {
    for (const name of readdirSync(dirname(file))) {
      if (name.startsWith(prefix) && name.endsWith(".tmp")) rmSync(join(dirname(file), name), { force: true });
    }
  } catch {
    // a missing directory has none
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes dir's outbox lock for this process. Returns undefined when it got
 * it, else the pid of the live process that holds it. A lock whose process
 * is gone (or that names this very process: a container restart reuses
 * pids) is taken over.
 */
export function lockOutbox(dir: string): number | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
      return undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let pid = NaN;
    try {
      pid = Number.parseInt(readFileSync(lock, "utf8"), 10);
    } catch {
      // removed meanwhile, or unreadable: try again
    }
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) return pid;
    try {
      unlinkSync(lock);
    } catch {
      // someone else removed it
    }
  }
  throw new Error(`cannot take ${lock}`);
}

/** Releases the lock if this process holds it. */
export function unlockOutbox(dir: string): void {
  const lock = join(dir, LOCK_FILE);
  try {
    if (Number.parseInt(readFileSync(lock, "utf8"), 10) === process.pid) unlinkSync(lock);
  } catch {
    // already gone
  }
}
