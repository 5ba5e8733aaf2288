package resolver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
)

func TestResolvers_AddressesAndNamesFromTheEnvironment(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	other, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "prod")
	apptest.Must(t, err)
	provider, admin, user := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA)
	component := s.BoundMachine(t)

	// Pools: refused with the field and the rule, then made.
	for body, field := range map[string]string{
		`{"name": "p", "prefix": "10.20.0.1/29", "environment_id": "` + env.ID.String() + `"}`:                               "prefix",
		`{"name": "p", "prefix": "banana", "environment_id": "` + env.ID.String() + `"}`:                                     "prefix",
		`{"name": "p", "prefix": "10.20.0.0/29", "reserved": ["10.30.0.0/32"], "environment_id": "` + env.ID.String() + `"}`: "reserved[0]",
	} {
		r := s.Call(t, "POST", "/api/v1/ipam/pools", provider, body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("%s: %s, want the field %s named", body, r.Body, field)
		}
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/ipam/pools", admin, map[string]any{"name": "p", "prefix": "10.20.0.0/29", "environment_id": env.ID}), http.StatusForbidden)
	r := s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "dev-net", "prefix": "10.20.0.0/29",
		"environment_id": env.ID, "reserved": []string{"10.20.0.6/32"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	poolID := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "again", "prefix": "10.20.0.0/28", "environment_id": env.ID})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "overlaps") {
		t.Fatalf("an overlapping pool: %s", r.Body)
	}
	r = s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "prod-net", "prefix": "10.20.0.0/29", "environment_id": other.ID})
	apptest.WantStatus(t, r, http.StatusCreated) // another environment may use the same range
	otherPool := r.JSON(t)["id"].(string)

	// Configurations: refused by field, then set.
	for typ, body := range map[string]string{
		"ipam":   `{"pool_id": "` + otherPool + `"}`,
		"naming": `{"pattern": "{tenant}-{planet}-{seq}", "domain": "dev.example.com"}`,
	} {
		r := s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/"+typ, provider, body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"field":"config.`) {
			t.Errorf("%s %s: %s, want a config field named", typ, body, r.Body)
		}
	}
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/dns", provider, `{}`), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/ipam", provider, `{"pool_id": "`+poolID+`"}`), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/naming", provider,
		`{"pattern": "{env}-{type}-{seq:02d}", "domain": "dev.example.com"}`), http.StatusOK)
	if next := s.Call(t, "GET", "/api/v1/environments/"+env.ID.String()+"/resolvers/naming/next?pattern=%7Benv%7D-%7Bseq:02d%7D", admin, nil).JSON(t); next["name"] != "dev-01" {
		t.Fatalf("the next name: %v", next)
	}

	// A value for a resolved input is refused; two deploys get their own name and address.
	r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": component, "environment_id": env.ID, "name": "one",
		"parameters": map[string]any{"name": "mine", "ip_address": "10.20.0.2"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"parameters.ip_address"`) || !strings.Contains(string(r.Body), `"field":"parameters.name"`) {
		t.Fatalf("values for resolved inputs: %s", r.Body)
	}
	deploy := func(name string, params map[string]any) (string, map[string]any) {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": component, "environment_id": env.ID, "name": name, "parameters": params})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
		return body["deployment"].(map[string]any)["id"].(string), op
	}
	one, op := deploy("one", map[string]any{})
	if op["status"] != "succeeded" {
		t.Fatalf("first deploy: %v", op)
	}
	two, op := deploy("two", map[string]any{"cores": 3})
	if op["status"] != "succeeded" {
		t.Fatalf("second deploy: %v", op)
	}
	params := func(id string) map[string]any {
		return s.Call(t, "GET", "/api/v1/deployments/"+id, user, nil).JSON(t)["parameters"].(map[string]any)
	}
	p1, p2 := params(one), params(two)
	if p1["name"] != "dev-virtualmachine-01" || p2["name"] != "dev-virtualmachine-02" || p1["ip_address"] != "10.20.0.2" || p2["ip_address"] != "10.20.0.3" {
		t.Fatalf("resolved: %v and %v", p1, p2)
	}
	machines, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	seen := map[string]bool{}
	for _, m := range machines {
		data, _ := os.ReadFile(m)
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		seen[v["name"].(string)+" "+v["ipAddress"].(string)] = true
	}
	if !seen["dev-virtualmachine-01 10.20.0.2"] || !seen["dev-virtualmachine-02 10.20.0.3"] {
		t.Fatalf("the cloud's machines: %v", seen)
	}

	// A deploy that fails gives its address and name back.
	_, op = deploy("three", map[string]any{"fail_on": "create"})
	if op["status"] != "failed" {
		t.Fatalf("the failing deploy: %v", op)
	}
	pool := s.Call(t, "GET", "/api/v1/ipam/pools/"+poolID, admin, nil).JSON(t)
	if allocations := pool["allocations"].([]any); len(allocations) != 2 {
		t.Fatalf("after a failed deploy the pool holds %v", allocations)
	}
	// An update keeps what was handed out.
	r = s.Call(t, "POST", "/api/v1/deployments/"+one+"/update", user, map[string]any{"parameters": map[string]any{"cores": 4}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, user, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("update: %v", op)
	}
	if p := params(one); p["ip_address"] != "10.20.0.2" || p["name"] != "dev-virtualmachine-01" || p["cores"] != 4.0 {
		t.Fatalf("after the update: %v", p)
	}
	// .4 (given back by the failed deploy) and .5 are left; .6 is reserved, .7 the broadcast.
	four, op := deploy("four", map[string]any{})
	_, op5 := deploy("five", map[string]any{})
	_, op6 := deploy("six", map[string]any{})
	if op["status"] != "succeeded" || op5["status"] != "succeeded" || op6["status"] != "failed" || !strings.Contains(op6["error"].(string), "no free address") {
		t.Fatalf("filling the pool: %v / %v / %v", op["status"], op5["status"], op6)
	}
	if p := params(four); p["ip_address"] != "10.20.0.4" || p["name"] != "dev-virtualmachine-04" {
		t.Fatalf("a name is never handed out twice, an address is once given back: %v", p)
	}

	// A destroy gives everything back.
	r = s.Call(t, "POST", "/api/v1/deployments/"+one+"/destroy", admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("destroy: %v", op)
	}
	pool = s.Call(t, "GET", "/api/v1/ipam/pools/"+poolID, admin, nil).JSON(t)
	for _, a := range pool["allocations"].([]any) {
		if a.(map[string]any)["prefix"] == "10.20.0.2/32" {
			t.Fatalf("the destroyed deployment's address is still allocated: %v", pool["allocations"])
		}
	}
	if u := pool["utilisation"].(float64); u <= 0 || u >= 1 {
		t.Errorf("utilisation %v", u)
	}
}

