// Command fetcher is a test guest that makes the HTTP requests its arguments
// describe, through the host, and echoes everything it can see of them: status,
// headers, body and errors. Tests use it to prove what reaches a guest (never an
// injected secret) and what the host refuses.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
	"github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest/nethttp"
)

type request struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type fetchArgs struct {
	Requests []request `json:"requests"`
	// NetHTTP sends them with net/http over nethttp.Transport instead of nethttp.Fetch.
	NetHTTP bool `json:"nethttp,omitempty"`
	// OnCancel, registered first, is the request the host makes if the call is cancelled.
	OnCancel *request `json:"on_cancel,omitempty"`
}

type outcome struct {
	Status  int                 `json:"status,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    string              `json:"body,omitempty"`
	Error   string              `json:"error,omitempty"`
}

func init() {
	guest.Add(guest.Tool{Name: "fetch", Description: "Makes the requests described and echoes what it sees.",
		TaskSupport: guest.TaskOptional},
		func(c *guest.Call, in fetchArgs) (*guest.Result, error) {
			if in.OnCancel != nil {
				r := in.OnCancel
				if err := nethttp.OnCancel(&nethttp.FetchRequest{Method: r.Method, URL: r.URL, Headers: r.Headers, Body: []byte(r.Body)}); err != nil {
					return guest.Errorf("on_cancel: %v", err), nil
				}
			}
			out := make([]outcome, len(in.Requests))
			client := &http.Client{Transport: nethttp.Transport(c)}
			for i, r := range in.Requests {
				if in.NetHTTP {
					out[i] = viaNetHTTP(client, r)
					continue
				}
				res, err := nethttp.Fetch(nethttp.FetchRequest{Method: r.Method, URL: r.URL, Headers: r.Headers, Body: []byte(r.Body)})
				if err != nil {
					out[i].Error = err.Error()
					continue
				}
				out[i] = outcome{Status: res.Status, Headers: res.Headers, Body: string(res.Body)}
			}
			b, _ := json.Marshal(out)
			return guest.Text(string(b)), nil
		})
}

func viaNetHTTP(client *http.Client, r request) outcome {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, r.URL, strings.NewReader(r.Body))
	if err != nil {
		return outcome{Error: err.Error()}
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return outcome{Error: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcome{Error: err.Error()}
	}
	return outcome{Status: resp.StatusCode, Headers: resp.Header, Body: string(body)}
}

func main() {}
