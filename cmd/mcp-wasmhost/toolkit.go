package main

import (
	"context"
	"io"
)

// toolkit are the plugin author's commands (docs/AUTHORING.md), each in its own file;
// they take their own flags and ignore the server's.
var toolkit = map[string]func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error{
	"call":    runCall,
	"inspect": runInspect,
	"new":     runNew,
	"pin":     runPin,
}
