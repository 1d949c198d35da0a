// Unit tests: config, identity, message reduction, event envelopes, Msg-Ids,
// the recall block bound, registration per mode, the read retry, the recall
// timings. No clawmem needed.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import plugin, { hookGateWarnings, MANIFEST, needsLegacyRecallHook, offersTurnPrepare, recallKey, register } from "../src/index.js";
import { embeddingProbe, memoryCapability, memoryPromptSection, providerStatus } from "../src/capability.js";
import { Runtimes } from "../src/runtime.js";
import { parseConfig, resolveAgent, ConfigError } from "../src/config.js";
import { agentEndBody, buildEvent, MAX_EVENT_BYTES, sessionBody, slimMessage } from "../src/events.js";
import { canonicalHash, deriveMsgId } from "../src/msgid.js";
import { fitBlock, MAX_EXCLUDE, RecentInjections } from "../src/recall.js";
import { percentile, RecallTimings, summarize, TimingRing, TIMINGS_ENV, timingsFile } from "../src/timings.js";
import { isForwarded, TOOL_SPECS, requestBody, toolNames } from "../src/tools.js";
import { errors as natsErrors } from "@nats-io/transport-node";
import type { Link } from "../src/link.js";
import { READ_ATTEMPT_MS, request, UnavailableError } from "../src/service.js";
import { FakeApi, fixture, freePort, memoryLogger, pluginDir, schemaErrors, tempDir, waitFor, wireSchema } from "./helpers.js";

describe("config", () => {
  it("applies the defaults", () => {
    const c = parseConfig(undefined);
    assert.equal(c.natsUrl, "nats://127.0.0.1:4244");
    assert.equal(c.autoRecall, true);
    assert.equal(c.autoCapture, true);
    assert.equal(c.recallTimeoutMs, 1500);
    assert.equal(c.recallTokenBudget, 0);
    assert.equal(c.enableManagementTools, false);
    assert.equal(c.bufferMaxEvents, 1000);
    assert.equal(c.outboxMaxBytes, 8 << 20);
    assert.equal(c.persistOutbox, true);
    assert.equal(c.stateDir, undefined);
    assert.equal(c.requestTimeoutMs, 10_000);
  });

  it("expands ~ and ${ENV} in stateDir", () => {
    process.env.CLAWMEM_TEST_STATE = "/srv/oc";
    assert.equal(parseConfig({ stateDir: "~/cm" }).stateDir, join(homedir(), "cm"));
    assert.equal(parseConfig({ stateDir: "${CLAWMEM_TEST_STATE}/cm" }).stateDir, "/srv/oc/cm");
  });

  it("expands ${ENV} and refuses bad values", () => {
    process.env.CLAWMEM_TEST_NATS = "nats://10.0.0.5:4222";
    assert.equal(parseConfig({ natsUrl: "${CLAWMEM_TEST_NATS}" }).natsUrl, "nats://10.0.0.5:4222");
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ natsUrl: "${CLAWMEM_TEST_UNSET_VAR}" }, /CLAWMEM_TEST_UNSET_VAR is not set/],
      [{ recallTimeoutMs: 50 }, /recallTimeoutMs must be an integer from 100/],
      [{ recallTimeoutMs: 1.5 }, /recallTimeoutMs/],
      [{ autoRecall: "yes" }, /autoRecall must be true or false/],
      [{ agents: { main: "no spaces" } }, /agents\.main must be a clawmem agent id/],
      [{ defaultAgent: "a.b" }, /defaultAgent/],
      [{ outboxMaxBytes: 1000 }, /outboxMaxBytes must be an integer from 65536/],
      [{ persistOutbox: "no" }, /persistOutbox must be true or false/],
      [{ stateDir: 7 }, /stateDir must be a string/],
    ];
    for (const [raw, want] of bad) assert.throws(() => parseConfig(raw), (e: Error) => e instanceof ConfigError && want.test(e.message));
  });

  it("matches the manifest's schema and defaults", () => {
    const schema = MANIFEST.configSchema as { properties: Record<string, { default?: unknown }> };
    const c = parseConfig({}) as unknown as Record<string, unknown>;
    for (const [key, prop] of Object.entries(schema.properties)) {
      assert.ok(key in c, `manifest key ${key} is not parsed`);
      if (prop.default !== undefined) assert.deepEqual(c[key], prop.default, `default of ${key}`);
    }
  });
});

