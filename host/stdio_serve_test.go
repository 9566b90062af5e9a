package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// TestServeStdioHammer: four writers interleave tool calls with lines that are not
// messages, then the input ends. Every call is answered, every bad line gets one error
// answer, and ServeStdio returns (run it with -race: reads, writes and the drain at the
// end race each other).
func TestServeStdioHammer(t *testing.T) {
	f := newFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- f.srv.ServeStdio(context.Background(), inR, outW) }()

	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	answers := make(chan answer, 1000)
	go func() {
		defer close(answers)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var a answer
			if json.Unmarshal(sc.Bytes(), &a) == nil && (a.Result != nil || a.Error != nil) {
				answers <- a
			}
		}
	}()
	var wmu sync.Mutex
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Errorf("write: %v", err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hammer","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const writers, each = 4, 25
	bad := []string{`{"jsonrpc":"2.0","id":`, `[1,2`, `{"jsonrpc":"1.0","method":"x"}`, "\x00\xff"}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := 1 + w*each + i
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"textkit_ping","arguments":{}}}`, id))
				send(bad[i%len(bad)])
			}
		})
	}
	wg.Wait()
	inW.Close()

	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio = %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("ServeStdio did not return after its input ended")
	}
	results, refused := map[string]bool{}, 0
	for a := range answers {
		switch {
		case a.Error != nil && string(a.ID) == "null":
			refused++
		case a.Error != nil:
			t.Errorf("answer to id %s: error %d", a.ID, a.Error.Code)
		default:
			results[string(a.ID)] = true
		}
	}
	if len(results) != 1+writers*each || refused != writers*each {
		t.Errorf("got %d results and %d error answers, want %d and %d", len(results), refused, 1+writers*each, writers*each)
	}
}
