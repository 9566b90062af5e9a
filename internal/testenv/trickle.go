package testenv

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"time"
)

// Trickle POSTs a body one byte every 100ms, for at most limit, and reports how long
// the server at addr (host:port, path /mcp) took to close the connection, and what it
// answered: a client that trickles its body to hold a connection open.
func Trickle(addr string, limit time.Duration) (time.Duration, string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", addr)
	var answer bytes.Buffer
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		io.Copy(&answer, io.LimitReader(conn, 1<<16))
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Since(start) < limit {
		select {
		case <-closed:
			return time.Since(start), answer.String(), nil
		case <-tick.C:
			conn.Write([]byte(" "))
		}
	}
	conn.Close()
	<-closed
	return time.Since(start), answer.String(), nil
}
