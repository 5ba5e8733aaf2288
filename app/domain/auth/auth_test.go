package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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

func TestVerifyPassword_WaitsForASlotUntilTheRequestEnds(t *testing.T) {
	s := &Service{hashing: make(chan struct{}, 1)}
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	s.hashing <- struct{}{} // every slot taken
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.verifyPassword(ctx, h, "correct horse battery"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with no slot free: %v, want the deadline", err)
	}
	<-s.hashing
	if ok, err := s.verifyPassword(context.Background(), h, "correct horse battery"); !ok || err != nil {
		t.Fatalf("with a slot free: %v %v", ok, err)
	}
	if len(s.hashing) != 0 {
		t.Fatal("verification kept its slot")
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
