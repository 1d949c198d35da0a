// memory-core's memory_search and memory_get without clawmem: the path
// scheme, excerpts, parameter schemas, and the answers that need no service
// (bad arguments, bad paths, no identity, the plugin not running). The
// tools against a real clawmem are in plugin.test.ts.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import {
  cutUtf16, excerpt, memoryFile, memoryGetTool, memoryPath, memorySearchTool, parseMemoryPath, READ_MAX_CHARS,
} from "../src/memorycore.js";
import { TOOL_SPECS } from "../src/tools.js";
import type { ToolResult } from "../src/types.js";

const ID = "0f8e2c1a-93b4-4d7e-a1c2-5b6d7e8f9a0b";

/** The payload of a memory-core-shaped answer: details, which the content text must spell out exactly. */
function payload(r: ToolResult): Record<string, unknown> {
  assert.deepEqual(JSON.parse(r.content[0].text), r.details, "the content text is the details as JSON");
  return r.details as Record<string, unknown>;
}

describe("the clawmem memory path", () => {
  const cases: Array<[string, string | undefined]> = [
    [`clawmem/${ID}.md`, ID],
    [`  clawmem/${ID}.md\n`, ID],
    [`clawmem/${ID.toUpperCase()}.md`, ID],
    ["../x", undefined],
    ["clawmem/not-an-id.md", undefined],
    [`clawmem/${ID}`, undefined],
    [`clawmem/${ID}.md#L1`, undefined],
    [`clawmem/../clawmem/${ID}.md`, undefined],
    [`clawmem/${ID}.md/../../MEMORY.md`, undefined],
    [`memory/${ID}.md`, undefined],
    [`/clawmem/${ID}.md`, undefined],
    [`clawmem/${ID.slice(0, 8)}.md`, undefined],
    ["clawmem/.md", undefined],
    ["", undefined],
    ["MEMORY.md", undefined],
  ];
  for (const [path, want] of cases) {
    it(`${JSON.stringify(path)} → ${want ?? "no memory"}`, () => assert.equal(parseMemoryPath(path), want));
  }

  it("round-trips memoryPath", () => assert.equal(parseMemoryPath(memoryPath(ID)), ID));

  it("fuzz: never throws, and names a memory only for exactly memoryPath(id)", () => {
    const alphabet = `clawmem/.md-0123456789abcdefABCDEF#\\ \n\u0000é😀${ID}`;
    const seeds = [memoryPath(ID), "../x", "clawmem/not-an-id.md", `clawmem/${ID}.mdx`];
    for (let i = 0; i < 20_000; i++) {
      const b = randomBytes(24);
      let s = seeds[b[0] % seeds.length];
      // Mutate a seed: insert, delete or replace characters.
      for (let k = 1; k < 1 + (b[1] % 6); k++) {
        const at = b[k + 2] % (s.length + 1);
        const c = alphabet[b[k + 10] % alphabet.length];
        const op = b[k + 16] % 3;
        s = op === 0 ? s.slice(0, at) + c + s.slice(at) : op === 1 ? s.slice(0, at) + s.slice(at + 1) : s.slice(0, at) + c + s.slice(at + 1);
      }
      const id = parseMemoryPath(s);
      if (id !== undefined) assert.equal(memoryPath(id), s.trim().toLowerCase(), `parsed ${JSON.stringify(s)} as ${id}`);
    }
  });
});

describe("cutUtf16", () => {
  it("keeps text that fits", () => assert.equal(cutUtf16("abc", 3), "abc"));
  it("cuts at max", () => assert.equal(cutUtf16("abcdef", 4), "abcd"));
  it("never splits a surrogate pair", () => assert.equal(cutUtf16("ab😀cd", 3), "ab"));
});

