package apptest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"nimbus/app/kernel/freeport"
)

// MailServer is a real SMTP server, mailpit, run for one test: Nimbus sends to it over SMTP,
// and the test reads what arrived through its HTTP API.
//
// The binary comes from NIMBUS_MAILPIT, else from the tool cache that `go tool task
// mailserver` fills (scripts/mailserver.sh).
type MailServer struct {
	Host string
	Port int
	api  string
}

// Mail is one message the server took.
type Mail struct {
	ID      string
	To      []string
	Subject string
	Text    string
}

// StartMailServer starts a mail server of the test's own, stopped when the test ends. It
// accepts any sender, recipient and credentials, without TLS.
func StartMailServer(t testing.TB) *MailServer {
	t.Helper()
	bin := mailpitBinary(t)
	ports, err := freeport.Pick(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &MailServer{Host: "127.0.0.1", Port: ports[0], api: "http://127.0.0.1:" + strconv.Itoa(ports[1])}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--smtp", net.JoinHostPort(s.Host, strconv.Itoa(ports[0])),
		"--listen", net.JoinHostPort(s.Host, strconv.Itoa(ports[1])), "--database", filepath.Join(dir, "mail.db"),
		"--disable-version-check", "--smtp-auth-accept-any", "--smtp-auth-allow-insecure", "--quiet")
	logFile, err := os.Create(filepath.Join(dir, "mailpit.log"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited; logFile.Close() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("the mail server exited at start: %s", log)
		default:
		}
		if r, err := http.Get(s.api + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the mail server did not answer within a minute")
		}
	}
}

// Mails lists what the server took, newest first, with each one's text.
func (s *MailServer) Mails(t testing.TB) []Mail {
	t.Helper()
	var list struct {
		Messages []struct {
			ID      string
			Subject string
			To      []struct{ Address string }
		}
	}
	s.get(t, "/api/v1/messages?limit=500", &list)
	out := make([]Mail, len(list.Messages))
	for i, m := range list.Messages {
		out[i] = Mail{ID: m.ID, Subject: m.Subject}
		for _, to := range m.To {
			out[i].To = append(out[i].To, to.Address)
		}
		var full struct{ Text string }
		s.get(t, "/api/v1/message/"+m.ID, &full)
		out[i].Text = full.Text
	}
	return out
}

// To lists the mails the server took for address.
func (s *MailServer) To(t testing.TB, address string) []Mail {
	t.Helper()
	var out []Mail
	for _, m := range s.Mails(t) {
		for _, to := range m.To {
			if to == address {
				out = append(out, m)
			}
		}
	}
	return out
}

func (s *MailServer) get(t testing.TB, path string, into any) {
	t.Helper()
	r, err := http.Get(s.api + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("mail server %s: %s", path, r.Status)
	}
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		t.Fatalf("mail server %s: %v", path, err)
	}
}

// mailpitBinary finds the server's binary. A test that needs it fails without it, so that a run
// that forgot to build it cannot pass by skipping; only -short skips.
func mailpitBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NIMBUS_MAILPIT"); p != "" {
		return p
	}
	root := os.Getenv("NIMBUS_TOOLS_DIR")
	if root == "" {
		if cache, err := os.UserCacheDir(); err == nil {
			root = filepath.Join(cache, "nimbus", "tools")
		}
	}
	found, _ := filepath.Glob(filepath.Join(root, "mailpit", "*", "mailpit"))
	sort.Strings(found)
	if len(found) > 0 {
		return found[len(found)-1]
	}
	if testing.Short() {
		t.Skip("the mail server is not built; -short skips the tests that need it")
	}
	t.Fatal("a mail server is needed: run `go tool task mailserver`, or set NIMBUS_MAILPIT to a mailpit binary")
	return ""
}
