package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"regexp"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"
)

// Limits of the manifest's resources, templates and prompts (docs/ABI.md).
const (
	maxURILen       = 2048 // a resource URI or URI template
	maxPromptArgs   = 32   // arguments of one prompt
	maxDeclarations = 1000 // resources, templates or prompts in one manifest, each
)

// Resource is a resource a plugin serves at a fixed URI.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	MimeType    string          // "" when the plugin declares none
	Size        *int64          // nil when the plugin declares none
	Annotations json.RawMessage // nil when the plugin declares none
	Plugin      *Plugin
}

// ResourceTemplate is a family of resources a plugin serves, named by an RFC 6570
// URI template.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MimeType    string
	Annotations json.RawMessage
	Plugin      *Plugin

	tmpl *uritemplate.Template
}

// Match reports whether uri is one of the template's resources.
func (t *ResourceTemplate) Match(uri string) bool {
	return t.tmpl.Regexp().MatchString(uri)
}

// Variables returns the names of the template's variables.
func (t *ResourceTemplate) Variables() []string { return t.tmpl.Varnames() }

// Prompt is a prompt template a plugin offers.
type Prompt struct {
	Name        string // as clients see it: <prefix>_<guest name>, or the guest name
	GuestName   string // as the guest declared it
	Title       string
	Description string
	Arguments   []PromptArgument
	Plugin      *Plugin
}

// PromptArgument is one argument of a prompt; all values are strings.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// argument returns the prompt's argument called name.
func (p *Prompt) argument(name string) (PromptArgument, bool) {
	for _, a := range p.Arguments {
		if a.Name == name {
			return a, true
		}
	}
	return PromptArgument{}, false
}

// features holds the manifest sections that came after tools; all are optional.
type features struct {
	Resources         json.RawMessage `json:"resources"`
	ResourceTemplates json.RawMessage `json:"resourceTemplates"`
	Prompts           json.RawMessage `json:"prompts"`
	Completions       *bool           `json:"completions"`
}

