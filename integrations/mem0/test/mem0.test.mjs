// The unmodified mem0ai client (mem0's npm package, pinned in
// package-lock.json) against a real `clawmem up` built from this tree, and
// the README's JS and Python examples against the same instance.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = resolve(pkgDir, "..", "..");
const scratch = mkdtempSync(join(tmpdir(), "clawmem-mem0-"));

// mem0's client reports every call to mem0's analytics unless told not to,
// and keeps an id in ~/.mem0: neither belongs in a test (nor, offline, works).
process.env.MEM0_TELEMETRY = "false";
process.env.MEM0_DIR = join(scratch, "mem0");
const { MemoryClient, MemoryNotFoundError, AuthenticationError, ValidationError } = await import("mem0ai");

let child;
let output = "";
let host;
let token;
let bin;

async function waitFor(what, fn, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  bin = process.env.CLAWMEM_BIN;
  if (!bin) {
    bin = join(scratch, "clawmem");
    execFileSync("go", ["build", "-o", bin, "./cmd/clawmem"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  }
  const dir = join(scratch, "data");
  mkdirSync(dir);
  writeFileSync(join(dir, "config.json"), JSON.stringify({
    nats: { port: -1 }, ingest: { addr: "127.0.0.1:0" }, watch: { enabled: false }, distill: { schedule: "off" }, ui: { listen: "off" },
  }));
  child = spawn(bin, ["up", "--data-dir", dir], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const run = await waitFor("clawmem up to write run.json", () => {
    if (child.exitCode !== null) throw new Error(`clawmem up exited with ${child.exitCode}:\n${output}`);
    const p = join(dir, "run.json");
    if (!existsSync(p)) return undefined;
    const j = JSON.parse(readFileSync(p, "utf8"));
    return j.pid === child.pid && j.ingestUrl ? j : undefined;
  });
  host = run.ingestUrl.replace(/\/$/, "");
  token = execFileSync(bin, ["agent", "token", "mem0-app", "--data-dir", dir], { encoding: "utf8" }).trim();
});

after(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(scratch, { recursive: true, force: true });
});

test("the mem0ai client: add, search, getAll, get, update, history, delete, deleteAll, ping", async () => {
  const client = new MemoryClient({ apiKey: token, host });
  await client.ping();

  const added = await client.add(
    [
      { role: "user", content: "I am vegetarian and I am allergic to nuts" },
      { role: "assistant", content: "Got it, I will keep that in mind for recipes" },
    ],
    { userId: "alice", runId: "trip-1", metadata: { source: "onboarding" } },
  );
  assert.equal(added.length, 1, JSON.stringify(added));
  assert.equal(added[0].event, "ADD");
  assert.match(added[0].memory, /vegetarian/);
  const id = added[0].id;
  const verbatim = await client.add([{ role: "user", content: "Bob's birthday is on the 3rd of May" }], { userId: "bob", infer: false });
  assert.equal(verbatim.length, 1);

  const found = await client.search("what food can I eat", { filters: { user_id: "alice" }, topK: 3 });
  assert.equal(found.results.length, 1, JSON.stringify(found));
  assert.equal(found.results[0].id, id);
  assert.equal(found.results[0].userId, "alice");
  assert.equal(found.results[0].runId, "trip-1");
  assert.deepEqual(found.results[0].metadata, { source: "onboarding" });
  assert.ok(found.results[0].score > 0);

  const all = await client.getAll({ filters: { AND: [{ user_id: "bob" }] } });
  assert.equal(all.count, 1);
  assert.equal(all.results[0].memory, "Bob's birthday is on the 3rd of May");
  const paged = await client.getAll({ filters: { user_id: "*" }, page: 1, pageSize: 1 });
  assert.equal(paged.count, 2);
  assert.equal(paged.results.length, 1);
  assert.ok(paged.next);

  const one = await client.get(id);
  assert.equal(one.id, id);
  assert.ok(!Number.isNaN(Date.parse(one.createdAt)));

  const updated = await client.update(id, { text: "I am vegan and I am allergic to nuts" });
  assert.equal(updated.id, id);
  assert.equal(updated.memory, "I am vegan and I am allergic to nuts");
  const history = await client.history(id);
  assert.deepEqual(history.map((h) => h.event), ["ADD", "UPDATE"]);
  assert.match(history[1].oldMemory, /vegetarian/);
  assert.match(history[1].newMemory, /vegan/);
  assert.equal(history[1].memoryId, id);

  assert.match((await client.delete(id)).message, /deleted/);
  await assert.rejects(client.get(id), MemoryNotFoundError);
  assert.match((await client.deleteAll({ userId: "bob" })).message, /deleted/);
  assert.equal((await client.getAll({ filters: { user_id: "*" } })).count, 0);

  await assert.rejects(client.search("x", { filters: { OR: [{ user_id: "a" }] } }), ValidationError);
  await assert.rejects(new MemoryClient({ apiKey: "not-the-token", host }).search("x"), AuthenticationError);
});

// The README's examples, run as a reader would paste them.
function readmeBlock(lang, marker) {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const re = new RegExp("<!-- " + marker + " -->\\s*```" + lang + "\\n([\\s\\S]*?)```\\s*<!-- /" + marker + " -->");
  const m = readme.match(re);
  assert.ok(m, `README.md has no \`\`\`${lang} block between <!-- ${marker} --> markers`);
  return m[1];
}

test("the README's JS example runs", () => {
  // Written beside node_modules, so that its import of mem0ai resolves.
  const file = join(pkgDir, ".readme-example.mjs");
  writeFileSync(file, readmeBlock("js", "mem0-js-example"));
  try {
    const r = spawnSync(process.execPath, [file], { env: { ...process.env, CLAWMEM_URL: host, CLAWMEM_TOKEN: token }, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /dark mode/);
  } finally {
    rmSync(file, { force: true });
  }
});

test("the README's Python example runs", (t) => {
  if (spawnSync("python3", ["--version"]).error) {
    t.skip("python3 is not installed: the README's Python example was not run");
    return;
  }
  const r = spawnSync("python3", ["-"], { input: readmeBlock("python", "mem0-python-example"),
    env: { ...process.env, CLAWMEM_URL: host, CLAWMEM_TOKEN: token }, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /Lisbon/);
});
