package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// maxStdinBody bounds the JSON body send reads from stdin; the server takes
// no more than 1 MiB either.
const maxStdinBody = 1 << 20

// eventShape is the JSON body send takes on stdin, for its messages.
const eventShape = `{"title", "message", "tab", "severity", "url", "priority", "tags", "icon", "markdown", "actions"}`

// send delivers one notification through the generic receiver with a
// webhook token, which decides who gets it. It needs a server address but
// no sign-in: scripts and CI jobs send with a token alone.
func (c *cli) send(ctx context.Context, args []string) error {
	fs := c.flags("send", "perch send [--server URL] [--token whk_…] --title T [--message M] [--tab T] [--severity S] [--url U]\n"+
		"           [--priority P] [--tag T]… [--icon URL] [--markdown] [--action 'view, Label, URL']…\n"+
		"       echo '{\"title\": \"…\"}' | perch send [--server URL] [--token whk_…]")
	serverFlag := fs.String("server", "", "server to send to (default: PERCH_SERVER, then the default sign-in's server)")
	token := fs.String("token", "", "webhook token (whk_…) for the inbound receiver (default: PERCH_WEBHOOK_TOKEN)")
	title := fs.String("title", "", "title (required, unless a JSON body comes on stdin)")
	msg := fs.String("message", "", "message")
	tab := fs.String("tab", "", `tab (the server's default: "Inbound")`)
	severity := fs.String("severity", "", "info, warning or error (the server's default: info)")
	link := fs.String("url", "", "an http(s) link to what the notification is about; the menu bar and dashboard open it")
	priority := fs.String("priority", "", "1–5 or min, low, default, high, urgent (the server's default: high for an error, else default)")
	var tags, actions repeated
	fs.Var(&tags, "tag", "a tag, such as warning or rotating_light (shown as emoji); repeat for more, at most 5")
	icon := fs.String("icon", "", "an https link to an icon")
	markdown := fs.Bool("markdown", false, "the message is Markdown")
	fs.Var(&actions, "action", "a button: 'view, Label, URL' or 'http, Label, URL[, method=PUT][, header.Name=value][, body=…]'; repeat for more, at most 3")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *token == "" {
		*token = c.getenv("PERCH_WEBHOOK_TOKEN")
	}
	if *token == "" {
		return fmt.Errorf("a webhook token is required: pass --token %s… or set PERCH_WEBHOOK_TOKEN (make one on the dashboard's Webhook tokens page, for the inbound receiver)", perch.WebhookTokenPrefix)
	}
	st, err := c.store()
	if err != nil {
		return err
	}
	server, err := c.serverURL(st, *serverFlag)
	if err != nil {
		return err
	}

	var e client.InboundEvent
	if *title == "" && c.stdin != nil && !isTerminal(c.stdin) {
		if e, err = readEvent(c.stdin); err != nil {
			return err
		}
	}
	// Flags given on the command line win over the body's members, so a
	// script can pipe a template and vary one field.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "title":
			e.Title = *title
		case "message":
			e.Message = *msg
		case "tab":
			e.Tab = *tab
		case "severity":
			e.Severity = *severity
		case "url":
			e.URL = *link
		case "priority":
			e.Priority = *priority
		case "tag":
			e.Tags = tags
		case "icon":
			e.Icon = *icon
		case "markdown":
			e.Markdown = *markdown
		}
	})
	if len(actions) > 0 {
		e.Actions = nil
		for _, spec := range actions {
			a, err := parseAction(spec)
			if err != nil {
				return err
			}
			e.Actions = append(e.Actions, a)
		}
	}
	if strings.TrimSpace(e.Title) == "" {
		return errors.New("a title is required: pass --title, or pipe a JSON body " + eventShape + " into stdin")
	}

	receipt, err := client.New(server, c.clientOpts...).Deliver(ctx, *token, e)
	if err != nil {
		return plain(err)
	}
	if receipt.Ignored != "" {
		fmt.Fprintf(c.stderr, "the server stored nothing: %s\n", receipt.Ignored)
	}
	for _, id := range receipt.IDs {
		fmt.Fprintln(c.stdout, id)
	}
	return nil
}

// readEvent reads the JSON body {title, message, tab, severity} from r.
func readEvent(r io.Reader) (client.InboundEvent, error) {
	var e client.InboundEvent
	b, err := io.ReadAll(io.LimitReader(r, maxStdinBody+1))
	if err != nil {
		return e, fmt.Errorf("reading stdin: %w", err)
	}
	if len(b) > maxStdinBody {
		return e, fmt.Errorf("the JSON body on stdin is over %d bytes", maxStdinBody)
	}
	if strings.TrimSpace(string(b)) == "" {
		return e, errors.New("stdin is empty: pipe a JSON body " + eventShape + " into it, or pass --title")
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("the body on stdin is not a JSON object %s: %v", eventShape, err)
	}
	return e, nil
}

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// parseAction reads an --action: "type, label, url" and then, for an
// http action, "method=…", "header.Name=value" and "body=…" (the body
// last, so that it may hold commas), as ntfy's short form has them.
func parseAction(spec string) (client.InboundAction, error) {
	parts := strings.SplitN(spec, ",", 4)
	usage := fmt.Errorf("--action %q: want 'view, Label, URL' or 'http, Label, URL[, method=PUT][, header.Name=value][, body=…]'", spec)
	if len(parts) < 3 {
		return client.InboundAction{}, usage
	}
	a := client.InboundAction{Type: strings.TrimSpace(parts[0]), Label: strings.TrimSpace(parts[1]), URL: strings.TrimSpace(parts[2])}
	if len(parts) == 4 {
		rest := strings.TrimSpace(parts[3])
		for rest != "" {
			if body, ok := strings.CutPrefix(rest, "body="); ok {
				a.Body = body
				break
			}
			opt, more, _ := strings.Cut(rest, ",")
			rest = strings.TrimSpace(more)
			key, value, ok := strings.Cut(strings.TrimSpace(opt), "=")
			switch name, isHeader := strings.CutPrefix(key, "header."); {
			case !ok:
				return a, usage
			case key == "method":
				a.Method = value
			case isHeader && name != "":
				if a.Headers == nil {
					a.Headers = map[string]string{}
				}
				a.Headers[name] = value
			default:
				return a, fmt.Errorf("--action %q: unknown option %q (method=, header.Name=, body=)", spec, key)
			}
		}
	}
	return a, nil
}