var (
	argNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	schemeRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`) // RFC 3986 scheme
)

// parseFeatures validates the resources, resource templates, prompts and completion
// flag of a manifest and sets them on p.
func parseFeatures(p *Plugin, f features) error {
	var errs []error
	if f.Completions != nil {
		p.Completions = *f.Completions
	}
	if f.Resources != nil {
		var decls []struct {
			URI         string          `json:"uri"`
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			MimeType    string          `json:"mimeType"`
			Size        *int64          `json:"size"`
			Annotations json.RawMessage `json:"annotations"`
		}
		if err := strictDecode(f.Resources, &decls); err != nil {
			return fmt.Errorf("resources: %w", err)
		}
		if len(decls) > maxDeclarations {
			return fmt.Errorf("resources: %d declared, at most %d allowed", len(decls), maxDeclarations)
		}
		seen := map[string]bool{}
		for i, d := range decls {
			r := &Resource{URI: d.URI, Name: d.Name, Title: d.Title, Description: d.Description,
				MimeType: d.MimeType, Size: d.Size, Annotations: d.Annotations, Plugin: p}
			err := checkURI(d.URI)
			if err == nil && seen[d.URI] {
				err = errors.New("declared twice")
			}
			if err == nil {
				err = checkDescriptive(d.Name, d.Title, d.Description, d.MimeType, d.Annotations)
			}
			if err == nil && d.Size != nil && *d.Size < 0 {
				err = fmt.Errorf("size %d is negative", *d.Size)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("resources[%d] (%q): %w", i, d.URI, err))
				continue
			}
			seen[d.URI] = true
			p.Resources = append(p.Resources, r)
		}
	}
	if f.ResourceTemplates != nil {
		var decls []struct {
			URITemplate string          `json:"uriTemplate"`
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			MimeType    string          `json:"mimeType"`
			Annotations json.RawMessage `json:"annotations"`
		}
		if err := strictDecode(f.ResourceTemplates, &decls); err != nil {
			return fmt.Errorf("resourceTemplates: %w", err)
		}
		if len(decls) > maxDeclarations {
			return fmt.Errorf("resourceTemplates: %d declared, at most %d allowed", len(decls), maxDeclarations)
		}
		seen := map[string]bool{}
		for i, d := range decls {
			t := &ResourceTemplate{URITemplate: d.URITemplate, Name: d.Name, Title: d.Title, Description: d.Description,
				MimeType: d.MimeType, Annotations: d.Annotations, Plugin: p}
			err := t.prepare()
			if err == nil && seen[d.URITemplate] {
				err = errors.New("declared twice")
			}
			if err == nil {
				err = checkDescriptive(d.Name, d.Title, d.Description, d.MimeType, d.Annotations)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("resourceTemplates[%d] (%q): %w", i, d.URITemplate, err))
				continue
			}
			seen[d.URITemplate] = true
			p.Templates = append(p.Templates, t)
		}
	}
	if f.Prompts != nil {
		var decls []struct {
			Name        string           `json:"name"`
			Title       string           `json:"title"`
			Description string           `json:"description"`
			Arguments   []PromptArgument `json:"arguments"`
		}
		if err := strictDecode(f.Prompts, &decls); err != nil {
			return fmt.Errorf("prompts: %w", err)
		}
		if len(decls) > maxDeclarations {
			return fmt.Errorf("prompts: %d declared, at most %d allowed", len(decls), maxDeclarations)
		}
		seen := map[string]bool{}
		for i, d := range decls {
			pr := &Prompt{Name: p.qualify(d.Name), GuestName: d.Name, Title: d.Title, Description: d.Description,
				Arguments: d.Arguments, Plugin: p}
			err := pr.check(seen)
			if err != nil {
				errs = append(errs, fmt.Errorf("prompts[%d] (%q): %w", i, d.Name, err))
				continue
			}
			seen[d.Name] = true
			p.Prompts = append(p.Prompts, pr)
		}
	}
	return errors.Join(errs...)
}

// checkURI accepts an absolute URI (with a scheme) of at most maxURILen bytes.
func checkURI(s string) error {
	if s == "" {
		return errors.New("uri is required")
	}
	if len(s) > maxURILen || !utf8.ValidString(s) {
		return fmt.Errorf("uri must be UTF-8 of at most %d bytes", maxURILen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("uri: %v", err)
	}
	if u.Scheme == "" {
		return errors.New("uri must be absolute (have a scheme such as file: or test:)")
	}
	return nil
}

func (t *ResourceTemplate) prepare() error {
	s := t.URITemplate
	if s == "" {
		return errors.New("uriTemplate is required")
	}
	if len(s) > maxURILen || !utf8.ValidString(s) {
		return fmt.Errorf("uriTemplate must be UTF-8 of at most %d bytes", maxURILen)
	}
	tmpl, err := uritemplate.New(s)
	if err != nil {
		return fmt.Errorf("uriTemplate: %v", err)
	}
	if !schemeRE.MatchString(s) {
		return errors.New("uriTemplate must start with a scheme such as file: or test:")
	}
	if len(tmpl.Varnames()) == 0 {
		return errors.New("uriTemplate has no variables; declare it as a resource")
	}
	t.tmpl = tmpl
	return nil
}

// checkDescriptive checks the fields resources and templates share.
func checkDescriptive(name, title, description, mimeType string, annotations json.RawMessage) error {
	switch {
	case name == "":
		return errors.New("name is required")
	case len(name) > 256 || !utf8.ValidString(name):
		return errors.New("name must be UTF-8 of at most 256 bytes")
	case !utf8.ValidString(title) || !utf8.ValidString(description):
		return errors.New("title and description must be UTF-8")
	}
	if mimeType != "" {
		if _, _, err := mime.ParseMediaType(mimeType); err != nil {
			return fmt.Errorf("mimeType %q: %v", mimeType, err)
		}
	}
	if annotations != nil {
		var a struct {
			Audience     []string `json:"audience"`
			Priority     *float64 `json:"priority"`
			LastModified string   `json:"lastModified"`
		}
		if err := strictDecode(annotations, &a); err != nil {
			return fmt.Errorf("annotations: %w", err)
		}
		for _, r := range a.Audience {
			if r != "user" && r != "assistant" {
				return fmt.Errorf("annotations.audience: %q is not user or assistant", r)
			}
		}
		if a.Priority != nil && (*a.Priority < 0 || *a.Priority > 1) {
			return fmt.Errorf("annotations.priority %v is not between 0 and 1", *a.Priority)
		}
	}
	return nil
}

func (p *Prompt) check(seen map[string]bool) error {
	switch {
	case !toolNameRE.MatchString(p.GuestName):
		return errors.New("name must be 1-48 characters of A-Z a-z 0-9 _ -")
	case seen[p.GuestName]:
		return errors.New("declared twice")
	case len(p.Name) > MaxToolNameLen:
		return fmt.Errorf("full name %q is longer than %d characters; give the plugin a shorter prefix", p.Name, MaxToolNameLen)
	case !utf8.ValidString(p.Title) || !utf8.ValidString(p.Description):
		return errors.New("title and description must be UTF-8")
	case len(p.Arguments) > maxPromptArgs:
		return fmt.Errorf("%d arguments, at most %d allowed", len(p.Arguments), maxPromptArgs)
	}
	names := map[string]bool{}
	for j, a := range p.Arguments {
		switch {
		case !argNameRE.MatchString(a.Name):
			return fmt.Errorf("arguments[%d]: name %q must be 1-64 characters of A-Z a-z 0-9 _ -", j, a.Name)
		case names[a.Name]:
			return fmt.Errorf("arguments[%d]: %q declared twice", j, a.Name)
		case !utf8.ValidString(a.Title) || !utf8.ValidString(a.Description):
			return fmt.Errorf("arguments[%d]: title and description must be UTF-8", j)
		}
		names[a.Name] = true
	}
	return nil
}

// strictDecode decodes one JSON value into v, refusing unknown fields and trailing data.
func strictDecode(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
