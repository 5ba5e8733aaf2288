// Package sandbox confines the engine: every process of a Pulumi operation (the CLI, the
// language host, each provider plugin) may read the toolchain and the system's libraries and
// certificates, execute only the toolchain's own binaries, read and write only its own stack's
// directories, connect only to the TCP ports it is given, and use bounded resources.
//
// Go cannot yet start a child under a Landlock ruleset (that arrives in Go 1.28). A Landlock
// restriction belongs to a thread, though, and a child inherits it from the thread that forks
// it: so Start restricts an OS thread of its own (no other goroutine ever runs on it, and it
// ends with its goroutine), starts the engine from it, and sets the child's resource limits.
// The thread waits a while for the next command under the same policy (see thread).
// The network's rules are a layer of their own, made once per set of ports (see Ports).
// Everything the engine starts inherits both. Where the kernel has no Landlock only the limits
// apply, and the program validator is the only wall: Nimbus says so at start and on the system
// page.
package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

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

// Policy is what a confined process may reach. Nothing it may write may it execute, and it
// may execute nothing but the files named in Exec.
type Policy struct {
	Read       []string // directories it may read
	Exec       []string // files it may execute (and read): the engine's own binaries
	Write      []string // directories it may read, write and rename within
	ReadFiles  []string // single files it may read
	WriteFiles []string // single files it may read and write (devices such as /dev/null)
	// Connect are the TCP ports it may connect to, on any address; nil leaves TCP as it is.
	Connect *Ports
	Limits  Limits
}

// System is what every engine process needs of the machine: libraries and the directories of
// programs (to read, not to run), certificates, name resolution, the time zone and the user
// database (for its own name), and the null and random devices. Missing ones are skipped. Its
// limits fit the engine with room to spare: the CLI and its Go plugins reserve a few GiB of
// address space each, and a day of CPU time is beyond any operation.
func System() Policy {
	return Policy{
		Read: []string{"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ssl", "/etc/ca-certificates", "/etc/pki"},
		ReadFiles: []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf",
			"/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/services", "/etc/protocols",
			"/dev/urandom", "/dev/random"},
		WriteFiles: []string{"/dev/null"},
		Limits:     Limits{AddressSpace: 16 << 30, CPUSeconds: 24 * 3600, OpenFiles: 4096, Processes: 4096, FileSize: 8 << 30},
	}
}

