package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// NamespaceExists asks the API server whether the cluster has a namespace of this name. The
// provider applies objects server-side and so would adopt one it finds, and delete it with its
// contents when it is destroyed: a namespace is given to a tenant only while it does not exist.
func (kc Kubeconfig) NamespaceExists(ctx context.Context, name string) (bool, error) {
	client, err := kc.Client()
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, kc.Server+"/api/v1/namespaces/"+url.PathEscape(name), nil)
	if err != nil {
		return false, err
	}
	resp, err := kc.Do(client, req)
	if err != nil {
		return false, fmt.Errorf("cannot reach %s: %w", kc.Server, err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return true, nil
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("the API server answered %s when asked for namespace %s", resp.Status, name)
}

// Namespaces lists the names of the cluster's namespaces.
func (kc Kubeconfig) Namespaces(ctx context.Context) ([]string, error) {
	client, err := kc.Client()
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := kc.call(ctx, client, http.MethodGet, "/api/v1/namespaces", nil, &list); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
	}
	return names, nil
}

// Object names a namespaced object of a cluster.
type Object struct{ Namespace, Name string }

// ID is the engine's id of a namespaced object: its namespace and name.
func (o Object) ID() string { return o.Namespace + "/" + o.Name }

// Objects lists the objects of every namespace at a list path of the API, such as
// /apis/apps/v1/deployments.
func (kc Kubeconfig) Objects(ctx context.Context, path string) ([]Object, error) {
	client, err := kc.Client()
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := kc.call(ctx, client, http.MethodGet, path, nil, &list); err != nil {
		return nil, err
	}
	out := make([]Object, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, Object{Namespace: it.Metadata.Namespace, Name: it.Metadata.Name})
	}
	return out, nil
}
