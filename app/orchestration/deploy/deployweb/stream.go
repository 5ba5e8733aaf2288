package deployweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Stream follows an operation over server-sent events: "state" carries the status, progress
// and resource table whenever they change, "log" the new log lines, and "end" closes the
// stream once the operation has ended. It subscribes before it reads, so no change is lost
// between the page's first render and the stream.
//
// Whenever it wakes, and at least every h.recheck, the stream resolves its session or token
// again and reads as the principal that stands for now. When the session has ended (signed
// out, expired) or the viewer may no longer see the operation (their membership of its tenant
// removed), "closed" carries a notice saying so and "end" closes the stream: the page keeps
// the last state it showed, and nothing more reaches it.
func (h *Handlers) Stream(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if _, err := h.svc.Operation(ctx, actor, id); err != nil {
		return err
	}
	// A browser that reconnects says which line it saw last; the page's URL says which lines
	// the page came with.
	after, _ := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if last, err := strconv.ParseInt(c.Request().Header.Get("Last-Event-ID"), 10, 64); err == nil {
		after = last
	}
	wake, stop := h.hub.Subscribe(id.String())
	defer stop()

	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // a buffering proxy would hold the events back
	w.WriteHeader(http.StatusOK)
	csrf, recheck := web.CSRF(c), web.RecheckOf(c)
	var sent string
	for first := true; ; first = false {
		if !first && recheck != nil {
			fresh, err := recheck(ctx)
			if errors.Is(err, problem.ErrUnauthenticated) {
				return closed(ctx, w, after, StreamClosed{SignIn: "/login?next=" + url.QueryEscape("/operations/"+id.String())})
			}
			if err != nil {
				return nil // the client reconnects, and is checked again
			}
			actor = fresh
			web.SetPrincipal(c, actor, csrf) // what the live view offers follows the new roles
		}
		d, err := h.svc.Detail(ctx, actor, id)
		if errors.Is(err, problem.ErrNotFound) {
			return closed(ctx, w, after, StreamClosed{})
		}
		if err != nil {
			return nil // the headers are out; the client reconnects
		}
		dep, err := h.svc.Peek(ctx, actor, d.DeploymentID) // no secret needs opening here
		if err != nil {
			return nil
		}
		live, err := h.live(c, d, dep, csrf)
		if err != nil {
			return nil
		}
		var buf bytes.Buffer
		if err := OperationLive(live).Render(ctx, &buf); err != nil {
			return nil
		}
		if state := buf.String(); state != sent {
			event(w, "state", after, state)
			sent = state
		}
		for {
			lines, err := h.svc.Logs(ctx, actor, id, after)
			if err != nil || len(lines) == 0 {
				break
			}
			buf.Reset()
			rows := make([]LogRow, len(lines))
			for i, l := range lines {
				rows[i] = LogRow{ID: l.ID, Line: l.Line}
			}
			if err := LogLines(rows).Render(ctx, &buf); err != nil {
				return nil
			}
			after = lines[len(lines)-1].ID
			event(w, "log", after, buf.String())
		}
		if d.Status.Ended() {
			event(w, "end", after, "")
			return nil
		}
		w.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-h.done:
			return nil // the server is stopping: the browser reconnects to another
		case <-wake:
			// Changes come in bursts (a step and its log lines): one read for the burst.
			sleep(ctx, 100*time.Millisecond)
		case <-time.After(h.recheck):
			// Read again now and then: a notification lost while the listener reconnected,
			// a proxy that closes idle streams, and a session ended or a membership removed
			// (which notify no one) all cost no more than this.
		}
	}
}

// closed tells the page why the stream stops, then stops it.
func closed(ctx context.Context, w *echo.Response, lastLog int64, why StreamClosed) error {
	var buf bytes.Buffer
	if err := OperationStreamClosed(why).Render(ctx, &buf); err == nil {
		event(w, "closed", lastLog, buf.String())
	}
	event(w, "end", lastLog, "")
	return nil
}

// event writes one server-sent event with the id of the last log line sent, which a
// reconnecting browser sends back. Every line of data goes on a data: line of its own; a
// carriage return ends a line in this format too, so it becomes a line break.
func event(w *echo.Response, name string, lastLog int64, data string) {
	fmt.Fprintf(w, "event: %s\nid: %d\n", name, lastLog)
	data = strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
	for _, l := range strings.Split(data, "\n") {
		fmt.Fprintf(w, "data: %s\n", l)
	}
	fmt.Fprint(w, "\n")
	w.Flush()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