describe("agent identity", () => {
  const cfg = parseConfig({ agents: { "support-bot": "support" } });
  const cases: Array<[string, object | undefined, string | undefined, object?]> = [
    ["ctx.agentId", { agentId: "main" }, "main"],
    ["mapped", { agentId: "support-bot" }, "support"],
    ["from the session key", { sessionKey: "agent:research:telegram:direct:42" }, "research"],
    ["none: refused", {}, undefined],
    ["none: the configured default", {}, "ops", { defaultAgent: "ops" }],
    ["not a subject token: refused", { agentId: "a.b" }, undefined],
  ];
  for (const [name, ctx, want, extra] of cases) {
    it(name, () => assert.equal(resolveAgent(extra ? parseConfig(extra) : cfg, ctx as never), want));
  }
});

describe("messages and events", () => {
  it("keeps role, text blocks, integer timestamp and id; empties other roles", () => {
    assert.deepEqual(slimMessage({ role: "user", content: "hi", timestamp: 1764684000000, id: "ab12cd34" }),
      { role: "user", content: "hi", timestamp: 1764684000000, id: "ab12cd34" });
    assert.deepEqual(slimMessage({
      role: "assistant", timestamp: 1.5, provider: "x",
      content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "a" }, { type: "toolCall", id: "c", name: "t", arguments: {} }, { type: "text", text: "b" }],
    }), { role: "assistant", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] });
    assert.deepEqual(slimMessage({ role: "toolResult", toolCallId: "c", content: [{ type: "text", text: "big" }] }), { role: "toolResult", content: "" });
    assert.deepEqual(slimMessage({ role: "user", content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }), { role: "user", content: [] });
    assert.deepEqual(slimMessage(null), { role: "unknown", content: "" });
  });

  it("builds the schemas.HookEvent envelope", () => {
    const conv = fixture("conversation.json");
    const ev = buildEvent("agent_end", "main", agentEndBody({ messages: conv.turns[0].messages, success: true, durationMs: 12 }),
      { sessionKey: "agent:main:x", sessionId: "s1", runId: "r1", channelId: "telegram", ts: 1764684000000 })!;
    assert.equal(ev.subject, "clawmem.hooks.v1.main.agent_end");
    const env = JSON.parse(Buffer.from(ev.data).toString());
    assert.deepEqual(Object.keys(env), ["v", "kind", "agentId", "sessionKey", "sessionId", "runId", "channelId", "ts", "event"]);
    assert.equal(env.v, 1);
    assert.equal(env.event.success, true);
    assert.equal(env.event.durationMs, 12);
    assert.equal(env.event.messages.length, 2);
    assert.match(ev.msgId, /^agent_end\.main\.[0-9a-f]{32}$/);
  });

  it("is valid against clawmem's generated JSON Schemas", () => {
    const conv = fixture("conversation.json");
    const history = conv.turns.flatMap((t: { messages: unknown[] }) => t.messages);
    const meta = { sessionKey: conv.ctx.sessionKey, sessionId: conv.ctx.sessionId, runId: "r1", channelId: "telegram", ts: 1764684000000 };
    const cases: Array<[string, ReturnType<typeof buildEvent>]> = [
      ["agent-end-event", buildEvent("agent_end", "main", agentEndBody({ messages: history, success: false, error: "boom", durationMs: 5 }), meta)],
      ["session-event", buildEvent("before_reset", "main", sessionBody({ sessionId: "s1", messages: history, reason: "new", sessionFile: "/x.jsonl" }), meta)],
      ["session-event", buildEvent("session_end", "main", sessionBody({ sessionId: "s1", messageCount: 4, reason: "idle", nextSessionId: "s2" }), meta)],
      ["session-event", buildEvent("command_new", "main", sessionBody({ sessionId: "s1", reason: "new" }), { ts: 3 })],
    ];
    for (const [eventSchema, ev] of cases) {
      const env = JSON.parse(Buffer.from(ev!.data).toString());
      assert.deepEqual(schemaErrors(wireSchema("hook-event"), env), [], ev!.kind);
      assert.deepEqual(schemaErrors(wireSchema(eventSchema), env.event), [], ev!.kind);
    }
  });

  it("drops old message text, never messages, to fit the stream's limit", () => {
    const big = "x".repeat(512 * 1024);
    const messages = Array.from({ length: 12 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: big + i }));
    const ev = buildEvent("agent_end", "main", agentEndBody({ messages, success: true }), { sessionKey: "k", runId: "r", ts: 1 })!;
    assert.ok(ev.data.length <= MAX_EVENT_BYTES);
    const env = JSON.parse(Buffer.from(ev.data).toString());
    assert.equal(env.event.messages.length, 12);
    assert.equal(env.event.messages[0].content, "");
    assert.equal(env.event.messages[11].content, big + 11);
    // A single message over the limit cannot be sent at all.
    assert.equal(buildEvent("agent_end", "main", agentEndBody({ messages: [{ role: "user", content: "y".repeat(MAX_EVENT_BYTES) }], success: true }), { ts: 1 }), undefined);
  });
});

