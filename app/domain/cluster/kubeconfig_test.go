package cluster

import (
	"encoding/base64"
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"

	"nimbus/app/kernel/problem"
)

func testCA(t *testing.T) string {
	srv := httptest.NewTLSServer(nil)
	t.Cleanup(srv.Close)
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

func kubeconfig(cluster, user string) string {
	return `apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
` + cluster + `
users:
- name: u
  user:
` + user + "\n"
}

func TestParseKubeconfig_TakesAnInlineTokenAndKeepsOnlyThat(t *testing.T) {
	ca := testCA(t)
	in := kubeconfig("    server: https://10.0.0.1:6443/\n    certificate-authority-data: "+ca, "    token: abc")
	kc, err := ParseKubeconfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if kc.Server != "https://10.0.0.1:6443" || kc.Token != "abc" || kc.CA == nil {
		t.Fatalf("got %+v", kc)
	}
	again, err := ParseKubeconfig(kc.Marshal())
	if err != nil {
		t.Fatalf("what Marshal writes does not read back: %v\n%s", err, kc.Marshal())
	}
	if again.Server != kc.Server || again.Token != kc.Token || string(again.CA) != string(kc.CA) {
		t.Fatalf("read back %+v, want %+v", again, kc)
	}
}

func TestParseKubeconfig_RefusesWhatRunsProgramsOrReadsFiles(t *testing.T) {
	ca := testCA(t)
	server := "    server: https://10.0.0.1:6443\n    certificate-authority-data: " + ca
	for _, c := range []struct {
		name, config, want string
	}{
		{"exec plugin", kubeconfig(server, "    exec:\n      command: /bin/sh\n      apiVersion: client.authentication.k8s.io/v1"), "runs a program"},
		{"auth provider", kubeconfig(server, "    auth-provider:\n      name: gcp"), "runs a plugin"},
		{"token file", kubeconfig(server, "    tokenFile: /etc/shadow"), "names a file"},
		{"client key file", kubeconfig(server, "    client-certificate: /a\n    client-key: /b"), "names a file"},
		{"CA file", kubeconfig("    server: https://10.0.0.1:6443\n    certificate-authority: /etc/ca.crt", "    token: abc"), "names a file"},
		{"no TLS check", kubeconfig("    server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: true", "    token: abc"), "turns off the check"},
		{"impersonation", kubeconfig(server, "    token: abc\n    as: system:admin"), "impersonates"},
		{"unknown key", kubeconfig(server, "    token: abc\n    surprise: 1"), "does not know it"},
		{"plain http", kubeconfig("    server: http://10.0.0.1:8080", "    token: abc"), "over https"},
		{"password in the address", kubeconfig("    server: https://admin:hunter2@10.0.0.1:6443", "    token: abc"), "no user, password"},
		{"another name to check", kubeconfig(server+"\n    tls-server-name: api.internal", "    token: abc"), "another name"},
		{"proxy", kubeconfig(server+"\n    proxy-url: http://10.0.0.9:3128", "    token: abc"), "through another server"},
		{"no credentials", kubeconfig(server, "    {}"), "no token"},
		{"garbage CA", kubeconfig("    server: https://10.0.0.1:6443\n    certificate-authority-data: bm90IGEgY2VydA==", "    token: abc"), "PEM"},
		{"no context", "apiVersion: v1\nkind: Config\nclusters: []\n", "current-context"},
		{"empty", "  ", "paste or upload"},
		{"not yaml", "{{{", "not a kubeconfig"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKubeconfig([]byte(c.config))
			if err == nil {
				t.Fatal("accepted")
			}
			if problem.FieldOf(err) != "kubeconfig" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (field %q), want a kubeconfig problem saying %q", err, problem.FieldOf(err), c.want)
			}
		})
	}
}
