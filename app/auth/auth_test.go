package auth

import (
	"strings"
	"testing"
)

func TestPasswordHash_VerifiesOnlyTheRightPassword(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$") {
		t.Fatalf("not an argon2id PHC string: %s", h)
	}
	if !VerifyPassword(h, "correct horse battery") || VerifyPassword(h, "correct horse batterY") {
		t.Fatal("verification is wrong")
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password must differ by salt")
	}
	if VerifyPassword("$argon2id$garbage", "x") {
		t.Fatal("a malformed hash must not verify")
	}
}

func TestSafeNext_StaysOnSite(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "/",
		"/tenants?x=1":         "/tenants?x=1",
		"https://evil.example": "/",
		"//evil.example/x":     "/",
		`/\evil.example`:       "/",
		"tenants":              "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
