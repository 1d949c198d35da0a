package node_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
)

// TestFailedStartStopsTheRolesFirst: a start that fails after the writer
// began (here the ingest token names an unset variable) returns that one
// error; the writer is stopped before its store closes, so no role
// reports "store is closed".
func TestFailedStartStopsTheRolesFirst(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.Port = -1
	cfg.Ingest.Addr = "127.0.0.1:0"
	cfg.Ingest.Token = "${CLAWMEM_TEST_UNSET_TOKEN_VARIABLE}"
	t.Setenv("CLAWMEM_TEST_UNSET_TOKEN_VARIABLE", "")
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = node.Run(ctx, cfg, node.Options{Embedded: true, Log: log, Roles: []string{node.RoleStore, node.RoleQuery, node.RoleIngest}})
	if err == nil || !strings.Contains(err.Error(), "ingest.token") {
		t.Fatalf("run: %v", err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("errors logged besides the cause:\n%s", logs.String())
	}
	if instance.StartingPID(dir) != 0 || instance.Running(dir) {
		t.Fatal("a failed start left its marker or run file")
	}
}
