package views

import "testing"

func TestBrowserPattern_EscapesWhatTheVFlagRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`^[a-z]([a-z0-9-]*[a-z0-9])?$`:         `^[a-z]([a-z0-9\-]*[a-z0-9])?$`,
		`^[-a-z]+$`:                            `^[\-a-z]+$`,
		`^[^-/|]+$`:                            `^[^\-\/\|]+$`,
		`^[A-Za-z][A-Za-z0-9_.]{0,14}$`:        `^[A-Za-z][A-Za-z0-9_.]{0,14}$`,
		`^(dhcp|[0-9]{1,3}(\.[0-9]{1,3}){3})$`: `^(dhcp|[0-9]{1,3}(\.[0-9]{1,3}){3})$`,
		`^[a\-z]$`:                             `^[a\-z]$`,
		`^[a-z0-9.-]+$`:                        `^[a-z0-9.\-]+$`,
		`(?i)^web$`:                            ``,
	} {
		if got := BrowserPattern(in); got != want {
			t.Errorf("BrowserPattern(%q) = %q, want %q", in, got, want)
		}
	}
}
