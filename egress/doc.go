// Package egress is the one door from a guest to the network: the ABI's "http"
// request (docs/ABI.md), made by the server process under a per-plugin policy that
// denies by default.
//
// A [Client] holds one plugin's [Policy]: the origins it may reach ([Rule]), with
// optional methods and path prefixes, the headers the operator injects there
// (secrets the guest never sees) and the exact addresses that may be reached although
// they are not public. Every hop of a request (redirects included, at most
// [DefaultMaxRedirects]) is checked against the same policy: the URL parsed strictly
// (non-canonical numeric hosts refused), the name resolved by the host, every address
// classified ([Classify]: loopback, private, link-local, CGNAT, multicast, cloud
// metadata and IPv6 embeddings of them are refused), and the connection made to the
// checked address only, never a second lookup. No proxy from the environment is
// used; TLS is always verified (against a rule's CA file where it names one).
//
// Every request leaves one audit line (slog, info): plugin, tool, task, method,
// origin (no query, no headers), status, bytes each way, duration and, for a
// refusal, the rule that refused.
package egress