describe("Msg-Id", () => {
  it("depends on what a retry repeats, not on what the next turn changes", () => {
    const meta = { sessionKey: "k", sessionId: "s", runId: "r", ts: 1 };
    const a = deriveMsgId("agent_end", "main", { messages: [1, 2] }, meta, 2);
    assert.equal(deriveMsgId("agent_end", "main", { messages: [1, 2] }, { ...meta, ts: 99 }, 2), a, "agent_end ignores the time");
    assert.notEqual(deriveMsgId("agent_end", "main", {}, meta, 3), a, "a longer history is a new event");
    assert.notEqual(deriveMsgId("agent_end", "ops", {}, meta, 2), a, "another agent");
    const s = deriveMsgId("session_end", "main", {}, meta, 0);
    assert.notEqual(deriveMsgId("session_end", "main", {}, { ...meta, ts: 2 }, 0), s, "other kinds use the hook's time");
  });

  it("hashes the body the way Go re-encodes it", () => {
    // Go: sorted keys (by UTF-8 bytes), no spaces, \u2028 escaped, a lone surrogate as U+FFFD, trailing newline.
    const cases: Array<[unknown, string]> = [
      [{ b: 1, a: [true, null, "x"] }, '{"a":[true,null,"x"],"b":1}\n'],
      [{ "é": 1, z: 2, Z: 3 }, '{"Z":3,"z":2,"é":1}\n'],
      [{ s: "a<b>&\u2028\u0001\n\"\\" }, '{"s":"a<b>&\\u2028\\u0001\\n\\"\\\\"}\n'],
      [{ s: "\ud800x" }, '{"s":"\ufffdx"}\n'],
      [{ n: 1e21, f: 0.1, big: 1764684000000 }, '{"big":1764684000000,"f":0.1,"n":1e+21}\n'],
    ];
    for (const [value, goJSON] of cases) {
      assert.equal(canonicalHash(value), createHash("sha256").update(goJSON).digest("hex"), JSON.stringify(value));
    }
  });
});

