package proc

import "testing"

func TestRingKeepsTheLastBytes(t *testing.T) {
	r := NewRing(8)
	r.Write([]byte("abc"))
	if got := string(r.Bytes()); got != "abc" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("defgh"))
	if got := string(r.Bytes()); got != "abcdefgh" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("ij"))
	if got := string(r.Bytes()); got != "cdefghij" {
		t.Fatalf("got %q", got)
	}
	r.Write([]byte("0123456789"))
	if got := string(r.Bytes()); got != "23456789" {
		t.Fatalf("got %q", got)
	}
	for i := range 20 {
		r.Write([]byte{byte('a' + i)})
	}
	if got := string(r.Bytes()); got != "mnopqrst" {
		t.Fatalf("got %q", got)
	}
}
