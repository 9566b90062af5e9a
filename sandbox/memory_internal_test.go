package sandbox

import (
	"bytes"
	"testing"
)

// A reused reservation is all zeros, in its warm part and beyond: the next instance
// may serve another client.
func TestPoolZeroes(t *testing.T) {
	var p memoryPool
	defer p.drain()
	const limit = warmBytes + 4<<20
	l, err := p.get(limit)
	if err != nil {
		t.Fatal(err)
	}
	if l.Allocate(0, limit) != l {
		t.Fatal("Allocate did not return the reservation")
	}
	b := l.Reallocate(limit)
	if len(b) != limit {
		t.Fatalf("Reallocate(%d) = %d bytes", limit, len(b))
	}
	for i := range b {
		b[i] = 0xaa
	}
	if l.Reallocate(limit+1) != nil {
		t.Fatal("Reallocate beyond the limit succeeded")
	}
	p.put(l)
	again, err := p.get(limit)
	if err != nil {
		t.Fatal(err)
	}
	if again != l {
		t.Fatal("the idle reservation was not reused")
	}
	if again.Allocate(0, limit) != again {
		t.Fatal("Allocate on a reused reservation did not return it")
	}
	b = again.Reallocate(limit)
	if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d of a reused reservation is not zero", i)
	}
	p.put(again)
}

// The pool keeps at most poolIdle reservations; the rest are unmapped.
func TestPoolBound(t *testing.T) {
	var p memoryPool
	defer p.drain()
	var ls []*linearMemory
	for range poolIdle + 3 {
		l, err := p.get(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		p.put(l)
	}
	if p.n != poolIdle {
		t.Fatalf("pool holds %d reservations, want %d", p.n, poolIdle)
	}
	if unmapped := ls[len(ls)-1]; unmapped.mem != nil {
		t.Fatal("a reservation beyond the bound was kept")
	}
}
