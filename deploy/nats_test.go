package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/clawmem/clawmem/internal/natsconf"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// agentAccount is the account accounts.conf gives an agent.
func agentAccount(agent string) string {
	return "AGENT_" + strings.ToUpper(strings.ReplaceAll(agent, "-", "_"))
}

// agentSubjects are the only subjects an agent may publish to.
func agentSubjects(agent string) []string {
	return []string{"clawmem.hooks.v1." + agent + ".>", "clawmem.v1." + agent + ".>"}
}

// subjectAgent returns the agent a per-agent subject pattern belongs to.
func subjectAgent(subj string) (string, bool) {
	tok := strings.Split(subj, ".")
	switch {
	case len(tok) == 5 && tok[0] == "clawmem" && tok[1] == "hooks" && tok[2] == "v1" && tok[4] == ">":
		return tok[3], true
	case len(tok) == 4 && tok[0] == "clawmem" && tok[1] == "v1" && tok[3] == ">":
		return tok[2], true
	}
	return "", false
}

// natsEnv sets what the NATS configs read from the environment.
func natsEnv(t *testing.T) map[string]string {
	env := map[string]string{
		"CLAWMEM_NATS_PASSWORD":              "svc-pw",
		"CLAWMEM_OPS_PASSWORD":               "ops-pw",
		"CLAWMEM_AGENT_MAIN_PASSWORD":        "main-pw",
		"CLAWMEM_AGENT_DISCORD_BOT_PASSWORD": "bot-pw",
		"NATS_SERVER_NAME":                   "nats-1",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return env
}

func TestNATSConfText(t *testing.T) {
	for _, f := range []string{"nats-server.conf", "accounts.conf", "cluster.conf"} {
		text := readFile(t, filepath.Join("nats", f))
		checkTextSecrets(t, f, text)
		for _, m := range regexp.MustCompile(`(?m)^[^#\n]*\bpassword\s*[:=]\s*(\S+)`).FindAllStringSubmatch(text, -1) {
			if !strings.HasPrefix(m[1], "$") {
				t.Errorf("%s: password %s is written literally; use $ENV_VAR", f, m[1])
			}
		}
	}
	srv := readFile(t, filepath.Join("nats", "nats-server.conf"))
	for _, want := range []string{"jetstream", "max_payload: 8MB", "http: 0.0.0.0:8222", "include ./accounts.conf"} {
		if !strings.Contains(srv, want) {
			t.Errorf("nats-server.conf lacks %q", want)
		}
	}

	acc := readFile(t, filepath.Join("nats", "accounts.conf"))
	for _, want := range []string{
		`"clawmem.>"`, `"$JS.API.>"`, `"$SRV.>"`, `"_INBOX.>"`, "allow_responses: true",
		`"clawmem.hooks.v1.main.>"`, `"clawmem.v1.main.>"`,
		`"clawmem.hooks.v1.discord-bot.>"`, `"clawmem.v1.discord-bot.>"`,
	} {
		if !strings.Contains(acc, want) {
			t.Errorf("accounts.conf lacks %s", want)
		}
	}

	// Each AGENT_<ID> block names only its own agent's subjects.
	starts := regexp.MustCompile(`(?m)^\s*(AGENT_[A-Z0-9_]+)\s*\{`).FindAllStringSubmatchIndex(acc, -1)
	if len(starts) < 2 {
		t.Fatalf("accounts.conf: want at least two AGENT_<ID> accounts, have %d", len(starts))
	}
	quoted := regexp.MustCompile(`"(clawmem\.[^"]*)"`)
	for i, st := range starts {
		end := len(acc)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		block, acct := acc[st[0]:end], acc[st[2]:st[3]]
		user := regexp.MustCompile(`\buser:\s*([A-Za-z0-9_-]+)`).FindStringSubmatch(block)
		if user == nil {
			t.Errorf("%s: no user", acct)
			continue
		}
		agent := user[1]
		if agentAccount(agent) != acct {
			t.Errorf("user %s is in account %s, want %s", agent, acct, agentAccount(agent))
		}
		subs := quoted.FindAllStringSubmatch(block, -1)
		if len(subs) != 4 {
			t.Errorf("%s: want 2 publish allows and 2 imports, found %d clawmem subjects", acct, len(subs))
		}
		for _, m := range subs {
			if a, ok := subjectAgent(m[1]); !ok || a != agent {
				t.Errorf("%s (agent %s) names subject %q", acct, agent, m[1])
			}
		}
	}
	// Each export is visible only to the account of the agent it names.
	exports := regexp.MustCompile(`service:\s*"([^"]+)",\s*accounts:\s*\[([^\]]*)\]`).FindAllStringSubmatch(acc, -1)
	if len(exports) < 4 {
		t.Errorf("accounts.conf: want two exports per agent, have %d", len(exports))
	}
	for _, m := range exports {
		agent, ok := subjectAgent(m[1])
		if !ok {
			t.Errorf("export %q is not a per-agent subject", m[1])
			continue
		}
		if got := strings.TrimSpace(m[2]); got != agentAccount(agent) {
			t.Errorf("export %q is visible to [%s], want only %s", m[1], got, agentAccount(agent))
		}
	}
}

func TestNATSServerConf(t *testing.T) {
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !opts.JetStream || opts.StoreDir != dataDir {
		t.Errorf("jetstream %v store_dir %q: want JetStream on in %s", opts.JetStream, opts.StoreDir, dataDir)
	}
	if opts.MaxPayload != 8<<20 {
		t.Errorf("max_payload %d, want 8MB", opts.MaxPayload)
	}
	if opts.HTTPPort != 8222 {
		t.Errorf("monitoring port %d, want 8222 (the compose healthcheck uses it)", opts.HTTPPort)
	}
	if fmt.Sprint(opts.Port) != natsPort {
		t.Errorf("client port %d, want %s", opts.Port, natsPort)
	}

	// Enabling accounts as the file's comment says yields a valid config.
	natsEnv(t)
	dir := t.TempDir()
	for _, f := range []string{"nats-server.conf", "accounts.conf"} {
		text := readFile(t, filepath.Join("nats", f))
		if f == "nats-server.conf" {
			text = strings.Replace(text, "# include ./accounts.conf", "include ./accounts.conf", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "nats-server.conf")
	opts, err = server.ProcessConfigFile(p)
	if err != nil {
		t.Fatalf("nats-server.conf with accounts enabled: %v", err)
	}
	if len(opts.Users) < 4 {
		t.Errorf("with accounts enabled: %d users, want the service, ops and agent users", len(opts.Users))
	}
}

func TestNATSClusterConf(t *testing.T) {
	natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if opts.ServerName != "nats-1" {
		t.Errorf("server_name %q: want it from $NATS_SERVER_NAME", opts.ServerName)
	}
	if opts.Cluster.Name == "" || opts.Cluster.Port != 6222 {
		t.Errorf("cluster name %q port %d: want a named cluster on 6222", opts.Cluster.Name, opts.Cluster.Port)
	}
	if len(opts.Routes) != 3 {
		t.Errorf("%d routes, want 3", len(opts.Routes))
	}
	if !opts.JetStream || opts.MaxPayload != 8<<20 {
		t.Errorf("jetstream %v max_payload %d: want JetStream and 8MB", opts.JetStream, opts.MaxPayload)
	}
	if len(opts.Users) == 0 {
		t.Error("cluster.conf does not include the accounts")
	}
}

func TestNATSAccountPermissions(t *testing.T) {
	natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	var svc *server.User
	for _, u := range opts.Users {
		if u.Account == nil {
			t.Errorf("user %s has no account", u.Username)
			continue
		}
		if u.Account.Name == serviceAcct {
			if u.Username == serviceUser {
				svc = u
			}
			continue
		}
		agent := u.Username
		agents = append(agents, agent)
		if u.Account.Name != agentAccount(agent) {
			t.Errorf("agent user %s is in account %s, want %s", agent, u.Account.Name, agentAccount(agent))
		}
		p := u.Permissions
		if p == nil || p.Publish == nil || p.Subscribe == nil {
			t.Errorf("agent user %s: want explicit publish and subscribe permissions", agent)
			continue
		}
		if got, want := sorted(p.Publish.Allow), sorted(agentSubjects(agent)); !slices.Equal(got, want) {
			t.Errorf("agent %s may publish %v, want exactly %v", agent, got, want)
		}
		if got := p.Subscribe.Allow; !slices.Equal(got, []string{"_INBOX.>"}) {
			t.Errorf("agent %s may subscribe %v, want only _INBOX.> (replies)", agent, got)
		}
		if p.Response != nil {
			t.Errorf("agent %s may answer requests; agents only ask", agent)
		}
	}
	if len(agents) < 2 {
		t.Errorf("want at least two example agents, have %v", agents)
	}
	if svc == nil || svc.Permissions == nil || svc.Permissions.Publish == nil || svc.Permissions.Subscribe == nil {
		t.Fatalf("no %s user with permissions in account %s", serviceUser, serviceAcct)
	}
	for _, want := range []string{"clawmem.>", "$JS.API.>"} {
		if !slices.Contains(svc.Permissions.Publish.Allow, want) {
			t.Errorf("service user may not publish %s", want)
		}
	}
	// Every bucket clawmem creates must be writable by its processes.
	for _, want := range []string{"$KV." + schemas.BucketCursors + ".>", "$KV." + schemas.BucketWatch + ".>",
		"$KV." + schemas.BucketDistill + ".>", "$O." + schemas.BucketBackups + ".>"} {
		if !slices.Contains(svc.Permissions.Publish.Allow, want) {
			t.Errorf("service user may not publish %s", want)
		}
	}
	for _, want := range []string{"clawmem.>", "$SRV.>"} {
		if !slices.Contains(svc.Permissions.Subscribe.Allow, want) {
			t.Errorf("service user may not subscribe %s", want)
		}
	}
	if svc.Permissions.Response == nil {
		t.Error("service user cannot answer requests from agent accounts (allow_responses)")
	}
}

// TestNATSAccountsLive runs a server with accounts.conf and checks what each
// user can and cannot do: the service user sets up clawmem's streams and
// serves requests; an agent publishes events and transcripts and asks the
// service for its own subjects only, and cannot see another agent's replies.
func TestNATSAccountsLive(t *testing.T) {
	env := natsEnv(t)
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	connect := func(user, pw string) (*nats.Conn, chan error) {
		t.Helper()
		errs := make(chan error, 64)
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, pw), nats.Name(user),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case errs <- err:
				default:
				}
			}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc, errs
	}
	expectDenied := func(errs chan error, subject string) {
		t.Helper()
		deadline := time.After(3 * time.Second)
		for {
			select {
			case err := <-errs:
				msg := strings.ToLower(err.Error())
				if strings.Contains(msg, "permissions violation") && strings.Contains(msg, strings.ToLower(subject)) {
					return
				}
			case <-deadline:
				t.Errorf("no permissions violation for %q", subject)
				return
			}
		}
	}
	noAsyncErrors := func(who string, errs chan error) {
		t.Helper()
		select {
		case err := <-errs:
			t.Errorf("%s: unexpected async error: %v", who, err)
		default:
		}
	}

	// The service user: streams and KV as clawmem creates them, a consumer,
	// and a stand-in for the query service answering clawmem.v1.<agent>.<op>.
	svc, svcErrs := connect(serviceUser, env["CLAWMEM_NATS_PASSWORD"])
	js, err := jetstream.New(svc)
	if err != nil {
		t.Fatal(err)
	}
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatalf("service user cannot create clawmem's streams: %v", err)
	}
	kv, err := js.KeyValue(ctx, "clawmem_cursors")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "main.s1", []byte("1")); err != nil {
		t.Fatalf("service user cannot write the cursor bucket: %v", err)
	}
	svcMicro, err := micro.AddService(svc, micro.Config{Name: "clawmem", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svcMicro.Stop()
	if err := svcMicro.AddEndpoint("recall", micro.HandlerFunc(func(r micro.Request) {
		agent := strings.Split(r.Subject(), ".")[2]
		_ = r.Respond([]byte(agent))
	}), micro.WithEndpointSubject("clawmem.v1.*.recall")); err != nil {
		t.Fatal(err)
	}

	mainNC, mainErrs := connect("main", env["CLAWMEM_AGENT_MAIN_PASSWORD"])
	botNC, botErrs := connect("discord-bot", env["CLAWMEM_AGENT_DISCORD_BOT_PASSWORD"])

	// An agent hands in its own events as requests; clawmem's hook service
	// (running as the service user) checks them and puts them on the stream,
	// acked and deduplicated, with no stream sequence in the reply.
	hooksCtx, stopHooks := context.WithCancel(ctx)
	defer stopHooks()
	go func() { _ = producers.NewHookService(producers.New(js), nil).Run(hooksCtx, svc) }()
	hook := func(nc *nats.Conn, agent, envAgent, msgID string) (producers.HookReply, error) {
		m := nats.NewMsg("clawmem.hooks.v1." + agent + ".agent_end")
		m.Data = []byte(`{"v":1,"kind":"agent_end","agentId":"` + envAgent + `","sessionKey":"s1","ts":1,"event":{"success":true,"messages":[]}}`)
		m.Header.Set("Nats-Msg-Id", msgID)
		var reply *nats.Msg
		var err error
		for range 50 { // the hook service subscribes a moment after the goroutine starts
			if reply, err = nc.RequestMsg(m, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var r producers.HookReply
		if err == nil {
			if strings.Contains(string(reply.Data), "seq") {
				t.Errorf("hook reply reveals the stream's sequence: %s", reply.Data)
			}
			err = json.Unmarshal(reply.Data, &r)
		}
		return r, err
	}
	for i, want := range []bool{false, true} {
		r, err := hook(mainNC, "main", "main", "agent_end.main.evt-1")
		if err != nil || !r.OK {
			t.Fatalf("agent main handing in its event (try %d): %+v %v", i+1, r, err)
		}
		if r.Duplicate != want {
			t.Errorf("try %d: duplicate %v, want %v (Nats-Msg-Id must pass the hook service)", i+1, r.Duplicate, want)
		}
	}
	// discord-bot guessing main's Msg-Id does not make main's event a duplicate.
	if r, err := hook(botNC, "discord-bot", "discord-bot", "agent_end.main.evt-2"); err != nil || !r.OK {
		t.Fatalf("discord-bot's own event: %+v %v", r, err)
	}
	if r, err := hook(mainNC, "main", "main", "agent_end.main.evt-2"); err != nil || !r.OK || r.Duplicate {
		t.Errorf("main's event after discord-bot claimed its Msg-Id: %+v %v, want stored", r, err)
	}
	// An envelope naming another agent is refused.
	if r, err := hook(botNC, "discord-bot", "main", "x"); err != nil || r.OK || r.Code != "invalid" {
		t.Errorf("discord-bot's envelope naming main: %+v %v, want refused", r, err)
	}
	events, err := js.Stream(ctx, "CLAWMEM_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.GetLastMsgForSubject(ctx, "clawmem.events.agent_end.main"); err != nil {
		t.Errorf("main's event is not in CLAWMEM_EVENTS: %v", err)
	}

	// The service user consumes and acks.
	cons, err := js.CreateOrUpdateConsumer(ctx, "CLAWMEM_EVENTS", jetstream.ConsumerConfig{Durable: "deploytest", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		got++
		if err := m.DoubleAck(ctx); err != nil {
			t.Errorf("service user cannot ack: %v", err)
		}
	}
	if got != 1 {
		t.Errorf("service user fetched %d messages, want 1 (%v)", got, batch.Error())
	}

	// Requests for one's own agent are answered.
	for _, c := range []struct {
		nc    *nats.Conn
		agent string
	}{{mainNC, "main"}, {botNC, "discord-bot"}} {
		msg, err := c.nc.Request("clawmem.v1."+c.agent+".recall", []byte(`{"query":"x"}`), 5*time.Second)
		if err != nil {
			t.Fatalf("%s recall: %v", c.agent, err)
		}
		if string(msg.Data) != c.agent {
			t.Errorf("%s recall answered %q", c.agent, msg.Data)
		}
	}

	// Another agent's subjects, the pipeline's internals and raw streams are refused.
	for _, subj := range []string{
		"clawmem.events.agent_end.main",
		"clawmem.events.agent_end.discord-bot",
		"clawmem.transcript.main.s1",
		"clawmem.hooks.v1.discord-bot.agent_end",
		"clawmem.work.candidates.main",
		"clawmem.admin.v1.stats",
		"$JS.API.INFO",
	} {
		if err := mainNC.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	if _, err := mainNC.Request("clawmem.v1.discord-bot.recall", []byte(`{}`), 500*time.Millisecond); err == nil {
		t.Error("main got an answer to discord-bot's recall")
	}
	expectDenied(mainErrs, "clawmem.v1.discord-bot.recall")
	// discord-bot's one event is all its subject holds: main's publishes as
	// discord-bot stored nothing.
	if info, err := events.Info(ctx, jetstream.WithSubjectFilter("clawmem.events.agent_end.discord-bot")); err != nil {
		t.Fatal(err)
	} else if n := info.State.Subjects["clawmem.events.agent_end.discord-bot"]; n != 1 {
		t.Errorf("discord-bot's subject holds %d events, want only its own 1", n)
	}
	// The memory log, the writer's lease and endpoints, and the backups
	// (snapshots) are the service's: the service user writes them, and no
	// agent reads or writes any of them, its own memories' included.
	leases, err := js.KeyValue(ctx, "clawmem_leases")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Put(ctx, "writer", []byte(`{"v":1,"holder":"w1"}`)); err != nil {
		t.Fatalf("service user cannot take the writer's lease: %v", err)
	}
	if _, err := js.Publish(ctx, "clawmem.mem.3.agent_main.6b0f2d4e-0000-4000-8000-000000000001", []byte(`{}`)); err != nil {
		t.Fatalf("service user cannot publish to the memory log: %v", err)
	}
	for _, subj := range []string{"clawmem.writer.v1.main.store", "$KV.clawmem_leases.writer"} {
		if err := mainNC.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	for _, subj := range []string{"clawmem.mem.>", "clawmem.mem.3.agent_main.>", "$KV.clawmem_leases.>", "$O.clawmem_backups.>"} {
		if _, err := mainNC.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}
	for _, subj := range []string{"clawmem.>", "clawmem.events.*.main", "$SRV.>"} {
		if _, err := mainNC.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		expectDenied(mainErrs, subj)
	}

	// Replies live in the asking agent's account: main's _INBOX.> sees none of discord-bot's.
	snoop, err := mainNC.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := mainNC.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := botNC.Request("clawmem.v1.discord-bot.recall", []byte(`{"query":"secret"}`), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if m, err := snoop.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("main saw discord-bot's reply on %s: %q", m.Subject, m.Data)
	}

	// Operators reach the service's discovery endpoints but cannot write memories.
	ops, opsErrs := connect("ops", env["CLAWMEM_OPS_PASSWORD"])
	if _, err := ops.Request("$SRV.PING.clawmem", nil, 5*time.Second); err != nil {
		t.Errorf("ops cannot ping the clawmem service: %v", err)
	}
	if err := ops.Publish("clawmem.events.agent_end.main", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	expectDenied(opsErrs, "clawmem.events.agent_end.main")

	noAsyncErrors("service user", svcErrs)
	noAsyncErrors("discord-bot", botErrs)
}

// deploy/nats/accounts.conf is what `clawmem nats config` generates for its
// two example agents, so the shipped file and the generator never drift.
func TestAccountsConfIsGenerated(t *testing.T) {
	files, err := natsconf.Generate(natsconf.Options{Agents: []string{"main", "discord-bot"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join("nats", "accounts.conf")); got != files[0].Text {
		t.Error("deploy/nats/accounts.conf differs from `clawmem nats config --agents main,discord-bot`: regenerate it")
	}
}
