// Package sandbox confines the engine: every process of a Pulumi operation (the CLI, the
// language host, each provider plugin) may read the toolchain and the system's libraries and
// certificates, read and write only its own stack's directories, and use bounded resources.
//
// Go cannot yet start a child under a Landlock ruleset (that arrives in Go 1.28), so Nimbus
// starts itself as a small launcher (the hidden subcommand Subcommand) that sets the resource
// limits, restricts itself with Landlock and executes the engine; everything the engine starts
// inherits both. Where the kernel has no Landlock the launcher still sets the limits, and the
// program validator is the only wall: Nimbus says so at start and on the system page.
package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Subcommand is the hidden command line word that makes nimbus the launcher.
const Subcommand = "sandbox-exec"

// LaunchedEnv marks the launcher's process until it executes the engine. A program started as
// the launcher that never lets it run (a test binary without LaunchIfAsked) then refuses to
// start an engine itself (see NotLaunched), instead of starting its own work over again.
const LaunchedEnv = "NIMBUS_SANDBOX_LAUNCHER"

// NotLaunched fails when this process was started as the launcher but went on as itself.
func NotLaunched() error {
	if os.Getenv(LaunchedEnv) != "" {
		return fmt.Errorf("started as the sandbox launcher (%s), this program ran on as itself: its main, or its tests' TestMain, must call sandbox.LaunchIfAsked first", Subcommand)
	}
	return nil
}

// Mode says how much the operator insists on Landlock.
type Mode string

const (
	// Auto confines the engine where the kernel offers Landlock, and warns where it does not.
	Auto Mode = "auto"
	// Required refuses to start without Landlock.
	Required Mode = "required"
	// Off runs the engine unconfined, with the validator as the only wall; for diagnosis only.
	Off Mode = "off"
)

// ParseMode reads a mode setting.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return Auto, nil
	case Auto, Required, Off:
		return m, nil
	}
	return "", fmt.Errorf("must be auto, required or off, not %q", s)
}

// Limits bound what one engine process may use; zero leaves a limit as it is.
type Limits struct {
	AddressSpace uint64 // bytes of virtual memory
	CPUSeconds   uint64 // of CPU time
	OpenFiles    uint64
	Processes    uint64 // tasks of the user: a fork bomb stops here (root is exempt)
	FileSize     uint64 // bytes of the largest file it may write
}

// DefaultLimits fit the engine with room to spare: the CLI and its Go plugins reserve a few GiB
// of address space each, and a day of CPU time is beyond any operation.
var DefaultLimits = Limits{AddressSpace: 16 << 30, CPUSeconds: 24 * 3600, OpenFiles: 4096, Processes: 4096, FileSize: 8 << 30}

// Policy is what a confined process may reach.
type Policy struct {
	Read       []string // directories it may read and execute from
	Write      []string // directories it may read, write and rename within
	ReadFiles  []string // single files it may read
	WriteFiles []string // single files it may read and write (devices such as /dev/null)
	Limits     Limits
}

// System is what every engine process needs of the machine: programs and libraries,
// certificates, name resolution, the time zone and the user database (for its own name), and
// the null and random devices. Missing ones are skipped.
func System() Policy {
	return Policy{
		Read: []string{"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ssl", "/etc/ca-certificates", "/etc/pki"},
		ReadFiles: []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
			"/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/services", "/etc/protocols",
			"/dev/urandom", "/dev/random"},
		WriteFiles: []string{"/dev/null"},
		Limits:     DefaultLimits,
	}
}

// Union is p with q's paths added; q's limits win where set.
func (p Policy) Union(q Policy) Policy {
	out := Policy{
		Read:       append(append([]string(nil), p.Read...), q.Read...),
		Write:      append(append([]string(nil), p.Write...), q.Write...),
		ReadFiles:  append(append([]string(nil), p.ReadFiles...), q.ReadFiles...),
		WriteFiles: append(append([]string(nil), p.WriteFiles...), q.WriteFiles...),
		Limits:     p.Limits,
	}
	set := func(dst *uint64, v uint64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&out.Limits.AddressSpace, q.Limits.AddressSpace)
	set(&out.Limits.CPUSeconds, q.Limits.CPUSeconds)
	set(&out.Limits.OpenFiles, q.Limits.OpenFiles)
	set(&out.Limits.Processes, q.Limits.Processes)
	set(&out.Limits.FileSize, q.Limits.FileSize)
	return out
}