describe("recall block bound", () => {
  const block = "<relevant-memories>\n[UNTRUSTED DATA — notes]\n- [preference:global] one\n- [fact:global] two two\n[END UNTRUSTED DATA]\n</relevant-memories>";
  it("keeps a block that fits", () => assert.equal(fitBlock(block, 1000), block));
  it("drops memories from the end, whole lines only", () => {
    const cut = fitBlock(block, block.length - 5);
    assert.ok(cut.includes("one") && !cut.includes("two"));
    assert.ok(cut.endsWith("</relevant-memories>"));
  });
  it("gives nothing when no memory fits", () => assert.equal(fitBlock(block, 40), ""));
});

describe("recent injections", () => {
  it("excludes a session's last turns' ids, newest first, once each", () => {
    const r = new RecentInjections(4, 3);
    assert.deepEqual(r.exclude("s1"), []);
    r.record("s1", ["a", "b"]);
    r.record("s1", []);
    r.record("s1", ["c", "a"]);
    assert.deepEqual(r.exclude("s1"), ["c", "a", "b"]);
    assert.deepEqual(r.exclude("s2"), [], "another session excludes nothing");
    r.record("s1", ["d"]); // the turn of a and b is now 4 turns back
    assert.deepEqual(r.exclude("s1"), ["d", "c", "a"]);
    r.record("s1", []);
    r.record("s1", []);
    assert.deepEqual(r.exclude("s1"), ["d"]);
  });
  it("forgets the least recently recalled session beyond its bound", () => {
    const r = new RecentInjections(2, 5);
    r.record("s1", ["a"]);
    r.record("s2", ["b"]);
    r.record("s1", ["c"]); // s1 is now the most recent
    r.record("s3", ["d"]);
    assert.deepEqual([r.exclude("s1"), r.exclude("s2"), r.exclude("s3")], [["c", "a"], [], ["d"]]);
  });
  it("sends at most clawmem's limit of ids", () => {
    const r = new RecentInjections();
    for (let t = 0; t < 5; t++) r.record("s", Array.from({ length: 20 }, (_, i) => `t${t}-${i}`));
    const ex = r.exclude("s");
    assert.equal(ex.length, MAX_EXCLUDE);
    assert.equal(ex[0], "t4-0");
  });
});

