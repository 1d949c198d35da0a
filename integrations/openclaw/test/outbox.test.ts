// Unit tests of the durable outbox: the file format, the bounds, damaged
// files, atomic saves, the lock, and where the file lives. No clawmem: the
// outbox gets a link that never connects.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseConfig } from "../src/config.js";
import { agentEndBody, buildEvent, sessionBody, type OutgoingEvent } from "../src/events.js";
import { pluginStateDir, register } from "../src/index.js";
import type { Link } from "../src/link.js";
import { Outbox, SAVE_DELAY_MS } from "../src/outbox.js";
import { encodeLine, LOCK_FILE, lockOutbox, OUTBOX_FILE, parseOutbox, trimOldest, unlockOutbox, writeAtomic } from "../src/outboxfile.js";
import { Runtimes } from "../src/runtime.js";
import { FakeApi, memoryLogger, tempDir, waitFor } from "./helpers.js";

/** A link that is never up: the pump waits on it, a little at a time, until the outbox closes. */
const downLink = {
  closed: false,
  ready: () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 20)),
} as unknown as Link;

function event(i: number, text = `turn ${i}`): OutgoingEvent {
  return buildEvent("agent_end", "main", agentEndBody({ messages: [{ role: "user", content: text }], success: true }),
    { sessionKey: "agent:main:outbox", runId: `run-${i}`, ts: 1764700000000 + i })!;
}

function same(a: OutgoingEvent, b: OutgoingEvent) {
  assert.deepEqual({ kind: a.kind, agent: a.agent, subject: a.subject, msgId: a.msgId }, { kind: b.kind, agent: b.agent, subject: b.subject, msgId: b.msgId });
  assert.ok(Buffer.from(a.data).equals(Buffer.from(b.data)), `the bytes of ${a.msgId} changed`);
}

function fileLines(file: string): string[] {
  return readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
}

function outbox(file: string | undefined, limits = { maxEvents: 1000, maxBytes: 8 << 20 }) {
  const log = memoryLogger();
  const o = new Outbox(downLink, limits, log);
  if (file) o.attach(file);
  return { o, log };
}