// ABI is the kernel's Landlock ABI version, 0 when it has none.
func ABI() int {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Launcher wraps engine commands so that they run confined. The zero Launcher runs them as
// they are.
type Launcher struct {
	// Self is the nimbus executable, which knows Subcommand.
	Self string
	Mode Mode
	// Base is granted to every command: System() and the toolchain.
	Base Policy
}

// Confined reports whether commands are confined by Landlock, not only limited.
func (l Launcher) Confined() bool { return l.Mode != Off && l.Self != "" && ABI() > 0 }

// Wrap returns the program and arguments that run name with args under l.Base and p.
func (l Launcher) Wrap(p Policy, name string, args ...string) (string, []string) {
	if l.Mode == Off || l.Self == "" {
		return name, args
	}
	p = l.Base.Union(p)
	argv := []string{Subcommand}
	for _, d := range p.Read {
		argv = append(argv, "--read", d)
	}
	for _, d := range p.Write {
		argv = append(argv, "--write", d)
	}
	for _, f := range p.ReadFiles {
		argv = append(argv, "--read-file", f)
	}
	for _, f := range p.WriteFiles {
		argv = append(argv, "--write-file", f)
	}
	lim := p.Limits
	argv = append(argv, "--as", strconv.FormatUint(lim.AddressSpace, 10), "--cpu", strconv.FormatUint(lim.CPUSeconds, 10),
		"--nofile", strconv.FormatUint(lim.OpenFiles, 10), "--nproc", strconv.FormatUint(lim.Processes, 10),
		"--fsize", strconv.FormatUint(lim.FileSize, 10))
	if l.Mode == Required {
		argv = append(argv, "--required")
	}
	return l.Self, append(append(argv, "--", name), args...)
}

// LaunchIfAsked makes a test binary a launcher too: call it first in TestMain of every package
// whose tests run the engine. It returns when the process was not started as the launcher.
func LaunchIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		Main(os.Args[2:])
	}
}

// Main is the launcher: it confines itself as args say and executes the command after "--".
// It returns only by exiting, 126 when it cannot confine or execute (as a shell does when a
// command cannot run).
func Main(args []string) {
	err := confineAndExec(args)
	fmt.Fprintf(os.Stderr, "nimbus %s: %v\n", Subcommand, err)
	os.Exit(126)
}

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func confineAndExec(args []string) error {
	fs := flag.NewFlagSet(Subcommand, flag.ContinueOnError)
	var p Policy
	fs.Var((*paths)(&p.Read), "read", "directory to read")
	fs.Var((*paths)(&p.Write), "write", "directory to read and write")
	fs.Var((*paths)(&p.ReadFiles), "read-file", "file to read")
	fs.Var((*paths)(&p.WriteFiles), "write-file", "file to read and write")
	fs.Uint64Var(&p.Limits.AddressSpace, "as", 0, "address space, bytes")
	fs.Uint64Var(&p.Limits.CPUSeconds, "cpu", 0, "CPU time, seconds")
	fs.Uint64Var(&p.Limits.OpenFiles, "nofile", 0, "open files")
	fs.Uint64Var(&p.Limits.Processes, "nproc", 0, "processes")
	fs.Uint64Var(&p.Limits.FileSize, "fsize", 0, "file size, bytes")
	required := fs.Bool("required", false, "fail without Landlock")
	if err := fs.Parse(args); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		return errors.New("no command to run")
	}
	path := command[0]
	if !strings.Contains(path, "/") {
		var err error
		if path, err = lookPath(path); err != nil {
			return err
		}
	}
	if err := limit(p.Limits); err != nil {
		return err
	}
	// Landlock binds the calling thread; it must be the one that executes the command.
	runtime.LockOSThread()
	if err := restrict(p, *required); err != nil {
		return err
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, LaunchedEnv+"=") })
	return syscall.Exec(path, command, env)
}

func lookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on PATH", name)
}

func limit(l Limits) error {
	for _, r := range []struct {
		resource int
		value    uint64
		name     string
	}{
		{unix.RLIMIT_AS, l.AddressSpace, "address space"},
		{unix.RLIMIT_CPU, l.CPUSeconds, "CPU time"},
		{unix.RLIMIT_NOFILE, l.OpenFiles, "open files"},
		{unix.RLIMIT_NPROC, l.Processes, "processes"},
		{unix.RLIMIT_FSIZE, l.FileSize, "file size"},
		{unix.RLIMIT_CORE, 0, "core size"},
	} {
		if r.value == 0 && r.resource != unix.RLIMIT_CORE {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.resource, &cur); err != nil {
			return fmt.Errorf("read the %s limit: %w", r.name, err)
		}
		// Never raise a limit the operator set lower.
		v := min(r.value, cur.Max)
		if err := unix.Setrlimit(r.resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("limit %s to %d: %w", r.name, v, err)
		}
	}
	return nil
}

// restrict applies the policy's paths to this thread. Only the filesystem and the scopes are
// handled: the engine needs the network (its plugins speak gRPC on loopback, and providers
// reach their clouds), and the scopes keep it from signalling processes outside its sandbox.
func restrict(p Policy, required bool) error {
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}
	if !required {
		cfg = cfg.BestEffort()
	}
	var rules []landlock.Rule
	if len(p.Read) > 0 {
		rules = append(rules, landlock.RODirs(p.Read...).IgnoreIfMissing())
	}
	if len(p.Write) > 0 {
		w := landlock.RWDirs(p.Write...)
		if ABI() >= 2 {
			// Renames between its own directories. Asked of an older kernel, the refer right
			// would make best effort give up on Landlock altogether.
			w = w.WithRefer()
		}
		rules = append(rules, w)
	}
	if len(p.ReadFiles) > 0 {
		rules = append(rules, landlock.ROFiles(p.ReadFiles...).IgnoreIfMissing())
	}
	if len(p.WriteFiles) > 0 {
		rules = append(rules, landlock.RWFiles(p.WriteFiles...).IgnoreIfMissing())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil // no Landlock here, and not required: the limits alone apply
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