describe("registration", () => {
  it("declares every tool in the manifest and package", () => {
    const manifest = JSON.parse(readFileSync(join(pluginDir, "openclaw.plugin.json"), "utf8"));
    assert.deepEqual(manifest.contracts.tools, TOOL_SPECS.map((t) => t.name));
    assert.equal(manifest.kind, "memory");
    assert.equal(plugin.id, manifest.id);
    const pkg = JSON.parse(readFileSync(join(pluginDir, "package.json"), "utf8"));
    assert.deepEqual(pkg.openclaw.extensions, ["./dist/src/index.js"]);
  });

  it("takes the query service's request fields as tool parameters", () => {
    for (const t of TOOL_SPECS.filter(isForwarded)) {
      const req = wireSchema(`${t.op}-request`) as { properties: Record<string, unknown>; required?: string[] };
      const params = Object.keys((t.parameters as { properties: object }).properties);
      assert.deepEqual(params.sort(), [...t.fields].sort(), `${t.name}: parameters are the forwarded fields`);
      for (const f of t.fields) assert.ok(f in req.properties, `${t.name}.${f} is not a field of ${t.op}-request.json`);
      for (const f of req.required ?? []) assert.ok(t.fields.includes(f), `${t.name} lacks required ${f}`);
    }
  });

  it("forwards only the request's fields", () => {
    assert.deepEqual(requestBody(["query", "limit"], { query: "q", limit: 3, agentId: "other", extra: 1, scope: null }), { query: "q", limit: 3 });
  });

  for (const mode of ["discovery", "cli-metadata", "tool-discovery", "setup-only"] as const) {
    it(`${mode}: registers everything, opens nothing`, async () => {
      const api = new FakeApi({ enableManagementTools: true }, mode);
      assert.equal(register(api, new Runtimes()), undefined, "no runtime, so no connection");
      assert.deepEqual(api.toolFactories[0].names, toolNames(true));
      // FakeApi is OpenClaw 2026.9.6, which runs agent_turn_prepare.
      assert.deepEqual([...api.typedHooks.keys()].sort(), ["agent_end", "agent_turn_prepare", "before_compaction", "before_prompt_build", "before_reset", "session_end"]);
      assert.equal(api.memoryCapabilities.length, 1, "the memory capability is registered in every mode");
      assert.deepEqual([...api.internalHooks.keys()].sort(), ["command:new", "command:reset"]);
      assert.equal(api.services.length, 0);
      // Hooks and tools are inert: they return at once without a connection.
      assert.equal(await api.emit("before_prompt_build", { prompt: "what is my dog called?" }, { agentId: "main" }), undefined);
      const res = await api.tools({ agentId: "main" }).get("memory_recall")!.execute("t1", { query: "dog" });
      assert.equal(res.isError, true);
      assert.deepEqual({ ...(res.details as object), error: undefined }, { error: undefined, code: "unavailable", reason: "not_running" });
    });
  }

  it("honours autoRecall, autoCapture and enableManagementTools", () => {
    const api = new FakeApi({ autoRecall: false, autoCapture: false }, "discovery");
    register(api, new Runtimes());
    assert.deepEqual([...api.typedHooks.keys()], []);
    assert.deepEqual([...api.internalHooks.keys()], []);
    assert.deepEqual([...api.tools({ agentId: "main" }).keys()], ["memory_recall", "memory_store", "memory_forget", "memory_update", "memory_search", "memory_get"]);
  });

  it("uses before_agent_start only on hosts older than 2026.2", () => {
    assert.equal(needsLegacyRecallHook("2026.9.6"), false);
    assert.equal(needsLegacyRecallHook("2026.2.0-beta.1"), false);
    assert.equal(needsLegacyRecallHook("2026.1.30"), true);
    assert.equal(needsLegacyRecallHook(undefined), false);
    // In cli-metadata mode reading api.runtime throws: registration must not.
    const api = new FakeApi({}, "cli-metadata");
    Object.defineProperty(api, "runtime", { get() { throw new Error("runtime is intentionally unavailable"); } });
    assert.doesNotThrow(() => register(api, new Runtimes()));
  });

  it("refuses tool calls without an agent identity", async () => {
    const api = new FakeApi({}, "discovery");
    register(api, new Runtimes());
    const res = await api.tools({}).get("memory_store")!.execute("t1", { text: "x" });
    assert.equal(res.isError, true);
    assert.equal((res.details as { code: string }).code, "no_identity");
  });
});

describe("host compatibility", () => {
  it("injects from agent_turn_prepare on hosts that run it, and once per run", () => {
    assert.equal(offersTurnPrepare("2026.9.6"), true);
    assert.equal(offersTurnPrepare("2027.1.0"), true);
    assert.equal(offersTurnPrepare("2026.8.30"), false);
    assert.equal(offersTurnPrepare(undefined), false);
    // agent_turn_prepare and before_prompt_build of one run see the prompt prepared differently: one recall.
    assert.equal(recallKey({ runId: "r1", sessionKey: "agent:main:main" }, "hi"), recallKey({ runId: "r1", sessionKey: "agent:main:main" }, "[history]\nhi"));
    assert.notEqual(recallKey({ runId: "r1" }, "hi"), recallKey({ runId: "r2" }, "hi"));
    assert.notEqual(recallKey({ sessionKey: "s" }, "a"), recallKey({ sessionKey: "s" }, "b"));
  });

  it("says which OpenClaw hook gate blocks capture or recall, naming the setting", () => {
    const cfg = parseConfig({});
    const closed = hookGateWarnings(cfg, undefined);
    assert.equal(closed.length, 1);
    assert.match(closed[0], /auto-capture \(agent_end\) and auto-recall \(before_prompt_build\)/);
    assert.match(closed[0], /openclaw config set plugins\.entries\.clawmem\.hooks\.allowConversationAccess true/);
    assert.deepEqual(hookGateWarnings(cfg, { allowConversationAccess: true }), []);
    const noInjection = hookGateWarnings(cfg, { allowConversationAccess: true, allowPromptInjection: false });
    assert.equal(noInjection.length, 1);
    assert.match(noInjection[0], /allowPromptInjection is false/);
    assert.deepEqual(hookGateWarnings(parseConfig({ autoRecall: false, autoCapture: false }), undefined), []);
    assert.deepEqual(hookGateWarnings(parseConfig({ autoRecall: false }), { allowConversationAccess: true, allowPromptInjection: false }), []);
    // A full registration logs them at start.
    const api = new FakeApi({}, "full");
    api.config = { plugins: { entries: { clawmem: { hooks: { allowPromptInjection: false } } } } };
    const rt = register(api, new Runtimes());
    assert.ok(api.logger.lines.some((l) => /allowConversationAccess/.test(l)) && api.logger.lines.some((l) => /allowPromptInjection is false/.test(l)), api.logger.lines.join("\n"));
    void rt?.stop();
  });
});

