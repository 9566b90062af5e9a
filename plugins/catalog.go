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
			if other, dup := c.byName[t.Name]; dup {
				errs = append(errs, fmt.Errorf("tool %q is offered by plugins %q and %q; give one a different prefix", t.Name, other.Plugin.Name, p.Name))
				continue
			}
			c.byName[t.Name] = t
			c.tools = append(c.tools, t)
		}
		for _, r := range p.Resources {
			if other, dup := c.byURI[r.URI]; dup {
				errs = append(errs, fmt.Errorf("resource %q is offered by plugins %q and %q", r.URI, other.Plugin.Name, p.Name))
				continue
			}
			c.byURI[r.URI] = r
			c.resources = append(c.resources, r)
		}
		for _, t := range p.Templates {
			if other, dup := c.byTmpl[t.URITemplate]; dup {
				errs = append(errs, fmt.Errorf("resource template %q is offered by plugins %q and %q", t.URITemplate, other.Plugin.Name, p.Name))
				continue
			}
			c.byTmpl[t.URITemplate] = t
			c.templates = append(c.templates, t)
		}
		for _, pr := range p.Prompts {
			if other, dup := c.byPrompt[pr.Name]; dup {
				errs = append(errs, fmt.Errorf("prompt %q is offered by plugins %q and %q; give one a different prefix", pr.Name, other.Plugin.Name, p.Name))
				continue
			}
			c.byPrompt[pr.Name] = pr
			c.prompts = append(c.prompts, pr)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

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
