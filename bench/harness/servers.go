package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Transports the servers are driven over.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Server is one server under test: how to start it and its trivial tool.
type Server struct {
	Name    string   // as shown in the figures
	Command []string // argv; over HTTP, "--http 127.0.0.1:PORT" is appended
	Dir     string   // working directory ("" = the current one)
	Tool    string   // the trivial tool: answers "pong", taskSupport optional
	Ask     string   // a tool that asks the user to confirm (elicitation), taskSupport optional
	// AskStatus is the status a task of Ask shows while it waits for the answer;
	// "" for a server that keeps it "working" (then the elicitation request is awaited).
	AskStatus string
	// Replicas is how many processes of it share one config.toml (so one store) when
	// a figure starts it with openReplicas; 0 is one.
	Replicas int
}

// Proc is a running server process.
type Proc struct {
	Server Server
	cmd    *exec.Cmd
	URL    string // the Streamable HTTP endpoint, "" over stdio
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tail
	dialed bool
	hc     *http.Client // the client of its HTTP sessions
	waited chan error
}

// Start starts the server over transport. Over HTTP it returns once the port accepts
// connections.
func (s Server) Start(ctx context.Context, transport string) (*Proc, error) {
	args := append([]string(nil), s.Command[1:]...)
	var addr string
	if transport == HTTP {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr = "127.0.0.1:" + strconv.Itoa(port)
		args = append(args, "--http", addr)
	}
	cmd := exec.Command(s.Command[0], args...)
	cmd.Dir = s.Dir
	p := &Proc{Server: s, cmd: cmd, stderr: &tail{}, waited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	var err error
	if transport == Stdio {
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if p.stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	go func() { p.waited <- cmd.Wait() }()
	if transport == HTTP {
		p.URL = "http://" + addr + "/mcp"
		if err := p.awaitPort(ctx, addr); err != nil {
			p.Stop()
			return nil, err
		}
	}
	return p, nil
}

func (p *Proc) awaitPort(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-p.waited:
			p.waited <- err
			return fmt.Errorf("%s exited before listening on %s: %v\n%s", p.Server.Name, addr, err, p.stderr)
		case <-ctx.Done():
			return fmt.Errorf("%s did not listen on %s: %w", p.Server.Name, addr, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// PID is the server's process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Dial opens a session: over stdio the one connection on the process's pipes (once),
// over HTTP a new session each time.
func (p *Proc) Dial(ctx context.Context, hc *http.Client, caps Caps) (*Client, error) {
	var c *Client
	var err error
	if p.URL != "" {
		p.hc = hc
		c, err = DialHTTP(ctx, hc, p.URL, caps)
	} else {
		if p.dialed {
			return nil, errors.New("stdio: one session per process")
		}
		p.dialed = true
		c, err = DialStdio(ctx, p.stdin, p.stdout, caps)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", p.Server.Name, err, p.stderr)
	}
	return c, nil
}

// Stop ends the server: its stdin is closed, then SIGTERM, then SIGKILL.
func (p *Proc) Stop() error {
	if p.stdin != nil {
		p.stdin.Close()
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.waited:
		p.waited <- err
		return nil
	case <-time.After(10 * time.Second):
	}
	p.cmd.Process.Kill()
	err := <-p.waited
	p.waited <- err
	return fmt.Errorf("%s did not stop within 10 s of SIGTERM; killed", p.Server.Name)
}

// RSS is the resident set (VmRSS of /proc/PID/status), in bytes, of the server and of
// the processes it started (mcp-wasmhost's worker processes, where its plugins run).
func (p *Proc) RSS() (int64, error) {
	var total int64
	for _, pid := range family(p.PID()) {
		n, err := vmRSS(pid)
		if err != nil {
			if pid != p.PID() {
				continue // a worker that just exited
			}
			return 0, err
		}
		total += n
	}
	return total, nil
}

func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc/%d/status: unexpected %q", pid, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// CPU is the processor time (user + system) the server has used so far, with that of
// the processes it started (worker processes: live ones, and those it has reaped),
// from /proc/PID/stat, in clock ticks of 10 ms. Unlike wall time it hardly depends on
// what else the machine is doing.
func (p *Proc) CPU() (time.Duration, error) { return treeCPU(p.PID()) }

// treeCPU is the processor time of process root and of its descendants: live ones,
// and those it has waited for.
func treeCPU(root int) (time.Duration, error) {
	var ticks int64
	for _, pid := range family(root) {
		f, err := statFields(pid)
		if err != nil {
			if pid != root {
				continue
			}
			return 0, err
		}
		last := 13 // utime, stime
		if pid == root {
			last = 15 // and cutime, cstime: children it has waited for
		}
		for _, s := range f[11:last] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// statFields returns the fields of /proc/PID/stat after the command name: field 3
// (state) is f[0], ppid f[1], utime f[11] ... cstime f[14].
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from
	// the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	return f, nil
}

// family returns pid and its live descendants.
func family(pid int) []int {
	parent := map[int]int{}
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			child, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if f, err := statFields(child); err == nil {
				if pp, err := strconv.Atoi(f[1]); err == nil {
					parent[child] = pp
				}
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		for child, pp := range parent {
			if pp == out[i] {
				out = append(out, child)
			}
		}
	}
	return out
}

// Stderr is the end of what the server wrote to stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last 8 KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > 8<<10 {
		t.b = append(t.b[:0], t.b[len(t.b)-8<<10:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
