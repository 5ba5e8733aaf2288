// Package cluster holds a landing zone's Kubernetes cluster: the kubeconfig a provider admin
// gives (sealed with the master key, never shown again), checked against the API server when
// saved, and the kubeconfig each deployment's engine gets.
package cluster

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"nimbus/app/kernel/problem"
)

// A kubeconfig can make whoever reads it run a program (exec, auth-provider) or read files
// (certificate-authority, client-key, tokenFile). Nimbus and the engine read it on the server,
// so only what it carries inline is taken: the current context's server, certificate authority
// and a token or a client certificate. Anything else is refused by name rather than dropped,
// so a provider admin knows why a kubeconfig that works for kubectl does not work here.

// Kubeconfig is the part of a kubeconfig Nimbus keeps: one cluster and one user.
type Kubeconfig struct {
	Server string
	CA     []byte // PEM; nil means the system's roots
	Token  string
	Cert   []byte // PEM client certificate, with Key
	Key    []byte
	// Namespace is the context's namespace, where objects naming none are made: a tenant's
	// (see TenantKubeconfig). A provider admin's kubeconfig keeps none.
	Namespace string
}

type rawConfig struct {
	Clusters []struct {
		Name    string         `yaml:"name"`
		Cluster map[string]any `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string         `yaml:"name"`
		User map[string]any `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	CurrentContext string `yaml:"current-context"`
}

// What a cluster and a user entry may hold, and what each refused key does instead.
var (
	clusterKeys = map[string]string{
		"server": "", "certificate-authority-data": "",
		"tls-server-name":          "checks the certificate against another name than the server's; give a server address its certificate names",
		"certificate-authority":    "names a file on the server; give certificate-authority-data instead",
		"insecure-skip-tls-verify": "turns off the check of the cluster's certificate; give certificate-authority-data instead",
		"proxy-url":                "sends the engine's traffic through another server",
	}
	userKeys = map[string]string{
		"token": "", "client-certificate-data": "", "client-key-data": "",
		"tokenFile":          "names a file on the server; give token instead",
		"client-certificate": "names a file on the server; give client-certificate-data instead",
		"client-key":         "names a file on the server; give client-key-data instead",
		"exec":               "runs a program on the server; give a token or a client certificate instead",
		"auth-provider":      "runs a plugin on the server; give a token or a client certificate instead",
		"username":           "basic authentication, which Kubernetes no longer accepts",
		"password":           "basic authentication, which Kubernetes no longer accepts",
		"as":                 "impersonates another user", "as-groups": "impersonates other groups", "as-uid": "impersonates another user",
		"as-user-extra": "impersonates another user",
	}
)

// ParseKubeconfig reads a kubeconfig's current context, refusing what Nimbus does not take.
// Problems name the field "kubeconfig".
func ParseKubeconfig(data []byte) (Kubeconfig, error) {
	v := &problem.ValidationError{}
	var kc Kubeconfig
	bad := func(rule, format string, args ...any) (Kubeconfig, error) {
		v.Add("kubeconfig", rule, format, args...)
		return Kubeconfig{}, v
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return bad("required", "paste or upload the cluster's kubeconfig")
	}
	if len(data) > maxKubeconfig {
		return bad("max_size", "must be at most %d KiB", maxKubeconfig/1024)
	}
	var raw rawConfig
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return bad("yaml", "is not a kubeconfig: %s", err)
	}
	ctxName := raw.CurrentContext
	if ctxName == "" && len(raw.Contexts) == 1 {
		ctxName = raw.Contexts[0].Name
	}
	if ctxName == "" {
		return bad("context", "has no current-context: set one, or keep a single context")
	}
	var clusterName, userName string
	found := false
	for _, c := range raw.Contexts {
		if c.Name == ctxName {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
		}
	}
	if !found {
		return bad("context", "current-context %q is not among its contexts", ctxName)
	}
	var cluster, user map[string]any
	for _, c := range raw.Clusters {
		if c.Name == clusterName {
			cluster = c.Cluster
		}
	}
	for _, u := range raw.Users {
		if u.Name == userName {
			user = u.User
		}
	}
	if cluster == nil {
		return bad("context", "context %q names cluster %q, which it does not hold", ctxName, clusterName)
	}
	if user == nil {
		return bad("context", "context %q names user %q, which it does not hold", ctxName, userName)
	}
	for k := range cluster {
		if why, known := clusterKeys[k]; !known || why != "" {
			return bad("allowed_keys", "cluster %q: %s is not taken: %s", clusterName, k, orUnknown(why))
		}
	}
	for k := range user {
		if why, known := userKeys[k]; !known || why != "" {
			return bad("allowed_keys", "user %q: %s is not taken: %s", userName, k, orUnknown(why))
		}
	}
	server, _ := cluster["server"].(string)
	u, err := url.Parse(server)
	if server == "" || err != nil || u.Host == "" {
		return bad("server", "cluster %q needs a server address such as https://10.0.0.1:6443", clusterName)
	}
	if u.Scheme != "https" {
		return bad("https", "cluster %q: the server must be reached over https, not %s", clusterName, u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("server", "cluster %q: the server address must be scheme, host, port and path only: no user, password, query or fragment", clusterName)
	}
	kc.Server = strings.TrimRight(server, "/")
	if kc.CA, err = pemField(cluster, "certificate-authority-data", "CERTIFICATE"); err != nil {
		return bad("certificate", "cluster %q: %s", clusterName, err)
	}
	kc.Token, _ = user["token"].(string)
	if kc.Cert, err = pemField(user, "client-certificate-data", "CERTIFICATE"); err != nil {
		return bad("certificate", "user %q: %s", userName, err)
	}
	if kc.Key, err = pemField(user, "client-key-data", ""); err != nil {
		return bad("certificate", "user %q: %s", userName, err)
	}
	switch {
	case (kc.Cert == nil) != (kc.Key == nil):
		return bad("credentials", "user %q: a client certificate needs both client-certificate-data and client-key-data", userName)
	case kc.Token == "" && kc.Cert == nil:
		return bad("credentials", "user %q has no token and no client certificate", userName)
	case kc.Token != "" && kc.Cert != nil:
		return bad("credentials", "user %q has both a token and a client certificate: keep one", userName)
	}
	return kc, nil
}

const maxKubeconfig = 256 << 10

func orUnknown(why string) string {
	if why == "" {
		return "Nimbus does not know it"
	}
	return why
}

// pemField decodes a base64 field holding PEM; want is the block type it must start with, or
// "" for any (a private key comes in several).
func pemField(m map[string]any, key, want string) ([]byte, error) {
	raw, ok := m[key]
	if !ok {
		return nil, nil
	}
	s, _ := raw.(string)
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%s is not base64", key)
	}
	block, _ := pem.Decode(data)
	if block == nil || want != "" && block.Type != want {
		return nil, fmt.Errorf("%s does not hold a PEM %s", key, strings.ToLower(orAny(want)))
	}
	if want == "CERTIFICATE" {
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
	}
	return data, nil
}