// Union is p with q's paths added; q's ports and limits win where set.
func (p Policy) Union(q Policy) Policy {
	out := Policy{
		Read:       append(append([]string(nil), p.Read...), q.Read...),
		Exec:       append(append([]string(nil), p.Exec...), q.Exec...),
		Write:      append(append([]string(nil), p.Write...), q.Write...),
		ReadFiles:  append(append([]string(nil), p.ReadFiles...), q.ReadFiles...),
		WriteFiles: append(append([]string(nil), p.WriteFiles...), q.WriteFiles...),
		Connect:    p.Connect,
		Limits:     p.Limits,
	}
	if q.Connect != nil {
		out.Connect = q.Connect
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

// netABI is the first Landlock ABI that can restrict TCP connections.
const netABI = 4

// Sandbox starts engine commands confined. The zero Sandbox starts them as they are.
type Sandbox struct {
	Mode Mode
	// Base is granted to every command: System() and the toolchain.
	Base Policy
	// Account is who confined commands run as, when Nimbus may choose (it runs as root): an
	// unprivileged account of the engine's own. Nil runs them as Nimbus.
	Account *syscall.Credential
	nets    *netRulesets
	// kept are confined threads waiting for a command (see thread).
	kept *keptThreads
}

// New returns a Sandbox confining commands as mode says, granting each base.
func New(mode Mode, base Policy) Sandbox {
	return Sandbox{Mode: mode, Base: base, nets: &netRulesets{fds: map[string]int{}}, kept: &keptThreads{}}
}

// Confined reports whether commands are confined by Landlock, not only limited.
func (s Sandbox) Confined() bool { return s.Mode != "" && s.Mode != Off && ABI() > 0 }

// ConfinesNetwork reports whether confined commands reach only the TCP ports they are given.
func (s Sandbox) ConfinesNetwork() bool { return s.Confined() && ABI() >= netABI }

// Start starts cmd under s.Base and p, as cmd.Start does, as s.Account where one is set. Limits
// are set on the process as soon as it runs: what it starts inherits them, and the CLI reads
// its program and settings before it starts a language host or a plugin, long after these few
// system calls. (A launcher that set them first would have to be executable by the engine too,
// and prlimit(1) can change the limits of other processes of the account.)
//
// The thread that starts the command takes on the account itself, as it takes on the Landlock
// rules: the child is then the account's from its first instruction, and the thread may set
// its limits as the child's owner, a right root needs CAP_SYS_RESOURCE for, which containers
// often drop. A thread prepared or kept for the same policy starts it at once (see thread).
func (s Sandbox) Start(cmd *exec.Cmd, p Policy) error {
	if s.Mode == "" || s.Mode == Off {
		if s.Account != nil {
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{}
			}
			cmd.SysProcAttr.Credential = s.Account
		}
		return cmd.Start()
	}
	p = s.Base.Union(p)
	t := s.kept.take(p.key())
	if t == nil {
		t = newThread(p)
		s.run(t, p)
	}
	return t.start(cmd)
}

// onThreadOfItsOwn runs fn on an OS thread no other goroutine will run on, which ends when fn
// returns, with whatever fn did to it. The main thread is never that thread: the runtime parks
// it rather than end it, and a restricted main thread would stand for the whole process (its
// owner, what may trace it). A goroutine that finds itself on the main thread holds it, so
// that another goroutine cannot be given it, while a fresh one does the work.
func onThreadOfItsOwn(fn func()) {
	runtime.LockOSThread() // never unlocked, but on the main thread: the thread ends with fn
	if unix.Gettid() != unix.Getpid() {
		fn()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		onThreadOfItsOwn(fn)
	}()
	<-done
	runtime.UnlockOSThread()
}

// restrict confines the calling thread (see onThreadOfItsOwn) to p: its Landlock layers, no
// new privileges, the engine's account.
func (s Sandbox) restrict(p Policy) error {
	fd, flags, err := ruleset(p, s.Mode == Required)
	if err != nil {
		return err
	}
	netFd := -1
	if fd >= 0 {
		defer unix.Close(fd)
		if p.Connect != nil && ABI() >= netABI {
			if netFd, err = s.nets.get(p.Connect); err != nil {
				return err
			}
			defer unix.Close(netFd)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no new privileges: %w", err)
	}
	// The files' layer first: a new layer copies the rules of those under it, and the
	// network's holds some 28,000, which on top are copied once rather than twice.
	if fd >= 0 {
		if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
			return fmt.Errorf("sandbox: landlock: %w", err)
		}
	}
	if netFd >= 0 {
		if err := llsyscall.LandlockRestrictSelf(netFd, 0); err != nil {
			return fmt.Errorf("sandbox: landlock network: %w", err)
		}
	}
	if s.Account != nil {
		return becomeThread(s.Account)
	}
	return nil
}

// start starts cmd from the calling thread, confined already, and sets its limits.
func start(cmd *exec.Cmd, l Limits) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := limit(cmd.Process.Pid, l); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return nil
}

// becomeThread makes the calling thread, and no other, the account's: the raw system calls
// change one thread's credentials, where the C library's would change every thread's.
func becomeThread(a *syscall.Credential) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox: drop groups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(a.Gid), uintptr(a.Gid), uintptr(a.Gid)); e != 0 {
		return fmt.Errorf("sandbox: become group %d: %w", a.Gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(a.Uid), uintptr(a.Uid), uintptr(a.Uid)); e != 0 {
		return fmt.Errorf("sandbox: become user %d: %w", a.Uid, e)
	}
	return nil
}

// rlimit is one of Limits, as the kernel names it.
type rlimit struct {
	resource int
	name     string
	value    uint64
}