describe("outbox file", () => {
  it("round-trips events byte for byte, Msg-Id included, and saves while they are undelivered", async () => {
    const odd = "é \u2028 <b> \ud800 \"q\" \\ \n\t\u0000 🦀";
    const events = [
      event(0, odd),
      buildEvent("session_end", "ops-1", sessionBody({ sessionId: "s", messageCount: 2, reason: "idle" }), { sessionKey: "agent:ops-1:x", sessionId: "s", ts: 5 })!,
      buildEvent("command_new", "main", sessionBody({ sessionId: "s2", reason: "new" }), { ts: 6 })!,
    ];
    const parsed = parseOutbox(events.map(encodeLine).join(""));
    assert.equal(parsed.badLines, 0);
    assert.equal(parsed.events.length, 3);
    parsed.events.forEach((e, i) => same(e, events[i]));

    // Through the outbox: saved a moment after the pushes, without any shutdown.
    const file = join(tempDir("clawmem-outbox-"), OUTBOX_FILE);
    const { o } = outbox(file);
    for (const e of events) o.push(e);
    await waitFor("the outbox to save", () => o.fileStats().saves >= 1, SAVE_DELAY_MS * 6, 20);
    assert.equal(fileLines(file).length, 3);
    const { o: next } = outbox(file);
    assert.equal(next.stats().queued, 3);
    assert.equal(next.fileStats().loaded, 3);
    await o.close();
    await next.close();
  });

  it("is bounded by bufferMaxEvents and outboxMaxBytes, dropping the oldest with a logged count", async () => {
    const dir = tempDir("clawmem-outbox-");
    const file = join(dir, OUTBOX_FILE);
    const { o, log } = outbox(file, { maxEvents: 3, maxBytes: 8 << 20 });
    const events = Array.from({ length: 5 }, (_, i) => event(i));
    for (const e of events) o.push(e);
    assert.deepEqual(o.stats(), { queued: 3, published: 0, duplicates: 0, dropped: 2, rejected: 0 });
    assert.deepEqual(log.lines.filter((l) => /dropped the oldest/.test(l)), [
      "warn clawmem: event buffer full (3); dropped the oldest event (1 dropped so far)",
      "warn clawmem: event buffer full (3); dropped the oldest event (2 dropped so far)",
    ]);
    await o.close();
    assert.match(log.lines.join("\n"), /3 hook events not delivered at shutdown; saved to .*outbox\.jsonl/);
    const kept = parseOutbox(readFileSync(file, "utf8")).events;
    assert.deepEqual(kept.map((e) => e.msgId), events.slice(2).map((e) => e.msgId), "the newest three, oldest first");

    // By size: 30 KB events under a 64 KiB bound keep two.
    const big = Array.from({ length: 4 }, (_, i) => event(10 + i, "x".repeat(30_000) + i));
    const sized = outbox(join(dir, "sized.jsonl"), { maxEvents: 1000, maxBytes: 65_536 });
    for (const e of big) sized.o.push(e);
    assert.equal(sized.o.stats().queued, 2);
    assert.equal(sized.o.stats().dropped, 2);
    assert.match(sized.log.lines.join("\n"), /event buffer over 65536 bytes \(outboxMaxBytes\); dropped the oldest event \(2 dropped so far\)/);
    // The newest event stays even alone over the bound.
    const huge = [event(20, "y".repeat(100_000))];
    assert.equal(trimOldest(huge, 10, 65_536), 0);
    await sized.o.close();
    assert.ok(readFileSync(join(dir, "sized.jsonl")).length <= 65_536);

    // A file over the bounds of the next start is trimmed when loaded.
    const { o: smaller, log: log2 } = outbox(file, { maxEvents: 2, maxBytes: 8 << 20 });
    assert.equal(smaller.fileStats().loaded, 3);
    assert.deepEqual(smaller.stats(), { queued: 2, published: 0, duplicates: 0, dropped: 1, rejected: 0 });
    assert.match(log2.lines.join("\n"), /dropped the oldest event \(1 dropped so far\)/);
    await smaller.close();
    assert.equal(fileLines(file).length, 2);
  });

  it("keeps the whole events of a truncated file and says it was cut short", async () => {
    const file = join(tempDir("clawmem-outbox-"), OUTBOX_FILE);
    const events = Array.from({ length: 4 }, (_, i) => event(i));
    const text = events.map(encodeLine).join("");
    writeFileSync(file, text.slice(0, text.length - Math.floor(encodeLine(events[3]).length / 2)));
    const { o, log } = outbox(file);
    assert.equal(o.stats().queued, 3);
    assert.deepEqual({ ...o.fileStats(), file: undefined }, { file: undefined, loaded: 3, badLines: 1, saves: 0 });
    const warn = log.lines.find((l) => l.startsWith("warn"))!;
    assert.match(warn, /outbox file .*outbox\.jsonl is damaged \(cut short: its last line is incomplete\): skipped 1 unreadable line \(line 4\); kept the 3 readable events/);
    assert.match(log.lines.join("\n"), /3 undelivered hook events loaded from/);
    await o.close();
    // Rewritten whole.
    const reread = parseOutbox(readFileSync(file, "utf8"));
    assert.equal(reread.badLines, 0);
    reread.events.forEach((e, i) => same(e, events[i]));
  });

  it("reads a file written before hook requests and sends its events the new way", async () => {
    const file = join(tempDir("clawmem-outbox-"), OUTBOX_FILE);
    const a = event(1);
    const old = JSON.parse(encodeLine(a));
    old.subject = `clawmem.events.${a.kind}.${a.agent}`;
    writeFileSync(file, JSON.stringify(old) + "\n");
    const { o } = outbox(file);
    assert.equal(o.stats().queued, 1);
    assert.equal(o.fileStats().badLines, 0);
    await o.close();
    const reread = parseOutbox(readFileSync(file, "utf8"));
    assert.equal(reread.events[0].subject, `clawmem.hooks.v1.${a.agent}.${a.kind}`);
    assert.equal(reread.events[0].msgId, a.msgId);
  });

  it("skips and counts garbage lines, keeping the readable events", async () => {
    const file = join(tempDir("clawmem-outbox-"), OUTBOX_FILE);
    const [a, b] = [event(1), event(2)];
    const wrongSubject = JSON.parse(encodeLine(a));
    wrongSubject.subject = "clawmem.events.agent_end.other";
    writeFileSync(file, [
      "not json at all",
      '{"v":2,"kind":"agent_end"}',
      '{"v":1,"kind":"agent_end","agent":"main"}',
      encodeLine(a).trimEnd(),
      "",
      "\u0000\u0001\u0002 binary junk",
      JSON.stringify(wrongSubject),
      "[1,2,3]",
      encodeLine(b).trimEnd(),
      "",
    ].join("\n"));
    const { o, log } = outbox(file);
    assert.equal(o.stats().queued, 2);
    assert.equal(o.fileStats().badLines, 6);
    assert.match(log.lines.join("\n"), /is damaged: skipped 6 unreadable lines \(line 1, 2, 3, 6, 7, \.\.\.\); kept the 2 readable events/);
    assert.ok(!log.lines.join("\n").includes("cut short"));
    await o.close();
    assert.deepEqual(parseOutbox(readFileSync(file, "utf8")).events.map((e) => e.msgId), [a.msgId, b.msgId]);
  });

  it("saves atomically: a reader sees the old file or the new, a failed save leaves nothing behind", async () => {
    const dir = tempDir("clawmem-outbox-");
    const file = join(dir, OUTBOX_FILE);
    const versions = [Array.from({ length: 40 }, (_, i) => event(i, "a".repeat(4000) + i)), Array.from({ length: 70 }, (_, i) => event(100 + i, "b".repeat(3000) + i))];
    const lines = versions.map((v) => v.map(encodeLine));
    await writeAtomic(file, lines[0]);
    let reads = 0;
    let writing = true;
    const writer = (async () => {
      for (let i = 1; i <= 30; i++) await writeAtomic(file, lines[i % 2]);
      writing = false;
    })();
    while (writing) {
      const r = parseOutbox(readFileSync(file, "utf8"));
      assert.equal(r.badLines, 0, "a reader saw a partly written file");
      assert.ok(r.events.length === 40 || r.events.length === 70, `a reader saw ${r.events.length} events`);
      reads++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await writer;
    assert.ok(reads > 5, `only ${reads} reads raced the writes`);
    assert.deepEqual(readdirSync(dir), [OUTBOX_FILE], "no temporary file is left");

    // A save that cannot complete (here: the target is a directory) changes nothing and leaves no temporary file.
    const blocked = join(dir, "blocked.jsonl");
    mkdirSync(join(blocked, "inside"), { recursive: true });
    await assert.rejects(writeAtomic(blocked, lines[0]));
    assert.deepEqual(readdirSync(dir).sort(), ["blocked.jsonl", OUTBOX_FILE]);
    assert.deepEqual(readdirSync(blocked), ["inside"]);

    // What a crash in the middle of a save leaves (a partial temporary file) is ignored and removed.
    writeFileSync(`${file}.4242.save.tmp`, lines[1].join("").slice(0, 5000));
    const { o, log } = outbox(file);
    assert.equal(o.stats().queued, 40);
    assert.equal(o.fileStats().badLines, 0);
    assert.ok(!log.lines.some((l) => l.startsWith("warn")), log.lines.join("\n"));
    assert.ok(!existsSync(`${file}.4242.save.tmp`));
    await o.close();
  });

  it("removes the file once everything is delivered", async () => {
    const file = join(tempDir("clawmem-outbox-"), OUTBOX_FILE);
    writeFileSync(file, "");
    const { o } = outbox(file);
    assert.equal(o.stats().queued, 0);
    await o.close();
    assert.ok(!existsSync(file), "an empty queue leaves no file");
  });
});

describe("outbox lock and location", () => {
  it("lets one process use a state directory; a dead owner's lock is taken over", () => {
    const dir = tempDir("clawmem-outbox-");
    assert.equal(lockOutbox(dir), undefined);
    assert.equal(readFileSync(join(dir, LOCK_FILE), "utf8"), `${process.pid}\n`);
    unlockOutbox(dir);
    assert.ok(!existsSync(join(dir, LOCK_FILE)));
    // The test runner that started this process is alive: its lock holds.
    writeFileSync(join(dir, LOCK_FILE), `${process.ppid}\n`);
    assert.equal(lockOutbox(dir), process.ppid);
    unlockOutbox(dir);
    assert.ok(existsSync(join(dir, LOCK_FILE)), "another process's lock is not removed");
    // No such process (beyond any pid_max): stale, taken over.
    writeFileSync(join(dir, LOCK_FILE), "999999999\n");
    assert.equal(lockOutbox(dir), undefined);
    writeFileSync(join(dir, LOCK_FILE), "garbage");
    unlockOutbox(dir);
    assert.equal(lockOutbox(dir), undefined, "an unreadable lock is stale");
    unlockOutbox(dir);
  });

  it("keeps events in memory when another live gateway holds the directory", async () => {
    const dir = tempDir("clawmem-outbox-");
    writeFileSync(join(dir, LOCK_FILE), `${process.ppid}\n`);
    const api = new FakeApi({ natsUrl: "nats://127.0.0.1:1", stateDir: dir });
    const rt = register(api, new Runtimes())!;
    await api.start();
    await rt.whenStarted();
    assert.equal(rt.outbox.fileStats().file, undefined);
    assert.match(api.logger.lines.join("\n"), new RegExp(`outbox\\.lock is held by process ${process.ppid}`));
    await api.stop();
  });

  it("hands the file over from a runtime that stops to the one that replaces it in the same process", async () => {
    const dir = tempDir("clawmem-outbox-");
    const first = new FakeApi({ natsUrl: "nats://127.0.0.1:1", stateDir: dir, bufferMaxEvents: 10 });
    const rt1 = register(first, new Runtimes())!;
    await first.start();
    await rt1.whenStarted();
    const second = new FakeApi({ natsUrl: "nats://127.0.0.1:1", stateDir: dir, bufferMaxEvents: 20 });
    const rt2 = register(second, new Runtimes())!;
    await second.start();
    for (let i = 0; i < 3; i++) rt1.outbox.push(event(i));
    let attached = false;
    void rt2.whenStarted().then(() => (attached = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(attached, false, "waits for the first runtime to let go");
    await first.stop();
    await rt2.whenStarted();
    assert.equal(rt2.outbox.fileStats().loaded, 3);
    assert.equal(rt2.outbox.stats().queued, 3);
    await second.stop();
  });

  it("lives in plugins/clawmem of OpenClaw's state directory, unless stateDir says otherwise", () => {
    const cfg = parseConfig({});
    const api = new FakeApi({});
    const env = process.env.OPENCLAW_STATE_DIR;
    try {
      assert.equal(pluginStateDir(parseConfig({ stateDir: "/data/cm" }), { stateDir: "/oc" }, api), "/data/cm");
      assert.equal(pluginStateDir(cfg, { stateDir: "/oc" }, api), "/oc/plugins/clawmem");
      const withRuntime = Object.assign(new FakeApi({}), { runtime: { version: "2026.9.6", state: { resolveStateDir: () => "/from-api" } } });
      assert.equal(pluginStateDir(cfg, {}, withRuntime), "/from-api/plugins/clawmem");
      process.env.OPENCLAW_STATE_DIR = "~/oc-state";
      assert.equal(pluginStateDir(cfg, undefined, api), join(homedir(), "oc-state", "plugins", "clawmem"));
      delete process.env.OPENCLAW_STATE_DIR;
      assert.equal(pluginStateDir(cfg, undefined, api), join(homedir(), ".openclaw", "plugins", "clawmem"));
    } finally {
      if (env === undefined) delete process.env.OPENCLAW_STATE_DIR;
      else process.env.OPENCLAW_STATE_DIR = env;
    }
  });

  it("never throws out of register() or the service's start, whatever the directory holds", async () => {
    const dir = tempDir("clawmem-outbox-");
    // The outbox file is a directory: unreadable, so it is left alone and events stay in memory.
    mkdirSync(join(dir, OUTBOX_FILE));
    const api = new FakeApi({ natsUrl: "nats://127.0.0.1:1", stateDir: dir });
    const rt = register(api, new Runtimes())!;
    await assert.doesNotReject(api.start());
    await rt.whenStarted();
    assert.match(api.logger.lines.join("\n"), /cannot use the outbox file in .*; undelivered hook events are kept in memory only/);
    assert.equal(rt.outbox.fileStats().file, undefined);
    await api.stop();
    assert.ok(!existsSync(join(dir, LOCK_FILE)), "the lock is released");
    // A state directory that cannot be created (a file is in the way).
    const blocked = join(dir, "file");
    writeFileSync(blocked, "");
    const api2 = new FakeApi({ natsUrl: "nats://127.0.0.1:1", stateDir: join(blocked, "sub") });
    const rt2 = register(api2, new Runtimes())!;
    await assert.doesNotReject(api2.start());
    await rt2.whenStarted();
    assert.match(api2.logger.lines.join("\n"), /cannot use the outbox file/);
    await api2.stop();
  });
});
