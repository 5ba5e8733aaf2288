package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client is an HTTP client that reaches the cluster as kc says: its certificate authority and
// its client certificate, if any. Requests carry kc's token through Do.
func (kc Kubeconfig) Client() (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if kc.CA != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(kc.CA) {
			return nil, errors.New("the certificate authority holds no certificate")
		}
		cfg.RootCAs = pool
	}
	if kc.Cert != nil {
		pair, err := tls.X509KeyPair(kc.Cert, kc.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	// A redirect would carry the credentials elsewhere: the API server never sends one.
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// Do sends req to the cluster with kc's credentials.
func (kc Kubeconfig) Do(client *http.Client, req *http.Request) (*http.Response, error) {
	if kc.Token != "" {
		req.Header.Set("Authorization", "Bearer "+kc.Token)
	}
	return client.Do(req)
}

// Check is what the API server says of itself and of the credentials.
type Check struct {
	Version string // such as v1.37.2
	User    string // who the credentials sign in as
}

// Check asks the API server its version and who the credentials are. Some servers answer
// /version to anyone, so the credentials are proven by a review of themselves, which needs a
// signed-in user.
func (kc Kubeconfig) Check(ctx context.Context) (Check, error) {
	client, err := kc.Client()
	if err != nil {
		return Check{}, err
	}
	defer client.CloseIdleConnections()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := kc.call(ctx, client, http.MethodGet, "/version", nil, &v); err != nil {
		return Check{}, err
	}
	if v.GitVersion == "" {
		return Check{}, errors.New("the server answered /version without a version: is it a Kubernetes API server?")
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	ask := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	if err := kc.call(ctx, client, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(ask), &review); err != nil {
		return Check{}, err
	}
	return Check{Version: v.GitVersion, User: review.Status.UserInfo.Username}, nil
}

func (kc Kubeconfig) call(ctx context.Context, client *http.Client, method, path string, body io.Reader, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, kc.Server+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := kc.Do(client, req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("cannot reach %s: %w", kc.Server, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return &Refusal{Status: resp.StatusCode, msg: "the API server refused the credentials (401): the token or client certificate is not valid on this cluster"}
	case resp.StatusCode/100 == 4:
		return &Refusal{Status: resp.StatusCode, Reason: statusMessage(answer), msg: fmt.Sprintf("the API server answered %s to %s", resp.Status, path)}
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("the API server answered %s to %s", resp.Status, path)
	}
	if err := json.Unmarshal(answer, into); err != nil {
		return fmt.Errorf("the server's answer to %s is not JSON: is it a Kubernetes API server?", path)
	}
	return nil
}

// ErrRefused is what every Refusal is: the API server turned the request down, and asking again
// changes nothing until someone changes the cluster or the credentials.
var ErrRefused = errors.New("the API server refused the request")

// Refusal is a 4xx answer of the API server.
type Refusal struct {
	Status int    // the HTTP status, such as 403
	Reason string // the API server's own message, such as "… is forbidden: User … cannot …"
	msg    string
}

func (r *Refusal) Error() string {
	if r.Reason == "" {
		return r.msg
	}
	return r.msg + ": " + r.Reason
}

func (r *Refusal) Unwrap() error { return ErrRefused }

// statusMessage is the message of the Status object the API server answers a refusal with, or
// "" when the answer is not one.
func statusMessage(answer []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(answer, &st) != nil || st.Kind != "Status" {
		return ""
	}
	return st.Message
}
