package audit

import "testing"

func TestRedact_HidesSecretsAtAnyDepth(t *testing.T) {
	got := Redact(map[string]any{
		"name":     "prod",
		"password": "hunter22",
		"config":   map[string]any{"db_secret": "s3cr3t", "size": 3, "apiToken": "nmb_x"},
		"items":    []any{map[string]any{"api_key": "k", "db_pass": "p", "port": 22}},
	})
	item := got["items"].([]any)[0].(map[string]any)
	if item["api_key"] != "[redacted]" || item["db_pass"] != "[redacted]" || item["port"] != 22 {
		t.Fatalf("inside lists: %v", item)
	}
	if got["name"] != "prod" || got["password"] != "[redacted]" {
		t.Fatalf("top level: %v", got)
	}
	inner := got["config"].(map[string]any)
	if inner["db_secret"] != "[redacted]" || inner["apiToken"] != "[redacted]" || inner["size"] != 3 {
		t.Fatalf("nested: %v", inner)
	}
}
