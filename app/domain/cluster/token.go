package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// TenantAccount is the service account in a tenant's namespace whose tokens the tenant's
// deploys run with. The tenant factory makes it, bound to a role in that namespace alone.
const TenantAccount = "nimbus-tenant"

// MinTokenLifetime is the shortest token the API server issues.
const MinTokenLifetime = 10 * time.Minute

// namespaceName is a namespace's name as the API server takes it: a DNS label.
var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// TenantKubeconfig asks the cluster of zone (a zone's kubeconfig, see Open) for a token of the
// tenant account in namespace, good for lifetime (at least MinTokenLifetime), and returns a
// kubeconfig that signs in with it and makes what names no namespace in namespace. Nothing of
// it is kept: each operation asks anew, and the token expires by itself. A refusal (no such
// account, credentials not allowed to ask) is an ErrRefused saying what to do.
func TenantKubeconfig(ctx context.Context, zone []byte, namespace string, lifetime time.Duration) ([]byte, error) {
	if !namespaceName.MatchString(namespace) {
		return nil, fmt.Errorf("%q is not a namespace's name", namespace)
	}
	kc, err := ParseKubeconfig(zone)
	if err != nil {
		return nil, fmt.Errorf("the landing zone's kubeconfig: %w", err)
	}
	client, err := kc.Client()
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()
	lifetime = max(lifetime, MinTokenLifetime)
	ask := fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":%d}}`, int64(lifetime/time.Second))
	var answer struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	path := "/api/v1/namespaces/" + namespace + "/serviceaccounts/" + TenantAccount + "/token"
	err = kc.call(ctx, client, http.MethodPost, path, strings.NewReader(ask), &answer)
	var refused *Refusal
	switch {
	case errors.As(err, &refused) && refused.Status == http.StatusNotFound:
		refused.msg = fmt.Sprintf("namespace %s on the cluster has no service account %s to deploy with: the landing zone's tenant factory makes it when it provisions the tenant", namespace, TenantAccount)
		return nil, refused
	case errors.As(err, &refused) && refused.Status == http.StatusForbidden:
		refused.msg = fmt.Sprintf("the landing zone's kubeconfig may not issue tokens of service account %s in namespace %s: a provider admin gives the zone credentials that may create serviceaccounts/token there", TenantAccount, namespace)
		return nil, refused
	case err != nil:
		return nil, fmt.Errorf("issue a token of %s in namespace %s: %w", TenantAccount, namespace, err)
	case answer.Status.Token == "":
		return nil, fmt.Errorf("the API server issued no token of %s in namespace %s", TenantAccount, namespace)
	}
	return Kubeconfig{Server: kc.Server, CA: kc.CA, Token: answer.Status.Token, Namespace: namespace}.Marshal(), nil
}
