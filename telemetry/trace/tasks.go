package trace

import (
	"context"
	"sync"

	oteltrace "go.opentelemetry.io/otel/trace"
)

// maxTasks bounds the tasks whose span contexts are kept for links; beyond it the
// oldest entries go (a task's later requests then carry no link).
const maxTasks = 16384

type taskSpans struct {
	created, run oteltrace.SpanContext
}

// taskLinks keeps, per task, the span contexts of its creation and its run.
type taskLinks struct {
	mu    sync.Mutex
	ids   map[string]*taskSpans
	order []string // insertion order, for dropping the oldest
}

func (l *taskLinks) entry(id string) *taskSpans {
	e := l.ids[id]
	if e == nil {
		if len(l.order) >= maxTasks {
			delete(l.ids, l.order[0])
			l.order = l.order[1:]
		}
		e = &taskSpans{}
		l.ids[id] = e
		l.order = append(l.order, id)
	}
	return e
}

// TaskCreated records that the request span in ctx created task id.
func (t *Tracer) TaskCreated(ctx context.Context, id string) {
	sc := oteltrace.SpanContextFromContext(ctx)
	if t == nil || !sc.IsSampled() {
		return
	}
	t.tasks.mu.Lock()
	t.tasks.entry(id).created = sc
	t.tasks.mu.Unlock()
}

// StartTaskRun starts the span of task id's run under parent (the span context of
// the request that created it, or an invalid one), linked to its creation. The
// returned context carries only the span: a task runs detached from its request.
func (t *Tracer) StartTaskRun(ctx context.Context, parent oteltrace.SpanContext, id, tool string) (context.Context, *Span) {
	if t == nil || !parent.IsSampled() {
		return ctx, nil
	}
	span := t.newSpan(parent, spanTaskRun, tool)
	span.links = []oteltrace.SpanContext{parent}
	t.tasks.mu.Lock()
	e := t.tasks.entry(id)
	e.run = span.sc
	if !e.created.IsValid() {
		e.created = parent
	}
	t.tasks.mu.Unlock()
	return oteltrace.ContextWithSpan(ctx, span), span
}

// LinkTask links span (a tasks/* request's) to task id's creation and run.
func (t *Tracer) LinkTask(span *Span, id string) {
	if t == nil || span == nil {
		return
	}
	t.tasks.mu.Lock()
	e := t.tasks.ids[id]
	var c, r oteltrace.SpanContext
	if e != nil {
		c, r = e.created, e.run
	}
	t.tasks.mu.Unlock()
	if c.IsValid() {
		span.links = append(span.links, c)
	}
	if r.IsValid() {
		span.links = append(span.links, r)
	}
}
