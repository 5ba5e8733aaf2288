package cluster

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// apiServer answers token requests as the API server does: answer writes the reply to a
// request that carried the zone's token; the request's path and body are kept in asked.
func apiServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (Kubeconfig, *[]string) {
	t.Helper()
	var asked []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer zone-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var body struct {
			Kind string `json:"kind"`
			Spec struct {
				ExpirationSeconds int64 `json:"expirationSeconds"`
			} `json:"spec"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		asked = append(asked, r.Method+" "+r.URL.Path+" "+body.Kind+" "+time.Duration(body.Spec.ExpirationSeconds*int64(time.Second)).String())
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return Kubeconfig{Server: srv.URL, CA: ca, Token: "zone-token"}, &asked
}

func status(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
}

func TestTenantKubeconfig_SignsInWithATokenOfTheTenantsAccountInItsNamespace(t *testing.T) {
	zone, asked := apiServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "TokenRequest", "status": map[string]any{"token": "tenant-token", "expirationTimestamp": "2030-01-01T00:00:00Z"}})
	})
	out, err := TenantKubeconfig(t.Context(), zone.Marshal(), "acme", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := "POST /api/v1/namespaces/acme/serviceaccounts/nimbus-tenant/token TokenRequest 2h0m0s"; len(*asked) != 1 || (*asked)[0] != want {
		t.Fatalf("asked %q, want %q", *asked, want)
	}
	kc, err := ParseKubeconfig(out)
	if err != nil {
		t.Fatalf("the tenant's kubeconfig does not read back: %v\n%s", err, out)
	}
	if kc.Server != zone.Server || string(kc.CA) != string(zone.CA) || kc.Token != "tenant-token" || kc.Cert != nil {
		t.Fatalf("got %+v", kc)
	}
	if strings.Contains(string(out), "zone-token") {
		t.Fatal("the tenant's kubeconfig holds the zone's token")
	}
	var doc struct {
		Contexts []struct {
			Context struct {
				Namespace string `yaml:"namespace"`
			} `yaml:"context"`
		} `yaml:"contexts"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil || len(doc.Contexts) != 1 || doc.Contexts[0].Context.Namespace != "acme" {
		t.Fatalf("the context's namespace: %+v (%v)\n%s", doc, err, out)
	}

	// A token lives at least as long as the API server allows.
	if _, err := TenantKubeconfig(t.Context(), zone.Marshal(), "acme", time.Minute); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix((*asked)[1], " 10m0s") {
		t.Fatalf("asked %q, want ten minutes", (*asked)[1])
	}
}

func TestTenantKubeconfig_SaysWhyTheClusterRefused(t *testing.T) {
	for _, c := range []struct {
		name      string
		answer    func(w http.ResponseWriter, r *http.Request)
		zoneToken string
		want      []string
		refused   bool
	}{
		{"no account", func(w http.ResponseWriter, _ *http.Request) {
			status(w, http.StatusNotFound, `serviceaccounts "nimbus-tenant" not found`)
		}, "zone-token", []string{"has no service account nimbus-tenant", "tenant factory", `serviceaccounts "nimbus-tenant" not found`}, true},
		{"zone may not", func(w http.ResponseWriter, _ *http.Request) {
			status(w, http.StatusForbidden, `serviceaccounts "nimbus-tenant" is forbidden: User "ops" cannot create resource "serviceaccounts/token"`)
		}, "zone-token", []string{"may not issue tokens", `User "ops" cannot create`}, true},
		{"zone token refused", nil, "old-token", []string{"refused the credentials"}, true},
		{"server fails", func(w http.ResponseWriter, _ *http.Request) {
			status(w, http.StatusServiceUnavailable, "etcd is down")
		}, "zone-token", []string{"503"}, false},
		{"no token in the answer", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"kind":"TokenRequest","status":{}}`))
		}, "zone-token", []string{"issued no token"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			zone, _ := apiServer(t, c.answer)
			zone.Token = c.zoneToken
			out, err := TenantKubeconfig(t.Context(), zone.Marshal(), "acme", time.Hour)
			if err == nil {
				t.Fatalf("issued %s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if errors.Is(err, ErrRefused) != c.refused {
				t.Errorf("%q: refused is %v, want %v", err, errors.Is(err, ErrRefused), c.refused)
			}
		})
	}
}

func TestTenantKubeconfig_RefusesANamespaceNameThatIsNotOne(t *testing.T) {
	zone, asked := apiServer(t, func(http.ResponseWriter, *http.Request) {})
	for _, ns := range []string{"", "Acme", "acme/../kube-system", "acme?x=1", strings.Repeat("a", 64)} {
		if _, err := TenantKubeconfig(t.Context(), zone.Marshal(), ns, time.Hour); err == nil || !strings.Contains(err.Error(), "not a namespace's name") {
			t.Errorf("%q: %v", ns, err)
		}
	}
	if len(*asked) > 0 {
		t.Fatalf("asked the server %q", *asked)
	}
}