// rlimits are l's limits, each no higher than this process's own hard limit: a child never
// gets more than Nimbus was given. A zero limit is left as it is, but core dumps are off.
func rlimits(l Limits) []rlimit {
	var out []rlimit
	for _, r := range []rlimit{
		{unix.RLIMIT_AS, "address space", l.AddressSpace},
		{unix.RLIMIT_CPU, "CPU time", l.CPUSeconds},
		{unix.RLIMIT_NOFILE, "open files", l.OpenFiles},
		{unix.RLIMIT_NPROC, "processes", l.Processes},
		{unix.RLIMIT_FSIZE, "file size", l.FileSize},
		{unix.RLIMIT_CORE, "core size", 0},
	} {
		if r.value == 0 && r.resource != unix.RLIMIT_CORE {
			continue
		}
		var own unix.Rlimit
		if err := unix.Getrlimit(r.resource, &own); err == nil {
			r.value = min(r.value, own.Max)
		}
		out = append(out, r)
	}
	return out
}

func limit(pid int, l Limits) error {
	for _, r := range rlimits(l) {
		if err := unix.Prlimit(pid, r.resource, &unix.Rlimit{Cur: r.value, Max: r.value}, nil); err != nil {
			return limitErr(r.name, err)
		}
	}
	return nil
}

func limitErr(name string, err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil // gone already: nothing left to limit
	}
	return fmt.Errorf("sandbox: limit %s: %w", name, err)
}

// The rights a confined process has on what its policy names. Reading a directory lets it list
// and read what is inside, never execute it; writing one lets it make, change and remove what is
// inside, never execute it either (a file it wrote, or one in a directory it shares with others).
const (
	readRights = landlock.AccessFSSet(llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir)
	execRights = landlock.AccessFSSet(llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile)
	// No symbolic links: Nimbus writes the engine's program and settings into these directories
	// and grants the next run its rules by their paths, and a link planted there would point
	// either somewhere else.
	writeRights = landlock.AccessFSSet(llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir | llsyscall.AccessFSWriteFile |
		llsyscall.AccessFSRemoveDir | llsyscall.AccessFSRemoveFile | llsyscall.AccessFSMakeDir | llsyscall.AccessFSMakeReg |
		llsyscall.AccessFSMakeSock | llsyscall.AccessFSMakeFifo | llsyscall.AccessFSTruncate)
	fileRights = landlock.AccessFSSet(llsyscall.AccessFSReadFile | llsyscall.AccessFSWriteFile | llsyscall.AccessFSTruncate)
)

// ruleset makes the Landlock ruleset of p's files and scopes; -1 when the kernel has none and it
// is not required. The scopes keep it from signalling processes outside its sandbox.
func ruleset(p Policy, required bool) (int, uint32, error) {
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}
	if !required {
		cfg = cfg.BestEffort()
	}
	var rules []landlock.Rule
	if len(p.Read) > 0 {
		rules = append(rules, landlock.PathAccess(readRights, p.Read...).IgnoreIfMissing())
	}
	if len(p.Exec) > 0 {
		rules = append(rules, landlock.PathAccess(execRights, p.Exec...).IgnoreIfMissing())
	}
	if len(p.Write) > 0 {
		w := landlock.PathAccess(writeRights, p.Write...)
		if ABI() >= 2 {
			// Renames between its own directories. Asked of an older kernel, the refer right
			// would make best effort give up on Landlock altogether.
			w = w.WithRefer()
		}
		rules = append(rules, w)
	}
	if len(p.ReadFiles) > 0 {
		rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(llsyscall.AccessFSReadFile), p.ReadFiles...).IgnoreIfMissing())
	}
	if len(p.WriteFiles) > 0 {
		rules = append(rules, landlock.PathAccess(fileRights, p.WriteFiles...).IgnoreIfMissing())
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, 0, fmt.Errorf("sandbox: landlock ruleset: %s", strings.TrimPrefix(err.Error(), "landlock: "))
	}
	return fd, flags, nil
}
