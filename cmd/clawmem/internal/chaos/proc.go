package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/instance"
)

// Up is a `clawmem up` the harness runs, kills and restarts on one data
// dir. Its NATS and hook ingest keep their ports across restarts, so a
// publisher's URL stays good.
type Up struct {
	Bin, Dir string
	// NATSPort and IngestPort are fixed at the first start (free ports).
	NATSPort, IngestPort int
	// Config is merged over the harness's own (ports, watcher state dir).
	Config map[string]any
	// IngestToken is the data dir's ingest token, made before the first
	// start so the load can send it from the first event on.
	IngestToken string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *tail
	Info instance.RunInfo
}

// NewUp prepares an instance on dir; it starts nothing.
func NewUp(bin, dir string, cfg map[string]any) (*Up, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = exe
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	token, err := authdir.Token(dir, authdir.IngestToken)
	if err != nil {
		return nil, err
	}
	return &Up{Bin: bin, Dir: dir, NATSPort: ports[0], IngestPort: ports[1], Config: cfg, IngestToken: token, logs: &tail{max: 8 << 20}}, nil
}

// FreePorts returns n loopback ports free at the time of asking.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// IngestURL is the hook ingest's base URL.
func (u *Up) IngestURL() string { return "http://127.0.0.1:" + strconv.Itoa(u.IngestPort) }

// Ingest is the hook ingest with its token.
func (u *Up) Ingest() Ingest { return Ingest{URL: u.IngestURL(), Token: u.IngestToken} }

// NATSURL is the instance's NATS URL (its embedded server's, or nats.url).
func (u *Up) NATSURL() string {
	if n, ok := u.Config["nats"].(map[string]any); ok {
		if url, ok := n["url"].(string); ok && url != "" {
			return url
		}
	}
	return "nats://127.0.0.1:" + strconv.Itoa(u.NATSPort)
}

// StateDir is the OpenClaw state dir the instance's watcher follows.
func (u *Up) StateDir() string { return filepath.Join(u.Dir, "openclaw") }

func (u *Up) writeConfig() error {
	cfg := map[string]any{
		"nats":   map[string]any{"port": u.NATSPort},
		"ingest": map[string]any{"addr": "127.0.0.1:" + strconv.Itoa(u.IngestPort)},
		"ui":     map[string]any{"listen": "127.0.0.1:0"},
		"watch":  map[string]any{"stateDir": u.StateDir()},
	}
	merge(cfg, u.Config)
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(u.Dir, "config.json"), b, 0o600)
}

// merge sets src's keys in dst, object into object.
func merge(dst, src map[string]any) {
	for k, v := range src {
		sv, sok := v.(map[string]any)
		dv, dok := dst[k].(map[string]any)
		if sok && dok {
			dv = maps.Clone(dv)
			merge(dv, sv)
			dst[k] = dv
			continue
		}
		dst[k] = v
	}
}

// Start runs `clawmem up` and waits until it has written its run file.
func (u *Up) Start(ctx context.Context) error {
	if err := os.MkdirAll(u.StateDir(), 0o700); err != nil {
		return err
	}
	if err := u.writeConfig(); err != nil {
		return err
	}
	os.Remove(filepath.Join(u.Dir, instance.RunFile))
	cmd := exec.Command(u.Bin, "up", "--data-dir", u.Dir, "--config", filepath.Join(u.Dir, "config.json"))
	cmd.Stdout, cmd.Stderr = u.logs, u.logs
	mark := u.logs.written()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	u.mu.Lock()
	u.cmd, u.done = cmd, done
	u.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	external := u.NATSURL() != "nats://127.0.0.1:"+strconv.Itoa(u.NATSPort)
	for {
		if info, ok := instance.ReadRunInfo(u.Dir); ok && info.PID == cmd.Process.Pid {
			u.Info = info
			return nil
		}
		// With an external server there is no run file: clawmem up says
		// when it runs.
		if external && strings.Contains(u.logs.since(mark), `msg="clawmem running"`) {
			u.Info = instance.RunInfo{PID: cmd.Process.Pid, NATSURL: u.NATSURL(), IngestURL: u.IngestURL()}
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("clawmem up exited at start: %s\n%s", cmd.ProcessState, u.LastLines(60))
		case <-ctx.Done():
			u.Kill()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			u.Kill()
			return fmt.Errorf("clawmem up did not start in 60 s:\n%s", u.Logs())
		}
	}
}

// PID is the running process's id, 0 when none runs.
func (u *Up) PID() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cmd == nil || u.cmd.Process == nil {
		return 0
	}
	select {
	case <-u.done:
		return 0
	default:
		return u.cmd.Process.Pid
	}
}

// Running reports whether the process has not exited.
func (u *Up) Running() bool { return u.PID() != 0 }

// Exited is closed when the running process exits (nil before a start).
func (u *Up) Exited() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.done
}

// Kill sends SIGKILL and waits for the process to go.
func (u *Up) Kill() { u.signal(syscall.SIGKILL, 0) }

// Stop sends SIGTERM and waits up to a minute for a clean exit; it
// reports the exit status.
func (u *Up) Stop() error { return u.signal(syscall.SIGTERM, time.Minute) }

func (u *Up) signal(sig syscall.Signal, wait time.Duration) error {
	u.mu.Lock()
	cmd, done := u.cmd, u.done
	u.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(sig)
	if wait == 0 {
		<-done
		return nil
	}
	select {
	case <-done:
	case <-time.After(wait):
		cmd.Process.Kill()
		<-done
		return errors.New("clawmem up did not stop within a minute of SIGTERM; killed")
	}
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("clawmem up exited with %s", cmd.ProcessState)
	}
	return nil
}

// Logs is the end of the instance's output, for failure reports.
func (u *Up) Logs() string { return u.logs.String() }

// LastLines is the last n lines of the instance's output: why it exited,
// short enough for a failure report.
func (u *Up) LastLines(n int) string {
	s := strings.TrimRight(u.logs.String(), "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}

// SaveLogs writes the end of the instance's output (the last 8 MB, over
// all its restarts) to clawmem-up.log in its data dir, for --keep.
func (u *Up) SaveLogs() {
	os.WriteFile(filepath.Join(u.Dir, "clawmem-up.log"), []byte(u.logs.String()), 0o600)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
	n   int64 // bytes ever written
}

// written is how many bytes were ever written.
func (t *tail) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// since is what was written after mark (as much of it as is kept).
func (t *tail) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := min(int64(len(t.b)), t.n-mark)
	return string(t.b[int64(len(t.b))-keep:])
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += int64(len(p))
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func mkdirTemp(parent, name string) (string, error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(parent, "chaos-"+name+"-")
}
