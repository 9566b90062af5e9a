package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

func TestTasks(t *testing.T) {
	dir := t.TempDir()
	store := func(tk config.Tasks) config.Tasks {
		if tk.Store == "" {
			tk.Store = config.StoreSQLite
		}
		if tk.DataDir == "" {
			tk.DataDir = config.DefaultDataDir()
		}
		tk.MaxResultBytes, tk.MaxStoredTasks, tk.MaxStoreMiB = config.DefaultMaxResultBytes, config.DefaultMaxStoredTasks, config.DefaultMaxStoreMiB
		if tk.MaxAnonymous == 0 {
			tk.MaxAnonymous = config.DefaultMaxAnonymous
		}
		return tk
	}
	tests := []struct {
		name, doc string
		want      config.Tasks
		err       string
	}{
		{"defaults", "", config.Tasks{
			DefaultTTL: config.Duration{Duration: time.Hour}, MaxTTL: config.Duration{Duration: 24 * time.Hour},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64}, ""},
		{"set", "[tasks]\ndefault_ttl = \"5m\"\nmax_ttl = \"2h\"\npoll_interval = \"250ms\"\nmax_per_client = 8\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: 5 * time.Minute}, MaxTTL: config.Duration{Duration: 2 * time.Hour},
			PollInterval: config.Duration{Duration: 250 * time.Millisecond}, MaxPerClient: 8}, ""},
		{"default follows a small max", "[tasks]\nmax_ttl = \"10m\"\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: 10 * time.Minute}, MaxTTL: config.Duration{Duration: 10 * time.Minute},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64}, ""},
		{"default over max", "[tasks]\nmax_ttl = \"10m\"\ndefault_ttl = \"1h\"\n", config.Tasks{}, "default_ttl 1h0m0s out of range"},
		{"poll too fast", "[tasks]\npoll_interval = \"1ms\"\n", config.Tasks{}, "poll_interval 1ms out of range"},
		{"limit", "[tasks]\nmax_per_client = -1\n", config.Tasks{}, "max_per_client -1 out of range"},
		{"anonymous limit", "[tasks]\nmax_anonymous = 3\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: time.Hour}, MaxTTL: config.Duration{Duration: 24 * time.Hour},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64, MaxAnonymous: 3}, ""},
		{"sweep interval", "[tasks]\nsweep_interval = \"5s\"\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: time.Hour}, MaxTTL: config.Duration{Duration: 24 * time.Hour},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64, SweepInterval: config.Duration{Duration: 5 * time.Second}}, ""},
		{"sweep interval out of range", "[tasks]\nsweep_interval = \"10ms\"\n", config.Tasks{}, "sweep_interval 10ms out of range"},
		{"anonymous limit out of range", "[tasks]\nmax_anonymous = -1\n", config.Tasks{}, "max_anonymous -1 out of range"},
		{"unknown key", "[tasks]\nmax_tll = \"1h\"\n", config.Tasks{}, `:2: unknown key "tasks.max_tll"`},
		{"bad store", "[tasks]\nstore = \"redis\"\n", config.Tasks{}, `store "redis" is not "sqlite", "bolt", "memory" or a postgres:// URL`},
		{"postgres", "[tasks]\nstore = \"postgres://mcp:pw@db.internal:5432/tasks\"\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: time.Hour}, MaxTTL: config.Duration{Duration: 24 * time.Hour},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64, Store: "postgres://mcp:pw@db.internal:5432/tasks"}, ""},
		{"postgresql", "[tasks]\nstore = \"postgresql:///tasks?host=/run/postgresql\"\n", config.Tasks{
			DefaultTTL: config.Duration{Duration: time.Hour}, MaxTTL: config.Duration{Duration: 24 * time.Hour},
			PollInterval: config.Duration{Duration: time.Second}, MaxPerClient: 64, Store: "postgresql:///tasks?host=/run/postgresql"}, ""},
		{"other URL, not shown", "[tasks]\nstore = \"mysql://u:hunter2@h/db\"\n", config.Tasks{}, "store is a URL but not a postgres:// or postgresql:// one"},
		{"bad result size", "[tasks]\nmax_result_bytes = -1\n", config.Tasks{}, "max_result_bytes -1 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.doc), "config.toml", dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %v, want error containing %q", tt.doc, err, tt.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("Parse(%q) = %v: the error shows the password", tt.doc, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.doc, err)
			}
			if want := store(tt.want); cfg.Tasks != want {
				t.Errorf("Parse(%q).Tasks = %+v, want %+v", tt.doc, cfg.Tasks, want)
			}
		})
	}
}

func TestTaskStoreSettings(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse([]byte("[tasks]\nstore = \"memory\"\ndata_dir = \"state\"\nmax_result_bytes = 1000\nmax_stored_tasks = 50\nmax_store_mib = 2\n"), "config.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	tk := cfg.Tasks
	if tk.Store != "memory" || tk.DataDir != filepath.Join(dir, "state") || tk.MaxResultBytes != 1000 || tk.MaxStoredTasks != 50 || tk.MaxStoreMiB != 2 {
		t.Errorf("Parse().Tasks = %+v", tk)
	}
}

func TestGCSettings(t *testing.T) {
	tests := []struct {
		doc  string
		gc   int
		lim  int
		fail string
	}{
		{"", config.DefaultGCPercent, 0, ""},
		{"[server]\ngc_percent = 400\nmemory_limit_mib = 512\n", 400, 512, ""},
		{"[server]\ngc_percent = 5\n", 0, 0, "gc_percent 5 out of range 10..10000"},
		{"[server]\nmemory_limit_mib = 8\n", 0, 0, "memory_limit_mib 8 out of range"},
	}
	for _, tt := range tests {
		cfg, err := config.Parse([]byte(tt.doc), "config.toml", t.TempDir())
		switch {
		case tt.fail != "":
			if err == nil || !strings.Contains(err.Error(), tt.fail) {
				t.Errorf("Parse(%q) = %v, want %q", tt.doc, err, tt.fail)
			}
		case err != nil:
			t.Errorf("Parse(%q) = %v", tt.doc, err)
		case cfg.Server.GCPercent != tt.gc || cfg.Server.MemoryLimitMiB != tt.lim:
			t.Errorf("Parse(%q).Server = %+v, want gc %d limit %d", tt.doc, cfg.Server, tt.gc, tt.lim)
		}
	}
}
