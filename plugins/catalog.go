package plugins

import (
	"context"
	"errors"
	"fmt"
)

// Catalog is what the server offers, from all loaded plugins.
type Catalog struct {
	plugins   []*Plugin
	tools     []*Tool
	byName    map[string]*Tool
	resources []*Resource
	templates []*ResourceTemplate
	prompts   []*Prompt
	byURI     map[string]*Resource
	byTmpl    map[string]*ResourceTemplate
	byPrompt  map[string]*Prompt
}

// NewCatalog indexes the plugins' tools, resources, templates and prompts. Two
// plugins may not offer the same tool or prompt name (possible when a prefix is
// configured or left out), the same resource URI or the same URI template: that is
// an error naming both plugins.
func NewCatalog(plugins []*Plugin) (*Catalog, error) {
	c := &Catalog{plugins: plugins, byName: map[string]*Tool{}, byURI: map[string]*Resource{},
		byTmpl: map[string]*ResourceTemplate{}, byPrompt: map[string]*Prompt{}}
	var errs []error
	for _, p := range plugins {
		for _, t := range p.Tools {
			errs = append(errs, index(c.byName, &c.tools, t.Name, t, "tool", true))
		}
		for _, r := range p.Resources {
			errs = append(errs, index(c.byURI, &c.resources, r.URI, r, "resource", false))
		}
		for _, t := range p.Templates {
			errs = append(errs, index(c.byTmpl, &c.templates, t.URITemplate, t, "resource template", false))
		}
		for _, pr := range p.Prompts {
			errs = append(errs, index(c.byPrompt, &c.prompts, pr.Name, pr, "prompt", true))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Plugins returns the plugins, in the order given to NewCatalog.
func (c *Catalog) Plugins() []*Plugin { return c.plugins }

// Resources returns every resource, in plugin order then manifest order.
func (c *Catalog) Resources() []*Resource { return c.resources }

// Templates returns every resource template, in plugin order then manifest order.
func (c *Catalog) Templates() []*ResourceTemplate { return c.templates }

// Prompts returns every prompt, in plugin order then manifest order.
func (c *Catalog) Prompts() []*Prompt { return c.prompts }

// Prompt finds a prompt by its full name.
func (c *Catalog) Prompt(name string) (*Prompt, bool) {
	p, ok := c.byPrompt[name]
	return p, ok
}

// Resource finds a resource by its URI.
func (c *Catalog) Resource(uri string) (*Resource, bool) {
	r, ok := c.byURI[uri]
	return r, ok
}

// Template finds a resource template by its URI template.
func (c *Catalog) Template(uriTemplate string) (*ResourceTemplate, bool) {
	t, ok := c.byTmpl[uriTemplate]
	return t, ok
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

// index adds v under key to byKey and list, or reports that another plugin already
// offers key. prefixed says whether a different prefix would tell the two apart.
func index[T interface{ owner() *Plugin }](byKey map[string]T, list *[]T, key string, v T, what string, prefixed bool) error {
	if other, dup := byKey[key]; dup {
		hint := ""
		if prefixed {
			hint = "; give one a different prefix"
		}
		return fmt.Errorf("%s %q is offered by plugins %q and %q%s", what, key, other.owner().Name, v.owner().Name, hint)
	}
	byKey[key] = v
	*list = append(*list, v)
	return nil
}

func (t *Tool) owner() *Plugin             { return t.Plugin }
func (r *Resource) owner() *Plugin         { return r.Plugin }
func (t *ResourceTemplate) owner() *Plugin { return t.Plugin }
func (p *Prompt) owner() *Plugin           { return p.Plugin }