// The secret provisioner makes a secret once per deployment, keeps it through updates, makes
// a new one when asked to rotate it, and forgets it when the deployment is destroyed.
func TestResolvers_SecretMadeKeptRotatedForgotten(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	c, err := s.Components.Create(t.Context(), s.Admin, component.New{
		Draft: component.Draft{Name: "secret-disk", Language: "yaml", Code: apptest.SecretProgram,
			InputSchema: []byte(`{"type": "object", "required": ["name", "token"], "properties": {
				"name": {"type": "string"}, "token": {"type": "string", "x-secret": true}}}`),
			OutputSchema:     []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}, "token": {"type": "string"}}}`),
			ResolverBindings: json.RawMessage(`{"token": "secret_provisioner"}`)},
		Provider: "simcloud", SemanticType: "VirtualMachine",
	})
	apptest.Must(t, err)
	_, err = s.Components.Publish(t.Context(), s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	provider, user, admin := s.Token(t, s.Admin), s.Token(t, s.UserA), s.Token(t, s.AdminA)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/secret_provisioner", provider, `{"length": 20}`), http.StatusOK)

	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": c.ID, "environment_id": env.ID, "name": "vault",
		"parameters": map[string]any{"name": "vault"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	id := body["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	disk := func() string {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(s.Cloud, "disk", "*.json"))
		if len(files) != 1 {
			t.Fatalf("disks: %v", files)
		}
		data, _ := os.ReadFile(files[0])
		var m map[string]any
		apptest.Must(t, json.Unmarshal(data, &m))
		return m["image"].(string)
	}
	first := disk()
	if len(first) != 20 {
		t.Fatalf("the made-up secret %q is not 20 characters", first)
	}
	update := func(body map[string]any) map[string]any {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments/"+id+"/update", user, body)
		apptest.WantStatus(t, r, http.StatusAccepted)
		return s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	}
	if op := update(map[string]any{"parameters": map[string]any{}}); op["status"] != "succeeded" || disk() != first {
		t.Fatalf("an update made a new secret: %v", op["status"])
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments/"+id+"/update", user, map[string]any{"rotate": []string{"name"}}), http.StatusUnprocessableEntity)
	if op := update(map[string]any{"rotate": []string{"token"}}); op["status"] != "succeeded" || disk() == first || len(disk()) != 20 {
		t.Fatalf("rotation: %v, %q then %q", op["status"], first, disk())
	}
	// The deployment page offers the same, one button per made-up secret.
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	if page := string(b.Get(t, "/deployments/"+id).Body); !strings.Contains(page, `data-rotate="token"`) {
		t.Fatalf("no rotate button: %.2000s", page)
	}
	second := disk()
	r = b.Post(t, "/deployments/"+id+"/apply", url.Values{"_csrf": {b.CSRF}, "action": {"update"}, "rotate": {"token"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if op := s.WaitOperation(t, user, strings.TrimPrefix(r.Header.Get("Location"), "/operations/")); op["status"] != "succeeded" || disk() == second {
		t.Fatalf("rotation from the page: %v", op["status"])
	}
	dep := s.Call(t, "GET", "/api/v1/deployments/"+id, user, nil).JSON(t)
	if names := dep["secret_names"].([]any); len(names) != 1 || strings.Contains(fmt.Sprint(dep), disk()) {
		t.Fatalf("the deployment shows %v", dep)
	}
	r = s.Call(t, "POST", "/api/v1/deployments/"+id+"/destroy", admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("destroy: %v", op)
	}
	if dep := s.Call(t, "GET", "/api/v1/deployments/"+id, user, nil).JSON(t); len(dep["secret_names"].([]any)) != 0 {
		t.Fatalf("a destroyed deployment keeps its secrets: %v", dep["secret_names"])
	}
}

// A machine and a network in one environment: the machine binds an address, the network a
// subnet of the configured size, from one pool, without overlapping.
func TestResolvers_AddressAndSubnetFromOnePool(t *testing.T) {
	s := apptest.NewSite(t)
	if _, err := component.EnsureBuiltins(t.Context(), s.Components); err != nil {
		t.Fatal(err)
	}
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	provider, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "net", "prefix": "10.60.0.0/24", "environment_id": env.ID})
	apptest.WantStatus(t, r, http.StatusCreated)
	poolID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/ipam", provider,
		`{"pool_id": "`+poolID+`", "subnet_bits": 33}`), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/ipam", provider,
		`{"pool_id": "`+poolID+`", "subnet_bits": 28}`), http.StatusOK)
	ids := map[string]string{}
	for _, c := range s.Call(t, "GET", "/api/v1/components?search=simcloud", user, nil).JSON(t)["components"].([]any) {
		ids[c.(map[string]any)["name"].(string)] = c.(map[string]any)["id"].(string)
	}
	deploy := func(component, name string, params map[string]any) map[string]any {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": ids[component], "environment_id": env.ID,
			"name": name, "parameters": params})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("%s: %v", name, op)
		}
		return s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).JSON(t)["parameters"].(map[string]any)
	}
	vm := deploy("simcloud-machine", "vm", map[string]any{"name": "vm-1"})
	network := deploy("simcloud-network", "net", map[string]any{"name": "net-1"})
	if vm["ip_address"] != "10.60.0.2" || network["cidr"] != "10.60.0.16/28" {
		t.Fatalf("the machine got %v, the network %v", vm["ip_address"], network["cidr"])
	}
	pool := s.Call(t, "GET", "/api/v1/ipam/pools/"+poolID, user, nil).JSON(t)
	if kinds := fmt.Sprint(pool["allocations"]); !strings.Contains(kinds, "kind:address") || !strings.Contains(kinds, "kind:subnet") {
		t.Fatalf("allocations: %v", pool["allocations"])
	}
}

// Machines joining a network get their addresses from its subnet, with its gateway, each
// network's from its own; one joining none gets one of the pool's, outside every subnet. A
// destroyed machine gives its address back to the subnet, and the environment's page lists
// each address under the subnet it was handed out in.
func TestResolvers_AMachineGetsItsAddressFromTheSubnetOfItsNetwork(t *testing.T) {
	s := apptest.NewSite(t)
	if _, err := component.EnsureBuiltins(t.Context(), s.Components); err != nil {
		t.Fatal(err)
	}
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	provider, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "eu-pool", "prefix": "10.20.0.0/24", "environment_id": env.ID})
	apptest.WantStatus(t, r, http.StatusCreated)
	poolID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/ipam", provider,
		`{"pool_id": "`+poolID+`", "subnet_bits": 26}`), http.StatusOK)
	ids := apptest.BuiltinIDs(t, s)
	type deployment struct{ id, op string }
	deploy := func(component, name string, params map[string]any) deployment {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": ids[component], "environment_id": env.ID,
			"name": name, "parameters": params})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		op := body["operation"].(map[string]any)["id"].(string)
		if got := s.WaitOperation(t, user, op); got["status"] != "succeeded" {
			t.Fatalf("%s: %v", name, got)
		}
		return deployment{id: body["deployment"].(map[string]any)["id"].(string), op: op}
	}
	get := func(d deployment) map[string]any {
		return s.Call(t, "GET", "/api/v1/deployments/"+d.id, user, nil).JSON(t)
	}
	// A first machine outside any network takes the pool's first address, so that the subnets
	// come after it and a wrong draw cannot land inside them by chance.
	loose := deploy("simcloud-machine", "loose", map[string]any{"name": "loose"})
	netA, netB := deploy("simcloud-network", "core-net", map[string]any{"name": "core"}), deploy("simcloud-network", "edge-net", map[string]any{"name": "edge"})
	on := func(net deployment) string { return get(net)["outputs"].(map[string]any)["network_id"].(string) }
	a1 := deploy("simcloud-machine", "a1", map[string]any{"name": "a1", "network_id": on(netA)})
	a2 := deploy("simcloud-machine", "a2", map[string]any{"name": "a2", "network_id": on(netA)})
	b1 := deploy("simcloud-machine", "b1", map[string]any{"name": "b1", "network_id": on(netB)})
	address := func(d deployment) string { return get(d)["parameters"].(map[string]any)["ip_address"].(string) }
	cidr := func(d deployment) string { return get(d)["parameters"].(map[string]any)["cidr"].(string) }
	if cidr(netA) != "10.20.0.64/26" || cidr(netB) != "10.20.0.128/26" {
		t.Fatalf("the networks hold %s and %s", cidr(netA), cidr(netB))
	}
	for _, m := range []struct {
		name string
		d    deployment
		want string
	}{{"loose", loose, "10.20.0.2"}, {"a1", a1, "10.20.0.66"}, {"a2", a2, "10.20.0.67"}, {"b1", b1, "10.20.0.130"}} {
		if got := address(m.d); got != m.want {
			t.Errorf("machine %s got %s, want %s", m.name, got, m.want)
		}
	}

	// The address a destroyed machine held is the next one its network hands out.
	admin := s.Token(t, s.AdminA)
	r = s.Call(t, "POST", "/api/v1/deployments/"+a1.id+"/destroy", admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("destroy a1: %v", op)
	}
	if a3 := deploy("simcloud-machine", "a3", map[string]any{"name": "a3", "network_id": on(netA)}); address(a3) != "10.20.0.66" {
		t.Fatalf("after a1 was destroyed, a3 got %s, want a1's 10.20.0.66", address(a3))
	}

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	// The deploy dialog offers the environment's networks for network_id, not a blank to paste into.
	apptest.WantIn(t, b.Get(t, "/components/"+ids["simcloud-machine"]+"/deploy"), `data-testid="suggestions-network_id"`,
		`<option value="`+on(netA)+`" label="core-net in dev">`, `<option value="`+on(netB)+`" label="edge-net in dev">`)
	// Its parameters are shown under their titles.
	apptest.WantIn(t, b.Get(t, "/deployments/"+a2.id), `<dt>IP address <code class="muted">ip_address</code></dt>`)
	got := addresses(t, b, env.ID.String())
	for _, w := range []string{"10.20.0.64/26 subnet | 10.20.0.66 address in 10.20.0.64/26 (core-net) | 10.20.0.67 address in 10.20.0.64/26 (core-net)",
		"10.20.0.128/26 subnet | 10.20.0.130 address in 10.20.0.128/26 (edge-net)"} {
		if !strings.Contains(got, w) {
			t.Errorf("the environment's addresses read %q, want them to hold %q", got, w)
		}
	}
}

// addresses reads the environment page's addresses in use, each row's address and kind as they
// read, rows joined by " | ".
func addresses(t *testing.T, b *apptest.Browser, env string) string {
	t.Helper()
	page := string(b.Get(t, "/environments/"+env).Body)
	table, _, _ := strings.Cut(page[strings.Index(page, `data-testid="environment-addresses"`)+1:], "</table>")
	var order []string
	for _, row := range strings.Split(table, "<tr")[2:] {
		cells := strings.Split(row, "<td")
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString("<td"+cells[1]+"<td"+cells[2], " ")
		order = append(order, strings.Join(strings.Fields(text), " "))
	}
	return strings.Join(order, " | ")
}