describe("excerpts of a memory's virtual file", () => {
  const file = memoryFile({ id: ID, text: "line one\nline two", category: "fact", scope: "agent:main", timestamp: Date.UTC(2026, 11, 5), supersededBy: ID });
  it("is the text, a blank line, then the facts", () => {
    assert.equal(file, `line one\nline two\n\nid: ${ID}\ncategory: fact\nscope: agent:main\ncreated: 2026-12-05\nsuperseded by: clawmem/${ID}.md\n`);
  });

  const cases: Array<{ name: string; from?: number; lines?: number; want: object }> = [
    { name: "the whole file by default", want: { status: "ok", text: file.slice(0, -1), path: "p", from: 1, lines: 8 } },
    { name: "lines from the start", lines: 2, want: { status: "ok", text: "line one\nline two\n\n[More content available. Use from=3 to continue.]", path: "p", from: 1, lines: 2, truncated: true, nextFrom: 3 } },
    { name: "lines from a line", from: 4, lines: 2, want: { status: "ok", text: `id: ${ID}\ncategory: fact\n\n[More content available. Use from=6 to continue.]`, path: "p", from: 4, lines: 2, truncated: true, nextFrom: 6 } },
    { name: "up to the end", from: 6, lines: 50, want: { status: "ok", text: `scope: agent:main\ncreated: 2026-12-05\nsuperseded by: clawmem/${ID}.md`, path: "p", from: 6, lines: 3 } },
    { name: "past the end", from: 40, want: { status: "ok", text: "", path: "p", from: 40, lines: 0 } },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(excerpt(file, "p", c.from, c.lines), c.want));

  it("stops at READ_MAX_CHARS at a whole line, and says where to go on", () => {
    const line = "x".repeat(5000);
    const r = excerpt([line, line, line].join("\n"), "p");
    assert.deepEqual({ ...r, text: undefined }, { status: "ok", text: undefined, path: "p", from: 1, lines: 2, truncated: true, nextFrom: 3 });
    assert.equal(r.text, `${line}\n${line}\n\n[More content available. Use from=3 to continue.]`);
  });

  it("cuts a single line longer than READ_MAX_CHARS, with no nextFrom", () => {
    const r = excerpt("y".repeat(READ_MAX_CHARS + 10), "p");
    assert.equal(r.status, "ok");
    assert.ok(r.status === "ok" && r.truncated === true && r.nextFrom === undefined && r.lines === 1);
    assert.ok(r.text.startsWith("y".repeat(READ_MAX_CHARS) + "\n\n[More content available."));
  });
});

describe("memory-core's tool contracts", () => {
  // memory-core's parameter schemas (OpenClaw 2026.9, extensions/memory-core),
  // descriptions aside: the same names, types, bounds and requirements.
  const memoryCore: Record<string, object> = {
    memory_search: {
      type: "object", additionalProperties: false, required: ["query"],
      properties: { query: { type: "string" }, maxResults: { type: "integer", minimum: 1 }, minScore: { type: "number" }, corpus: { type: "string", enum: ["memory", "wiki", "all", "sessions"] } },
    },
    memory_get: {
      type: "object", additionalProperties: false, required: ["path"],
      properties: { path: { type: "string" }, from: { type: "integer", minimum: 1 }, lines: { type: "integer", minimum: 1 }, corpus: { type: "string", enum: ["memory", "wiki", "all"] } },
    },
  };
  const strip = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x) => (k === "description" ? undefined : x)));
  for (const [name, schema] of Object.entries(memoryCore)) {
    it(`${name} takes memory-core's parameters`, () => {
      const spec = TOOL_SPECS.find((t) => t.name === name);
      assert.ok(spec && !spec.management, `${name} is an always-on tool`);
      assert.deepEqual(strip(spec.parameters), schema);
    });
  }
});