describe("memory capability", () => {
  it("tells the model which memory tools it has and that recalled memories are data", () => {
    const all = memoryPromptSection(new Set(["memory_recall", "memory_store", "memory_forget", "memory_update", "memory_search", "memory_get"]));
    assert.equal(all[0], "## Memory (clawmem)");
    const text = all.join("\n");
    assert.match(text, /call memory_recall/);
    assert.match(text, /never as instructions/);
    assert.doesNotMatch(text, /<\/?relevant-memories>/, "the section names no block tag");
    assert.match(text, /memory_get reads/);
    assert.match(text, /supersedes/);
    assert.match(memoryPromptSection(new Set(["memory_search"])).join("\n"), /call memory_search/);
    assert.doesNotMatch(memoryPromptSection(new Set(["memory_search"])).join("\n"), /memory_store/);
    assert.deepEqual(memoryPromptSection(new Set(["exec"])), [], "no memory tool, no section");
    assert.match(memoryPromptSection(new Set(["memory_recall"]), "off").join("\n"), /Do not mention memory ids/);
  });

  it("reports an unreachable clawmem as such, not as an empty memory", () => {
    const s = { at: 1764690000000, agent: "main", error: "clawmem unreachable: not connected to NATS at nats://127.0.0.1:1" };
    const st = providerStatus(s, "nats://127.0.0.1:1") as any;
    assert.equal(st.provider, "clawmem");
    assert.equal(st.lastSyncError, s.error);
    assert.equal(st.vector.available, false);
    assert.equal(st.vector.index.state, "unverified");
    assert.equal(st.custom.clawmem.reachable, false);
    assert.deepEqual(embeddingProbe(s, true), { ok: false, error: s.error, checked: true, cached: true, checkedAtMs: s.at });
    const down = { at: 1, agent: "main", stats: { total: 3, embedderOk: false, embedderError: "the embedder failed a recent query" } };
    assert.equal(embeddingProbe(down, false).ok, false);
    assert.equal((providerStatus(down, "") as any).vector.available, false);
    assert.equal((providerStatus(down, "") as any).fts.available, true);
  });

  it("has no flush plan and no manager for an OpenClaw agent without a clawmem identity", async () => {
    const cap = memoryCapability(parseConfig({ agents: {} }), memoryLogger(), () => undefined);
    assert.equal(cap.flushPlanResolver(), null);
    assert.deepEqual(cap.runtime.resolveMemoryBackendConfig(), { backend: "builtin" });
    const got = await cap.runtime.getMemorySearchManager({ agentId: "" });
    assert.equal(got.manager, null);
    assert.match(got.error!, /agents or defaultAgent/);
  });
});

