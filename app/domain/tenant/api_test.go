package tenant_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

func TestAPI_TenantsAndMembers(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)

	r := s.Call(t, "POST", "/api/v1/tenants", admin, map[string]any{"name": "Globex"})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	r = s.Call(t, "POST", "/api/v1/users", admin, map[string]any{"email": "hank@example.com", "password": "a long password"})
	apptest.WantStatus(t, r, http.StatusCreated)
	userID := r.JSON(t)["id"].(string)
	if strings.Contains(string(r.Body), "password") {
		t.Fatalf("user reply mentions the password: %s", r.Body)
	}

	r = s.Call(t, "POST", "/api/v1/tenants/"+id+"/members", admin, map[string]any{"user_id": userID, "role": "tenant_admin"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "GET", "/api/v1/tenants/"+id+"/members", admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), `"hank@example.com"`) || !strings.Contains(string(r.Body), `"tenant_admin"`) {
		t.Fatalf("members = %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/tenants/"+id+"/members", admin, map[string]any{"user_id": userID}), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/tenants/"+id+"/members/"+userID, admin, nil), http.StatusNotFound)
}
