package metrics

// methods are the MCP methods counted by name; any other method counts as "other",
// so that a client cannot grow the metrics with names of its own.
var methods = func() map[string]bool {
	set := map[string]bool{}
	for _, m := range []string{
		"initialize", "ping", "server/discover",
		"tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
		"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update",
		"subscriptions/listen",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed",
	} {
		set[m] = true
	}
	return set
}()

// Method is the method label of method: itself if the server knows it, else "other".
func Method(method string) string {
	if methods[method] {
		return method
	}
	return "other"
}
