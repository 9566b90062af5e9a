package plugins

import (
	"context"
	"errors"
	"fmt"
)

// Catalog is the set of tools the server offers, from all loaded plugins.
type Catalog struct {
	plugins []*Plugin
	tools   []*Tool
	byName  map[string]*Tool
}

// NewCatalog indexes the plugins' tools. With the default prefixes (plugin names are
// unique and contain no '_') full tool names cannot collide; with other prefixes they
// can, and a collision is refused naming both plugins.
func NewCatalog(plugins []*Plugin) (*Catalog, error) {
	c := &Catalog{plugins: plugins, byName: map[string]*Tool{}}
	for _, p := range plugins {
		for _, t := range p.Tools {
			if other, dup := c.byName[t.Name]; dup {
				return nil, fmt.Errorf("tool %q is offered by plugins %q and %q; give one of them another tool_prefix", t.Name, other.Plugin.Name, p.Name)
			}
			c.byName[t.Name] = t
			c.tools = append(c.tools, t)
		}
	}
	return c, nil
}

// Tools returns every tool, in plugin order then manifest order.
func (c *Catalog) Tools() []*Tool { return c.tools }

// Lookup finds a tool by its full name.
func (c *Catalog) Lookup(name string) (*Tool, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Close unloads every plugin.
func (c *Catalog) Close(ctx context.Context) error {
	var errs []error
	for _, p := range c.plugins {
		errs = append(errs, p.Close(ctx))
	}
	return errors.Join(errs...)
}
