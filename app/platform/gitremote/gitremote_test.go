package gitremote_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/egress"
	"nimbus/app/platform/gitremote"
)

func TestRead_TheLinkedFolderOfABranchAndATag(t *testing.T) {
	srv := apptest.StartGitServer(t)
	repo := srv.Repo(t, "infra")
	repo.Write(t, "vm/Pulumi.yaml", "name: vm\nruntime: yaml\n")
	repo.Write(t, "other/big.bin", randomText(2<<20))
	first := repo.Commit(t, "Ada Lovelace", "First program\n\nWith a body.")
	repo.Tag(t, "v1.0.0", "The first release", first)
	repo.Write(t, "vm/Pulumi.yaml", "name: vm\nruntime: yaml\nresources: {}\n")
	second := repo.Commit(t, "Ada Lovelace", "Second")
	repo.Push(t)

	f := gitremote.Fetcher{AllowHTTP: true, MaxBytes: 512 << 10, Reach: egress.Policy{AllowPrivate: true}}
	remote := gitremote.Remote{URL: repo.URL, User: srv.User, Token: srv.Password}
	refs, err := f.List(t.Context(), remote)
	if err != nil {
		t.Fatal(err)
	}
	if refs.Branches["main"] != second || refs.Tags["v1.0.0"].Commit != first || refs.Tags["v1.0.0"].Object == first {
		t.Fatalf("refs %+v; want main at %s and v1.0.0 annotated at %s", refs, second, first)
	}
	// The other folder's megabyte is never fetched: the read stays under half a megabyte.
	snap, err := f.Read(t.Context(), remote, "main", false, "vm", []string{"Pulumi.yaml", "absent.json"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != second || snap.Author != "Ada Lovelace <ada.lovelace@example.com>" || snap.Message != "Second" ||
		string(snap.Files["Pulumi.yaml"]) != "name: vm\nruntime: yaml\nresources: {}\n" || len(snap.Files) != 1 {
		t.Fatalf("read %+v", snap)
	}
	snap, err = f.Read(t.Context(), remote, "v1.0.0", true, "vm", []string{"Pulumi.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != first || snap.TagMessage != "The first release" || string(snap.Files["Pulumi.yaml"]) != "name: vm\nruntime: yaml\n" {
		t.Fatalf("read tag %+v", snap)
	}
}

func TestRead_RefusesWhatItCannotRead(t *testing.T) {
	srv := apptest.StartGitServer(t)
	repo := srv.Repo(t, "infra")
	repo.Write(t, "Pulumi.yaml", "name: big\n")
	repo.Write(t, "big.bin", randomText(2<<20))
	repo.Commit(t, "Ada", "big")
	repo.Push(t)
	ctx := t.Context()
	f := gitremote.Fetcher{AllowHTTP: true, MaxBytes: 256 << 10, Reach: egress.Policy{AllowPrivate: true}}
	good := gitremote.Remote{URL: repo.URL, User: srv.User, Token: srv.Password}
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"wrong token", func() error {
			_, err := f.List(ctx, gitremote.Remote{URL: repo.URL, User: srv.User, Token: "wrong"})
			return err
		}, gitremote.ErrDenied},
		{"no branch", func() error {
			_, err := f.Read(ctx, good, "nope", false, "", []string{"Pulumi.yaml"})
			return err
		}, gitremote.ErrNoRef},
		{"too large", func() error {
			_, err := f.Read(ctx, good, "main", false, "", []string{"big.bin"})
			return err
		}, gitremote.ErrTooLarge},
		{"no server", func() error {
			_, err := f.List(ctx, gitremote.Remote{URL: "http://127.0.0.1:1/x.git"})
			return err
		}, gitremote.ErrUnreachable},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := (gitremote.Fetcher{}).CheckURL(repo.URL); err == nil {
		t.Error("an http URL is accepted where only https is allowed")
	}
	if err := (gitremote.Fetcher{}).CheckURL("ext::sh -c touch% /tmp/pwned"); err == nil {
		t.Error("an ext:: URL is accepted")
	}
	// The same repository, at an address a tenant may not reach unless the operator allows
	// their own networks: refused before git runs, whether the URL names the address or a name
	// that resolves to it.
	inside := gitremote.Fetcher{AllowHTTP: true}
	if err := inside.CheckURL(repo.URL); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a URL naming a loopback address: %v", err)
	}
	byName := strings.Replace(repo.URL, "127.0.0.1", "localhost", 1)
	if _, err := inside.List(t.Context(), gitremote.Remote{URL: byName, User: srv.User, Token: srv.Password}); err == nil {
		t.Error("a name for a loopback address is read")
	}
	// A name CheckURL cannot judge (the machine's own, which resolves to loopback here) is
	// refused when resolved, before git runs.
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", host); err != nil || len(addrs) == 0 || !addrs[0].Unmap().IsLoopback() {
		t.Logf("%s resolves to %v (%v), not loopback: the resolved case is left to machines where it does", host, addrs, err)
		return
	}
	own := strings.Replace(repo.URL, "127.0.0.1", host, 1)
	if _, err := inside.Read(t.Context(), gitremote.Remote{URL: own, User: srv.User, Token: srv.Password}, "main", false, "", nil); !errors.Is(err, gitremote.ErrNotAllowed) {
		t.Errorf("a read of %s, which resolves to loopback: %v, want %v", own, err, gitremote.ErrNotAllowed)
	}
	allowed := gitremote.Fetcher{AllowHTTP: true, Reach: egress.Policy{AllowPrivate: true}}
	if _, err := allowed.Read(t.Context(), gitremote.Remote{URL: own, User: srv.User, Token: srv.Password}, "main", false, "", nil); err != nil {
		t.Errorf("a read of %s where the operator allows their own networks: %v", own, err)
	}
}

// randomText is n bytes that do not compress, so a pack of them is as large.
func randomText(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}
