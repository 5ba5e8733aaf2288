// Package kubeplane runs a Kubernetes control plane on loopback: etcd, kube-apiserver and
// kube-controller-manager from the binaries scripts/kube-apiserver.sh builds, with a
// certificate authority, a serving certificate, a service-account signing key and an admin
// token made for each start.
//
// No kubelet or scheduler runs, and of the controllers only those the provider waits for: what
// Nimbus makes on a cluster (namespaces, quotas, policies, secrets, ingresses, service
// accounts, role bindings) are API objects, stored and authorised by the API server. RBAC is
// on, so a service account's token is held to what its bindings allow, as on a real cluster.
package kubeplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"nimbus/app/domain/cluster"
	"nimbus/app/kernel/freeport"
)

// BinEnv names the directory holding etcd, kube-apiserver and kube-controller-manager, for
// tests.
const BinEnv = "NIMBUS_KUBE_DIR"

// Plane is a running control plane. Stop ends it and removes nothing: its directory is the
// caller's.
type Plane struct {
	// URL is the API server's address, https://127.0.0.1:<port>.
	URL string
	// CA is the PEM certificate that signed the API server's serving certificate.
	CA []byte
	// Token authenticates as a cluster admin (group system:masters).
	Token string

	procs []*process
}

// Start runs etcd, kube-apiserver and kube-controller-manager from binDir with their data in
// dir, and returns once the API server answers ready, or ctx ends.
func Start(ctx context.Context, binDir, dir string) (*Plane, error) {
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, fmt.Errorf("%s: %w (build it with scripts/kube-apiserver.sh)", name, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freeport.Pick(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	files, err := writeCredentials(dir)
	if err != nil {
		return nil, err
	}
	p := &Plane{URL: "https://127.0.0.1:" + strconv.Itoa(apiPort), CA: files.caPEM, Token: files.token}

	client := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcd, err := startProcess(filepath.Join(binDir, "etcd"), filepath.Join(dir, "etcd.log"),
		"--name=nimbus",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=nimbus="+peer,
		// A throwaway store: losing the last writes on a crash of the machine costs nothing.
		"--unsafe-no-fsync",
		"--log-level=warn")
	if err != nil {
		return nil, err
	}
	p.procs = append(p.procs, etcd)

	api, err := startProcess(filepath.Join(binDir, "kube-apiserver"), filepath.Join(dir, "kube-apiserver.log"),
		"--etcd-servers="+client,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+dir,
		"--tls-cert-file="+files.cert,
		"--tls-private-key-file="+files.key,
		"--client-ca-file="+files.ca,
		"--token-auth-file="+files.tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer="+p.URL,
		"--service-account-key-file="+files.saPublic,
		"--service-account-signing-key-file="+files.saPrivate,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--allow-privileged=false",
		"--anonymous-auth=false",
		// One process on a small machine: no flow control between its own clients.
		"--enable-priority-and-fairness=false",
		"--v=0")
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.procs = append(p.procs, api)

	if err := p.waitReady(ctx, etcd, api); err != nil {
		p.Stop()
		return nil, err
	}
	// Written where Start was told, and kept there: the controllers read it, and so may people.
	// The namespace controller empties a deleted namespace and lets it go; the garbage
	// collector finishes deletions that wait for their dependents (a foreground deletion, which
	// the Kubernetes provider asks for); the quota controller reports a quota's use, which the
	// provider waits for. Without them a deleted namespace is never gone and a quota never
	// ready.
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, p.Kubeconfig(), 0o600); err != nil {
		p.Stop()
		return nil, err
	}
	controllers, err := startProcess(filepath.Join(binDir, "kube-controller-manager"), filepath.Join(dir, "kube-controller-manager.log"),
		"--kubeconfig="+kubeconfig,
		"--controllers=namespace-controller,garbage-collector-controller,resourcequota-controller",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--v=0")
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.procs = append(p.procs, controllers)
	return p, nil
}

// Kubeconfig is an admin kubeconfig for the plane.
func (p *Plane) Kubeconfig() []byte {
	return p.KubeconfigWith(p.Token)
}

// KubeconfigWith is a kubeconfig for the plane that signs in with token, such as a service
// account's.
func (p *Plane) KubeconfigWith(token string) []byte {
	return cluster.Kubeconfig{Server: p.URL, CA: p.CA, Token: token}.Marshal()
}

// Client is an HTTP client that trusts the plane's certificate authority; requests still need
// a token.
func (p *Plane) Client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// Stop ends the servers in the reverse order of their start, and waits for each.
func (p *Plane) Stop() {
	for i := len(p.procs) - 1; i >= 0; i-- {
		p.procs[i].stop()
	}
	p.procs = nil
}

// waitReady polls the API server's readiness until it answers 200, one of the processes ends,
// or ctx does.
func (p *Plane) waitReady(ctx context.Context, procs ...*process) error {
	client := p.Client()
	var last string
	for {
		for _, pr := range procs {
			if err := pr.exited(); err != nil {
				return fmt.Errorf("%s ended before the API server was ready: %w\n%s", filepath.Base(pr.cmd.Path), err, pr.tail())
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+p.Token)
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("API server not ready (%s): %w", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// process is a started server whose end is watched.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	once sync.Once
	err  error
}

func startProcess(bin, logFile string, args ...string) (*process, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a Ctrl-C meant for the caller reaches the servers through Stop, in
	// order, rather than all at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(logFile)}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &process{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// exited is the process's end, or nil while it runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exit status 0")
		}
		return p.err
	default:
		return nil
	}
}

// tail is the end of the process's log, for errors.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

func (p *process) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// credentials are the files the API server starts with.
type credentials struct {
	ca, cert, key, tokens, saPublic, saPrivate string
	caPEM                                      []byte
	token                                      string
}

func writeCredentials(dir string) (credentials, error) {
	c := credentials{
		ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "apiserver.crt"), key: filepath.Join(dir, "apiserver.key"),
		tokens: filepath.Join(dir, "tokens.csv"), saPublic: filepath.Join(dir, "sa.pub"), saPrivate: filepath.Join(dir, "sa.key"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "nimbus control plane CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return c, err
	}
	c.token = hex.EncodeToString(token)

	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return c, err
	}
	saPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return c, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return c, err
	}
	for file, data := range map[string][]byte{
		c.ca:        c.caPEM,
		c.cert:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		c.key:       keyPEM,
		c.saPrivate: saPEM,
		c.saPublic:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		c.tokens:    []byte(c.token + ",admin,admin,system:masters\n"),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return c, err
		}
	}
	return c, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