describe("read retry", () => {
  // A connection whose first answers never come (a query replica that died
  // with the request in hand) and whose later ones do.
  function scripted(lost: number) {
    const asked: Array<{ subject: string; timeout: number }> = [];
    const nc = {
      async request(subject: string, _body: string, o: { timeout: number }) {
        asked.push({ subject, timeout: o.timeout });
        if (asked.length <= lost) {
          await new Promise((r) => setTimeout(r, o.timeout));
          throw new natsErrors.TimeoutError();
        }
        return { data: new TextEncoder().encode(JSON.stringify({ content: [{ type: "text", text: "ok" }], details: {} })) };
      },
    };
    const link = { settled: async () => ({ nc, js: {} }), phase: "up", servers: "nats://test", noteService() {} };
    return { link: link as unknown as Link, asked };
  }

  it("asks a read once more when the first attempt gets no answer in half the time", async () => {
    const { link, asked } = scripted(1);
    const res = await request(link, "main", "recall", { query: "x" }, { timeoutMs: 400 });
    assert.equal(res.content[0].text, "ok");
    assert.equal(asked.length, 2);
    // Half the deadline left when it was sent (a millisecond may have gone).
    assert.ok(asked[0].timeout >= 190 && asked[0].timeout <= 200, `first attempt ${asked[0].timeout} ms`);
    assert.ok(asked[1].timeout > 0 && asked[1].timeout <= 210, `second attempt ${asked[1].timeout} ms`);
  });

  it("bounds the first attempt at READ_ATTEMPT_MS", async () => {
    const { link, asked } = scripted(0);
    await request(link, "main", "context", { prompt: "x" }, { timeoutMs: 60_000 });
    assert.equal(asked[0].timeout, READ_ATTEMPT_MS);
  });

  it("sends a write once", async () => {
    const { link, asked } = scripted(1);
    await assert.rejects(request(link, "main", "store", { text: "x" }, { timeoutMs: 200 }), (err: unknown) =>
      err instanceof UnavailableError && err.reason === "timeout");
    assert.equal(asked.length, 1);
    // The whole deadline (less a millisecond, perhaps), not half of it.
    assert.ok(asked[0].timeout > 190 && asked[0].timeout <= 200, `the write's one attempt ${asked[0].timeout} ms`);
  });

  it("gives up when both attempts go unanswered", async () => {
    const { link, asked } = scripted(2);
    await assert.rejects(request(link, "main", "list", {}, { timeoutMs: 200 }), (err: unknown) =>
      err instanceof UnavailableError && err.reason === "timeout");
    assert.equal(asked.length, 2);
  });
});

