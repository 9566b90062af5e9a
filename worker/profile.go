package worker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
)

// A worker's CPU profile ([Options.ProfileDir]) is for the operator who wants to see
// where a worker's time goes: a worker starts with an empty environment and no
// inherited files, so it cannot be asked by any of the usual means. The server opens
// the file (0600, in the operator's directory) and passes it as the one extra
// descriptor, number profileFD, with the extra argument profileArg. The worker keeps
// exactly that descriptor open when it closes what it inherited, starts
// runtime/pprof on it before reading its init frame, and writes the profile when its
// input ends (Serve returns). Its hardening is unchanged: the descriptor counts
// against the open-file limit like the channel does, the seccomp filter refuses no
// system call the profiler makes (setitimer/timer_create, write), and no file size
// limit is set. The guest cannot reach it: wazero's file system is the guest's
// directory grants only, with descriptors of its own.
const (
	profileArg = "cpu-profile-on-fd-3"
	profileFD  = 3
)

// profileFile is the profile's file while its worker starts.
type profileFile struct {
	f    *os.File
	name string // the final name, without the pid
}

// openProfile opens the file for the profile of the worker cmd will start, and adds it
// and profileArg to cmd. It returns nil when profiles are off.
func (m *Module) openProfile(cmd *exec.Cmd) (*profileFile, error) {
	dir := m.sup.opts.ProfileDir
	if dir == "" {
		return nil, nil
	}
	// The pid is not known before the start: the file is renamed after it (started).
	f, err := os.CreateTemp(dir, m.name+"-starting-*.cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("plugin %q: open its worker's CPU profile: %w", m.name, err)
	}
	cmd.Args = append(cmd.Args, profileArg)
	cmd.ExtraFiles = []*os.File{f}
	return &profileFile{f: f, name: m.name}, nil
}

// started names the profile's file after the worker's pid, or removes it if the worker
// did not start (err), and returns its name ("" then). The server's copy of the
// descriptor is closed: the worker has its own.
func (pf *profileFile) started(cmd *exec.Cmd, err error) string {
	if pf == nil {
		return ""
	}
	defer pf.f.Close()
	tmp := pf.f.Name()
	if err != nil {
		_ = os.Remove(tmp)
		return ""
	}
	name := filepath.Join(filepath.Dir(tmp), fmt.Sprintf("%s-%d.cpu.pprof", pf.name, cmd.Process.Pid))
	if os.Rename(tmp, name) != nil {
		return tmp // the profile is written all the same, under its temporary name
	}
	return name
}

// removeEmptyProfile removes the profile file of a worker that has exited without
// writing it (it was killed): an empty file is no profile.
func removeEmptyProfile(name string) {
	if name == "" {
		return
	}
	if fi, err := os.Stat(name); err == nil && fi.Size() == 0 {
		_ = os.Remove(name)
	}
}

// startProfile starts the CPU profile of this worker on descriptor profileFD; stop
// writes it out and closes the file.
func startProfile() (stop func(), err error) {
	f := os.NewFile(profileFD, "cpu profile")
	if f == nil {
		return nil, fmt.Errorf("CPU profile: descriptor %d is not open", profileFD)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