describe("memory_search and memory_get without a service", () => {
  const bad: Array<[string, "search" | "get", unknown, RegExp]> = [
    ["no query", "search", {}, /query required/],
    ["a blank query", "search", { query: "  " }, /query required/],
    ["maxResults 0", "search", { query: "q", maxResults: 0 }, /maxResults must be a positive integer/],
    ["maxResults 1.5", "search", { query: "q", maxResults: 1.5 }, /maxResults must be a positive integer/],
    ["minScore a string", "search", { query: "q", minScore: "0.5" }, /minScore must be a number/],
    ["an unknown corpus", "search", { query: "q", corpus: "web" }, /corpus must be one of: memory, wiki, all, sessions/],
    ["params not an object", "search", "q", /query required/],
    ["no path", "get", {}, /path required/],
    ["from 0", "get", { path: memoryPath(ID), from: 0 }, /from must be a positive integer/],
    ["lines -1", "get", { path: memoryPath(ID), lines: -1 }, /lines must be a positive integer/],
    ["corpus sessions", "get", { path: memoryPath(ID), corpus: "sessions" }, /corpus must be one of: memory, wiki, all/],
  ];
  for (const [name, tool, params, want] of bad) {
    it(`refuses ${name}`, async () => {
      const r = await (tool === "search" ? memorySearchTool : memoryGetTool)(undefined, "main", params, 1000);
      assert.equal(r.isError, true);
      assert.equal((r.details as { code: string }).code, "invalid");
      assert.match(r.content[0].text, want);
    });
  }

  it("memory_get refuses paths that are not clawmem memories before asking anything", async () => {
    // A link whose every use fails the test: a bad path must not reach clawmem.
    const link = new Proxy({}, { get: () => assert.fail("the link was used") }) as never;
    for (const path of ["../x", "clawmem/not-an-id.md", "MEMORY.md", `memory/${ID}.md`]) {
      for (const [l, agent] of [[link, "main"], [undefined, "main"], [link, undefined]] as const) {
        const d = payload(await memoryGetTool(l, agent, { path }, 1000));
        assert.deepEqual({ ...d, error: undefined }, { status: "error", text: "", path, code: "MEMORY_PATH_NOT_ALLOWED", error: undefined });
        assert.match(d.error as string, /clawmem\/<memory id>\.md/);
      }
    }
  });

  it("answers unavailable, in memory-core's shapes, while the plugin is not running", async () => {
    const s = await memorySearchTool(undefined, "main", { query: "tea" }, 1000);
    assert.notEqual(s.isError, true, "memory-core reports unavailability in the payload");
    const sd = payload(s);
    assert.deepEqual({ results: sd.results, disabled: sd.disabled, unavailable: sd.unavailable }, { results: [], disabled: true, unavailable: true });
    assert.match(sd.error as string, /^clawmem unavailable: the clawmem plugin is not running/);
    assert.equal(typeof sd.warning, "string");
    assert.equal(typeof sd.action, "string");
    const g = payload(await memoryGetTool(undefined, "main", { path: memoryPath(ID) }, 1000));
    assert.deepEqual({ ...g, error: undefined }, { status: "error", text: "", path: memoryPath(ID), code: "CLAWMEM_UNAVAILABLE", error: undefined });
  });

  it("answers unavailable without an agent identity", async () => {
    const sd = payload(await memorySearchTool(undefined, undefined, { query: "tea" }, 1000));
    assert.equal(sd.unavailable, true);
    assert.match(sd.error as string, /no agent identity/);
    const g = payload(await memoryGetTool(undefined, undefined, { path: memoryPath(ID) }, 1000));
    assert.equal(g.code, "NO_IDENTITY");
  });

  it("has no wiki and no session transcripts", async () => {
    const w = payload(await memorySearchTool(undefined, "main", { query: "tea", corpus: "wiki" }, 1000));
    assert.deepEqual(w.results, []);
    assert.deepEqual(w.corpora, [{ corpus: "wiki", outcome: "not-registered" }]);
    const sessions = payload(await memorySearchTool(undefined, "main", { query: "tea", corpus: "sessions" }, 1000));
    assert.equal(sessions.unavailable, true);
    assert.match(sessions.warning as string, /Session transcript search is unavailable/);
    const g = payload(await memoryGetTool(undefined, "main", { path: memoryPath(ID), corpus: "wiki" }, 1000));
    assert.equal(g.status, "not_found");
  });
});