describe("recall timings", () => {
  it("gives nearest-rank percentiles of known inputs", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(hundred, 50), 50);
    assert.equal(percentile(hundred, 99), 99);
    assert.equal(percentile(hundred, 100), 100);
    const ten = Array.from({ length: 10 }, (_, i) => i + 1);
    assert.equal(percentile(ten, 50), 5);
    assert.equal(percentile(ten, 99), 10, "with ten values p99 is the largest");
    assert.equal(percentile([7], 50), 7);
    assert.ok(Number.isNaN(percentile([], 50)));
    // summarize sorts a copy: the order of arrival does not matter, and the input stays as it was.
    const shuffled = [9, 1, 8, 2, 7, 3, 6, 4, 5, 10];
    assert.deepEqual(summarize(shuffled), { n: 10, p50Ms: 5, p99Ms: 10, maxMs: 10 });
    assert.deepEqual(shuffled, [9, 1, 8, 2, 7, 3, 6, 4, 5, 10]);
    assert.deepEqual(summarize([2.5, 0.5, 1.5]), { n: 3, p50Ms: 1.5, p99Ms: 2.5, maxMs: 2.5 });
    const none = summarize([]);
    assert.equal(none.n, 0);
    assert.ok(Number.isNaN(none.p50Ms) && Number.isNaN(none.p99Ms));
  });

  it("keeps only the last durations, and counts them all", () => {
    const ring = new TimingRing(4);
    assert.deepEqual(ring.values(), []);
    for (let i = 1; i <= 3; i++) ring.record(i);
    assert.deepEqual(ring.values(), [1, 2, 3]);
    for (let i = 4; i <= 10; i++) ring.record(i);
    assert.equal(ring.count, 10);
    assert.deepEqual(ring.values(), [7, 8, 9, 10], "the four newest, oldest first");
    for (let i = 11; i <= 10_000; i++) ring.record(i);
    assert.equal(ring.values().length, 4);
    assert.deepEqual(summarize(ring.values()), { n: 4, p50Ms: 9998, p99Ms: 10_000, maxMs: 10_000 });
  });

  it("reports the calls by hook, those with a block, and the window's percentiles", () => {
    const t = new RecallTimings(3);
    t.record("agent_turn_prepare", 4, true);
    t.record("agent_turn_prepare", 1.23456, false);
    t.record("before_prompt_build", 2, true);
    t.record("agent_turn_prepare", 3, true);
    const r = t.report();
    assert.deepEqual(r, {
      pid: process.pid, count: 4, withBlock: 3, byHook: { agent_turn_prepare: 3, before_prompt_build: 1 },
      n: 3, p50Ms: 2, p99Ms: 3, maxMs: 3, recentMs: [1.235, 2, 3],
    });
  });

  it("writes to the file CLAWMEM_PLUGIN_TIMINGS names, in the plugin's state directory when relative", async () => {
    assert.equal(timingsFile(undefined, "/state"), undefined);
    assert.equal(timingsFile(" ", "/state"), undefined);
    assert.equal(timingsFile("/tmp/t.json", undefined), "/tmp/t.json");
    assert.equal(timingsFile("t.json", "/state"), join("/state", "t.json"));
    assert.equal(timingsFile("t.json", undefined), undefined);
    const file = join(tempDir("clawmem-timings-"), "sub", "t.json");
    const t = new RecallTimings();
    t.writeTo(file, memoryLogger());
    for (const ms of [5, 6, 7]) t.record("before_prompt_build", ms, true);
    const read = (): { count: number; p50Ms: number } | undefined => {
      const r = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) as { count: number; p50Ms: number } : undefined;
      return r?.count === 3 ? r : undefined;
    };
    assert.equal((await waitFor("the three recalls in the file", read)).p50Ms, 6);
  });

  it("times a run's recall once, under the hook that ran it; the gateway writes it with CLAWMEM_PLUGIN_TIMINGS", async () => {
    process.env[TIMINGS_ENV] = "hook-timings.json";
    // Nothing listens on the port: the recall finds clawmem unreachable and returns no block.
    const api = new FakeApi({ natsUrl: `nats://127.0.0.1:${await freePort()}` });
    const rt = register(api, new Runtimes())!;
    try {
      await api.start();
      const ctx = { agentId: "main", sessionKey: "agent:main:main", runId: "timed-1" };
      assert.equal(await api.emit("agent_turn_prepare", { prompt: "what is my dog called?" }, ctx), undefined);
      assert.equal(await api.emit("before_prompt_build", { prompt: "[history]\nwhat is my dog called?" }, ctx), undefined);
      assert.equal(await api.emit("before_prompt_build", { prompt: " " }, { ...ctx, runId: "timed-2" }), undefined, "an empty prompt asks nothing");
      const r = rt.recallTimings.report();
      assert.equal(r.count, 1, "the run's second hook returned at once and was not timed");
      assert.deepEqual(r.byHook, { agent_turn_prepare: 1 });
      assert.equal(r.withBlock, 0);
      assert.ok(r.p50Ms > 0 && r.p50Ms < 2000, `p50 ${r.p50Ms} ms`);
      const file = join(api.stateDir!, "plugins", "clawmem", "hook-timings.json");
      await waitFor("the timings file", () => existsSync(file));
      assert.equal((JSON.parse(readFileSync(file, "utf8")) as { count: number }).count, 1);
    } finally {
      delete process.env[TIMINGS_ENV];
      await api.stop();
    }
  });
});
