// The auto-recall hot path on the real host (issue 31), run by run.sh while its gateway is up: drives --turns agent
// turns, one at a time, through the gateway's OpenAI-compatible endpoint (the same agent run as `openclaw agent`,
// without starting a CLI process per turn), each in a new session, so that auto-recall's per-session exclusion of
// what it injected in the last turns does not empty the block. The plugin times its recall hook from the call to
// the returned block and keeps the figures in the file CLAWMEM_PLUGIN_TIMINGS names (--timings); read before and
// after, they give the turns' own timings. Prints one JSON object; it asks no speed, run.sh checks it.
// Usage: node hotpath.mjs --url http://127.0.0.1:PORT --timings FILE [--turns 40]   (token: $OPENCLAW_GATEWAY_TOKEN)
import { existsSync, readFileSync } from "node:fs";
import { summarize } from "../dist/src/timings.js";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const url = opt("url");
const timingsFile = opt("timings");
const turns = Number(opt("turns", "40"));
const token = process.env.OPENCLAW_GATEWAY_TOKEN;
if (!url || !timingsFile || !Number.isInteger(turns) || turns < 1 || !token) {
  console.error("usage: OPENCLAW_GATEWAY_TOKEN=... node hotpath.mjs --url URL --timings FILE [--turns N]");
  process.exit(2);
}

// Questions about what the earlier turns stored, so each recall finds memories to inject.
const PROMPTS = [
  "What is my favourite colour?",
  "Which port does the staging database listen on?",
  "What do I like to drink in the afternoon?",
  "When is the release branch cut?",
  "How do I travel to Vienna?",
  "Where does the build cache live?",
];

const readTimings = () => (existsSync(timingsFile) ? JSON.parse(readFileSync(timingsFile, "utf8")) : { pid: 0, count: 0, withBlock: 0, byHook: {}, recentMs: [] });

const before = readTimings();
// A gateway that restarted meanwhile counts from nothing.
const base = (after) => (after.pid === before.pid ? before : { count: 0, withBlock: 0, byHook: {} });
const started = performance.now();
const turnMs = [];
const failures = [];
for (let i = 0; i < turns; i++) {
  const t = performance.now();
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "openclaw/main", messages: [{ role: "user", content: PROMPTS[i % PROMPTS.length] }] }),
      signal: AbortSignal.timeout(60_000),
    });
    const body = await res.text();
    if (res.status !== 200 || !body.includes("FAKE-MODEL-REPLY")) failures.push(`turn ${i + 1}: HTTP ${res.status} ${body.slice(0, 200)}`);
  } catch (err) {
    failures.push(`turn ${i + 1}: ${err}`);
  }
  turnMs.push(performance.now() - t);
}
const wallS = (performance.now() - started) / 1000;

// The plugin writes the file just after each hook returns: give the last write a moment.
let after = readTimings();
for (let waited = 0; after.count - base(after).count < turns && waited < 5000; waited += 100) {
  await new Promise((r) => setTimeout(r, 100));
  after = readTimings();
}
const from = base(after);
const count = after.count - from.count;
const byHook = Object.fromEntries(Object.entries(after.byHook).map(([h, n]) => [h, n - (from.byHook[h] ?? 0)]).filter(([, n]) => n > 0));
const hook = count > 0 && count <= after.recentMs.length ? summarize(after.recentMs.slice(-count)) : summarize([]);
const turn = summarize(turnMs);
console.log(JSON.stringify({
  turns, failed: failures.length, failures: failures.slice(0, 3), wallS: Number(wallS.toFixed(1)),
  count, withBlock: after.withBlock - from.withBlock, byHook, ...hook,
  turnP50Ms: Number(turn.p50Ms.toFixed(1)), turnP99Ms: Number(turn.p99Ms.toFixed(1)),
}));
