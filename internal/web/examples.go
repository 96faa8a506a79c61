package web

import (
	"strings"

	"github.com/perch-dev/perch"
)

// example is a delivery that each sender's receiver turns into a
// notification: what the Webhooks page offers to try with curl. The bodies
// live here only; the page shows them through tryIt, and the tests post
// what the page shows.
type example struct {
	Headers [][2]string // besides Content-Type
	Body    string      // JSON without single quotes, to sit in '…' in a shell
	// Signature is the header the sender signs with when the server has its
	// secret (PERCH_GITHUB_WEBHOOK_SECRET, PERCH_PAGERDUTY_WEBHOOK_SECRET),
	// and Prefix what goes before the hex HMAC-SHA256 of the body.
	Signature, Prefix, SecretVar string
}

// examples are the smallest deliveries each parser (internal/senders) makes
// a notification of. None carries a delivery id, so trying twice shows two.
var examples = map[string]example{
	// Inbound shows what a notification may carry besides its text: a
	// priority, tags (shortcodes show as emoji), Markdown and an action.
	// BASE_URL becomes the server's address.
	perch.SenderInbound: {
		Body: `{"title": "Hello from Perch", "message": "It **works**: tags, priority, Markdown and a button.", ` +
			`"markdown": true, "severity": "info", "priority": "high", "tags": ["tada", "test"], "tab": "Test", ` +
			`"actions": [{"type": "view", "label": "Open the feed", "url": "BASE_URL/notifications"}]}`,
	},
	perch.SenderIncidents: {
		Body: `{"event": {"event_type": "incident.triggered", "data": {"number": 1, "title": "Hello from Perch", ` +
			`"urgency": "low", "service": {"summary": "Perch test"}}}}`,
		Signature: "X-PagerDuty-Signature", Prefix: "v1=", SecretVar: "PAGERDUTY_WEBHOOK_SECRET",
	},
	perch.SenderCodeHost: {
		Headers: [][2]string{{"X-GitHub-Event", "pull_request"}},
		Body: `{"action": "opened", "repository": {"full_name": "perch/try-it"}, "sender": {"login": "perch"}, ` +
			`"pull_request": {"number": 1, "title": "Hello from Perch", "head": {"ref": "try-it"}, "base": {"ref": "main"}}}`,
		Signature: "X-Hub-Signature-256", Prefix: "sha256=", SecretVar: "GITHUB_WEBHOOK_SECRET",
	},
	perch.SenderMonitoring: {
		Body: `{"title": "[Triggered] Hello from Perch", "alert_transition": "Triggered", "alert_type": "info", "hostname": "try-it"}`,
	},
}

// tryIt is the shell command that delivers sender's example to url; with
// signed set, it signs the body with openssl as the sender would, from
// the secret in an environment variable.
func tryIt(sender, url string, signed bool) string {
	ex, ok := examples[sender]
	if !ok {
		return ""
	}
	if base, _, ok := strings.Cut(url, "/webhooks/"); ok {
		ex.Body = strings.ReplaceAll(ex.Body, "BASE_URL", base)
	}
	var b strings.Builder
	signed = signed && ex.Signature != ""
	if signed {
		b.WriteString("# The server checks signatures: put its secret in $" + ex.SecretVar + " first.\n")
		b.WriteString("body='" + ex.Body + "'\n")
		b.WriteString(`signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$` + ex.SecretVar + `" -r | cut -d' ' -f1)` + "\n")
	}
	b.WriteString("curl -w '\\n' -X POST '" + url + "' \\\n  -H 'Content-Type: application/json' \\\n")
	for _, h := range ex.Headers {
		b.WriteString("  -H '" + h[0] + ": " + h[1] + "' \\\n")
	}
	if signed {
		b.WriteString(`  -H "` + ex.Signature + ": " + ex.Prefix + `$signature" \` + "\n")
		b.WriteString(`  --data-binary "$body"`)
	} else {
		b.WriteString("  --data-binary '" + ex.Body + "'")
	}
	return b.String()
}