func orAny(want string) string {
	if want == "" {
		return "key"
	}
	return want
}

// Marshal writes kc back as a kubeconfig holding only what Nimbus took, which is what the
// engine gets.
func (kc Kubeconfig) Marshal() []byte {
	cluster := map[string]any{"server": kc.Server}
	if kc.CA != nil {
		cluster["certificate-authority-data"] = base64.StdEncoding.EncodeToString(kc.CA)
	}
	user := map[string]any{}
	if kc.Token != "" {
		user["token"] = kc.Token
	}
	if kc.Cert != nil {
		user["client-certificate-data"] = base64.StdEncoding.EncodeToString(kc.Cert)
		user["client-key-data"] = base64.StdEncoding.EncodeToString(kc.Key)
	}
	context := map[string]any{"cluster": "cluster", "user": "nimbus"}
	if kc.Namespace != "" {
		context["namespace"] = kc.Namespace
	}
	doc := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"clusters":        []any{map[string]any{"name": "cluster", "cluster": cluster}},
		"users":           []any{map[string]any{"name": "nimbus", "user": user}},
		"contexts":        []any{map[string]any{"name": "nimbus", "context": context}},
		"current-context": "nimbus",
	}
	out, _ := yaml.Marshal(doc)
	return out
}

// APIPort is the TCP port of the cluster's API server a kubeconfig names, the one port on
// which the engine of a deployment to that cluster reaches it.
func APIPort(kubeconfig []byte) (uint16, error) {
	kc, err := ParseKubeconfig(kubeconfig)
	if err != nil {
		return 0, err
	}
	u, err := url.Parse(kc.Server)
	if err != nil {
		return 0, fmt.Errorf("the cluster's server %q: %w", kc.Server, err)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("the cluster's server %q: port %q: %w", kc.Server, p, err)
		}
		return uint16(n), nil
	}
	if u.Scheme == "http" {
		return 80, nil
	}
	return 443, nil
}
