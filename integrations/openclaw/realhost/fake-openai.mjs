// From the project's shared OpenClaw real-host recipe (shared/openclaw-realhost), changed only to script any tool
// call: a user message "CALL-TOOL <name> <json args>" makes the model call <name> with those arguments, and each
// tool call is logged with how it was made (direct, or through the Tool Search bridge).
// Fake OpenAI-compatible model server for offline OpenClaw tests.
// No dependencies. Usage:
//   node fake-openai.mjs --port 18555 --log /path/requests.jsonl [--reply "text"] [--portfile f]
// Endpoints:
//   GET  /v1/models             -> model list (model id from --model, default "fake-model")
//   POST /v1/chat/completions   -> fixed assistant reply (SSE when body.stream === true)
//   POST /v1/responses          -> fixed assistant reply (Responses API; SSE when stream)
//   GET  /healthz               -> "ok"
// Chat completions are scripted: when the newest user input contains "CALL-PROBE-TOOL"
// (--tool-trigger), the reply is a tool call to "test_memory_probe" (--tool-name), made
// directly or via OpenClaw's Tool Search bridge tool "tool_call"; once the tool result
// comes back, the reply is the fixed text plus the tool output.
// Every request (method, url, headers subset, parsed body) is appended as one JSON line to --log.
import http from "node:http";
import fs from "node:fs";

const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}
const port = Number(opt("port", "18555"));
const logPath = opt("log", "./fake-openai-requests.jsonl");
const modelId = opt("model", "fake-model");
const reply = opt("reply", "FAKE-MODEL-REPLY: hello from the fake model.");
const portFile = opt("portfile", "");

let counter = 0;
function log(entry) {
  fs.appendFileSync(logPath, JSON.stringify({ ts: new Date().toISOString(), ...entry }) + "\n");
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", () => resolve(""));
  });
}

function json(res, status, obj) {
  const s = JSON.stringify(obj);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
  res.end(s);
}

function usageFor(body) {
  const promptChars = JSON.stringify(body ?? {}).length;
  const prompt = Math.max(1, Math.round(promptChars / 4));
  const completion = Math.max(1, Math.round(reply.length / 4));
  return { prompt, completion, total: prompt + completion };
}

// --- scripted tool calls --------------------------------------------------
// If the newest user input (messages after the last assistant message) contains
// TOOL_TRIGGER and no tool result has arrived yet, reply with a tool call to the
// plugin tool: directly when it is in body.tools, else through OpenClaw's Tool
// Search bridge tool `tool_call` ({id, args}). After the tool result arrives,
// reply with a final text that echoes the tool output.
const TOOL_TRIGGER = opt("tool-trigger", "CALL-PROBE-TOOL");
const TOOL_NAME = opt("tool-name", "test_memory_probe");
function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("\n");
  return "";
}
function planChat(body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  let lastAssistant = -1;
  msgs.forEach((m, i) => { if (m?.role === "assistant") lastAssistant = i; });
  const tail = msgs.slice(lastAssistant + 1);
  const toolMsg = tail.find((m) => m?.role === "tool");
  if (toolMsg) return { kind: "text", text: `${reply} [tool result: ${textOf(toolMsg.content).slice(0, 200)}]` };
  let want = null;
  for (const m of tail) {
    if (m?.role !== "user") continue;
    const t = textOf(m.content);
    const scripted = /CALL-TOOL (\S+) (\{.*\})/s.exec(t);
    if (scripted) {
      try { want = { name: scripted[1], args: JSON.parse(scripted[2]) }; } catch { /* not a script */ }
    } else if (t.includes(TOOL_TRIGGER)) {
      want = { name: TOOL_NAME, args: { query: "probe-from-fake-model" } };
    }
  }
  if (!want) return { kind: "text", text: reply };
  const names = (Array.isArray(body?.tools) ? body.tools : []).map((t) => t?.function?.name ?? t?.name);
  if (names.includes(want.name)) return { kind: "tool", name: want.name, args: want.args, via: "direct", target: want.name };
  if (names.includes("tool_call")) return { kind: "tool", name: "tool_call", args: { id: want.name, args: want.args }, via: "tool_search", target: want.name };
  return { kind: "text", text: `${reply} [tool ${want.name} not offered]` };
}

function chatCompletions(req, res, body) {
  const plan = planChat(body);
  if (plan.kind === "tool") return chatToolCall(req, res, body, plan);
  return chatText(req, res, body, plan.text);
}

