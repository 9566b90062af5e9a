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
func (p *Proc) Dial(ctx context.Context, hc *http.Client, elicit bool) (*Client, error) {
	var c *Client
	var err error
	if p.URL != "" {
		p.hc = hc
		c, err = DialHTTP(ctx, hc, p.URL, elicit)
	} else {
		if p.dialed {
			return nil, errors.New("stdio: one session per process")
		}
		p.dialed = true
		c, err = DialStdio(ctx, p.stdin, p.stdout, elicit)
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

// RSS is the server's resident set (VmRSS of /proc/PID/status) in bytes.
func (p *Proc) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc/%d/status: unexpected %q", p.PID(), line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", p.PID())
}

// CPU is the processor time (user + system) the server process has used so far, from
// /proc/PID/stat, in clock ticks of 10 ms. Unlike wall time it hardly depends on what
// else the machine is doing.
func (p *Proc) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", p.PID(), b)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.PID(), err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
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