function chatToolCall(req, res, body, plan) {
  const id = `chatcmpl-fake-${++counter}`;
  const callId = `call_fake_${counter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body?.model ?? modelId;
  const argsJson = JSON.stringify(plan.args);
  const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
  log({ note: "fake-model-tool-call", tool: plan.name, args: plan.args, via: plan.via, target: plan.target });
  if (body?.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const send = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    const base = { id, object: "chat.completion.chunk", created, model };
    send({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: null, tool_calls: [{ index: 0, id: callId, type: "function", function: { name: plan.name, arguments: "" } }] }, finish_reason: null }] });
    send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: argsJson } }] }, finish_reason: null }] });
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });
    send({ ...base, choices: [], usage });
    res.write("data: [DONE]\n\n");
    res.end();
    return;
  }
  json(res, 200, {
    id, object: "chat.completion", created, model,
    choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: plan.name, arguments: argsJson } }] }, finish_reason: "tool_calls" }],
    usage,
  });
}

function chatText(req, res, body, replyText) {
  const reply = replyText;
  const id = `chatcmpl-fake-${++counter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body?.model ?? modelId;
  const u = usageFor(body);
  const usage = { prompt_tokens: u.prompt, completion_tokens: u.completion, total_tokens: u.total };
  if (body?.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const send = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
    const base = { id, object: "chat.completion.chunk", created, model };
    send({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
    // split reply into a few chunks to look like a real stream
    const parts = reply.match(/.{1,16}/gs) ?? [reply];
    for (const p of parts) send({ ...base, choices: [{ index: 0, delta: { content: p }, finish_reason: null }] });
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
    // usage chunk (sent when stream_options.include_usage is requested, harmless otherwise)
    send({ ...base, choices: [], usage });
    res.write("data: [DONE]\n\n");
    res.end();
    return;
  }
  json(res, 200, {
    id,
    object: "chat.completion",
    created,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
    usage,
  });
}

function responses(req, res, body) {
  const id = `resp_fake_${++counter}`;
  const msgId = `msg_fake_${counter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body?.model ?? modelId;
  const u = usageFor(body);
  const usage = { input_tokens: u.prompt, output_tokens: u.completion, total_tokens: u.total };
  const item = {
    type: "message",
    id: msgId,
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: reply, annotations: [] }],
  };
  const full = { id, object: "response", created_at: created, status: "completed", model, output: [item], usage };
  if (body?.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    let seq = 0;
    const send = (type, o) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...o })}\n\n`);
    const inProgress = { ...full, status: "in_progress", output: [], usage: null };
    send("response.created", { response: inProgress });
    send("response.in_progress", { response: inProgress });
    send("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
    send("response.content_part.added", { item_id: msgId, output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    send("response.output_text.delta", { item_id: msgId, output_index: 0, content_index: 0, delta: reply });
    send("response.output_text.done", { item_id: msgId, output_index: 0, content_index: 0, text: reply });
    send("response.content_part.done", { item_id: msgId, output_index: 0, content_index: 0, part: item.content[0] });
    send("response.output_item.done", { output_index: 0, item });
    send("response.completed", { response: full });
    res.end();
    return;
  }
  json(res, 200, full);
}

const server = http.createServer(async (req, res) => {
  const raw = req.method === "POST" ? await readBody(req) : "";
  let body = null;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    body = { _unparsed: raw };
  }
  const url = (req.url ?? "").split("?")[0];
  log({
    method: req.method,
    url: req.url,
    headers: { "content-type": req.headers["content-type"], authorization: req.headers.authorization ? "present" : "absent", "user-agent": req.headers["user-agent"] },
    body,
  });
  try {
    if (req.method === "GET" && (url === "/healthz" || url === "/")) return json(res, 200, { ok: true });
    if (req.method === "GET" && (url === "/v1/models" || url === "/models")) {
      return json(res, 200, { object: "list", data: [{ id: modelId, object: "model", created: 0, owned_by: "fake" }] });
    }
    if (req.method === "POST" && (url === "/v1/chat/completions" || url === "/chat/completions")) return chatCompletions(req, res, body);
    if (req.method === "POST" && (url === "/v1/responses" || url === "/responses")) return responses(req, res, body);
    json(res, 404, { error: { message: `fake server: no route ${req.method} ${url}`, type: "not_found" } });
  } catch (err) {
    json(res, 500, { error: { message: String(err), type: "fake_server_error" } });
  }
});

server.listen(port, "127.0.0.1", () => {
  const actual = server.address().port;
  if (portFile) fs.writeFileSync(portFile, String(actual));
  process.stdout.write(`fake-openai listening on http://127.0.0.1:${actual}/v1 (log ${logPath})\n`);
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.close(() => process.exit(0)));
