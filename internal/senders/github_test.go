package senders

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/perch-dev/perch"
)

const (
	prURL    = "https://github.com/acme/widgets/pull/101"
	prTitle  = "Add retries to the webhook client"
	checkURL = "https://github.com/acme/widgets/actions/runs/8300113377/job/24500113377"
	delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
)

func TestGitHub(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, kind string
		want       Result
	}{
		{"pull_request.opened.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets #101 opened: " + prTitle,
			Message: "mona opened this pull request\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.ready_for_review.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets #101 ready for review: " + prTitle,
			Message: "mona marked this pull request ready for review\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.review_requested.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityWarning,
			Title:   "acme/widgets #101 review requested: " + prTitle,
			Message: "mona requested a review from hubot\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.review_requested.team.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityWarning,
			Title:   "acme/widgets #101 review requested: " + prTitle,
			Message: "mona requested a review from platform\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.closed.merged.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets #101 merged: " + prTitle,
			Message: "octocat merged this pull request\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.closed.unmerged.json", "pull_request", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets #101 closed: " + prTitle,
			Message: "mona closed this pull request without merging\nretry-client → main · by mona", URL: prURL}))},
		{"pull_request.labeled.json", "pull_request", Result{Ignored: `github pull_request action "labeled" is not subscribed`}},

		{"check_run.completed.failure.json", "check_run", events(codeEvent(perch.Event{Severity: perch.SeverityError,
			Title:   "acme/widgets: lint failure",
			Message: "GitHub Actions reported failure on retry-client at 3f9a1c2\n3 errors", URL: checkURL}))},
		{"check_run.completed.timed_out.json", "check_run", events(codeEvent(perch.Event{Severity: perch.SeverityError,
			Title:   "acme/widgets: e2e timed out",
			Message: "GitHub Actions reported timed out on retry-client at 3f9a1c2", URL: checkURL}))},
		{"check_run.completed.success.json", "check_run", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: unit tests success",
			Message: "GitHub Actions reported success on retry-client at 3f9a1c2", URL: checkURL}))},
		{"check_run.completed.cancelled.json", "check_run", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: e2e cancelled",
			Message: "GitHub Actions reported cancelled on retry-client at 3f9a1c2", URL: checkURL}))},
		{"check_run.created.json", "check_run", Result{Ignored: `github check_run action "created" is not subscribed`}},

		{"push.branch.json", "push", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: 3 commits pushed to main",
			Message: "mona pushed 3 commits to main\nLatest: Fix flaky retry test",
			URL:     "https://github.com/acme/widgets/compare/a1b2c3d4e5f6...3f9a1c2b4d5e"}))},
		{"push.forced_one_commit.json", "push", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: 1 commit force-pushed to retry-client",
			Message: "mona force-pushed 1 commit to retry-client\nLatest: Squash retry work",
			URL:     "https://github.com/acme/widgets/compare/3f9a1c2b4d5e...444444444444"}))},
		{"push.tag_created.json", "push", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: tag v1.4.0 created",
			Message: "hubot created tag v1.4.0\nLatest: Fix flaky retry test",
			URL:     "https://github.com/acme/widgets/compare/v1.4.0"}))},
		{"push.branch_deleted.json", "push", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "acme/widgets: branch retry-client deleted",
			Message: "mona deleted branch retry-client",
			URL:     "https://github.com/acme/widgets/compare/3f9a1c2b4d5e...000000000000"}))},

		// A ping says that GitHub connected the webhook, and whose it is;
		// GitHub's motto of the day (zen) is left out.
		{"ping.repository.json", "ping", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "GitHub webhook connected: acme/widgets",
			Message: "The GitHub webhook of acme/widgets (hook 498112233) reaches Perch: its pull requests, check runs and pushes will arrive here.",
			URL:     "https://github.com/acme/widgets"}))},
		{"ping.organization.json", "ping", events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
			Title:   "GitHub webhook connected: acme",
			Message: "The GitHub webhook of acme (hook 498112234) reaches Perch: its pull requests, check runs and pushes will arrive here."}))},

		{"star.created.json", "star", Result{Ignored: `github event "star" is not subscribed`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h := http.Header{}
			h.Set("X-GitHub-Event", tt.kind)
			h.Set("X-GitHub-Delivery", delivery)
			for i := range tt.want.Events {
				tt.want.Events[i].DeliveryID = delivery
			}
			got, err := GitHub(h, mustRead(t, "github/"+tt.file))
			checkResult(t, got, err, tt.want)
		})
	}
}

// GitHub can be set to post the JSON as the payload field of a form.
func TestGitHubForm(t *testing.T) {
	t.Parallel()
	body := mustRead(t, "github/pull_request.opened.json")
	form := url.Values{"payload": {string(body)}}.Encode()

	h := http.Header{}
	h.Set("X-GitHub-Event", "pull_request")
	h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	got, err := GitHub(h, []byte(form))
	checkResult(t, got, err, events(codeEvent(perch.Event{Severity: perch.SeverityInfo,
		Title:   "acme/widgets #101 opened: " + prTitle,
		Message: "mona opened this pull request\nretry-client → main · by mona", URL: prURL})))
	if string(got.Payload) != string(body) {
		t.Errorf("Payload is not the form's JSON: %.80q", got.Payload)
	}
}

func TestGitHubSparsePayloads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind, body string
		want             perch.Event
	}{
		{"pull request number only at the top", "pull_request",
			`{"action":"reopened","number":7,"pull_request":{"title":"Fix"},"repository":{"full_name":"a/b"}}`,
			perch.Event{Severity: perch.SeverityInfo, Title: "a/b #7 reopened: Fix", Message: "someone reopened this pull request"}},
		{"merged without merged_by names the sender", "pull_request",
			`{"action":"closed","pull_request":{"number":8,"title":"Ship","merged":true},"sender":{"login":"mona"}}`,
			perch.Event{Severity: perch.SeverityInfo, Title: "unknown repository #8 merged: Ship", Message: "mona merged this pull request"}},
		{"check run without conclusion or name", "check_run",
			`{"action":"completed","check_run":{"details_url":"https://ci.example.com/run/1"},"repository":{"full_name":"a/b"}}`,
			perch.Event{Severity: perch.SeverityInfo, Title: "a/b: check completed", Message: "GitHub reported completed", URL: "https://ci.example.com/run/1"}},
		{"action_required is an error", "check_run",
			`{"action":"completed","check_run":{"name":"deploy","conclusion":"action_required"},"repository":{"full_name":"a/b"}}`,
			perch.Event{Severity: perch.SeverityError, Title: "a/b: deploy action required", Message: "GitHub reported action required"}},
		{"push to an unusual ref falls back on the repository page", "push",
			`{"ref":"refs/notes/commits","commits":[{}],"sender":{"login":"mona"},"repository":{"full_name":"a/b","html_url":"https://github.com/a/b"}}`,
			perch.Event{Severity: perch.SeverityInfo, Title: "a/b: 1 commit pushed to refs/notes/commits", Message: "mona pushed 1 commit to refs/notes/commits", URL: "https://github.com/a/b"}},
		{"ping from an app hook", "ping", `{"zen":"Design for failure.","hook":{"type":"App","url":""}}`,
			perch.Event{Severity: perch.SeverityInfo, Title: "GitHub webhook connected", Message: "A GitHub webhook reaches Perch: its pull requests, check runs and pushes will arrive here."}},
		{"ping of a hook that sends nothing Perch shows", "ping",
			`{"zen":"Half measures are as bad as nothing at all.","hook_id":7,"hook":{"events":["issues","star"]},"repository":{"full_name":"a/b"}}`,
			perch.Event{Severity: perch.SeverityWarning, Title: "GitHub webhook connected: a/b",
				Message: "The GitHub webhook of a/b (hook 7) reaches Perch, but sends none of the events Perch shows: choose pull requests, check runs or pushes in its settings on GitHub."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("X-GitHub-Event", tt.kind)
			got, err := GitHub(h, []byte(tt.body))
			checkResult(t, got, err, events(codeEvent(tt.want)))
		})
	}
}

func TestGitHubBadRequest(t *testing.T) {
	t.Parallel()
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	tests := []struct {
		name    string
		kind    string
		header  http.Header
		body    string
		message string
	}{
		{"no event header", "", nil, `{"zen":"x"}`, "X-GitHub-Event header is required."},
		{"blank event header", "  ", nil, `{"zen":"x"}`, "X-GitHub-Event header is required."},
		{"not JSON", "push", nil, `payload={}`, "The body is not valid JSON."},
		{"unsubscribed kind still needs JSON", "star", nil, `{"action":`, "The body is not valid JSON."},
		{"unsubscribed kind still needs an object", "star", nil, `[]`, "The body must be a JSON object."},
		{"form without payload", "push", form, `other=1`, "The form has no payload field."},
		{"form that is not a form", "push", form, `payload=%zz`, "The body is not a valid form."},
		{"form payload that is not JSON", "push", form, `payload=hello`, "The body is not valid JSON."},
		{"pull_request event without a pull request", "pull_request", nil, `{"action":"opened"}`, "pull_request is required in a pull_request event."},
		{"pull request number is text", "pull_request", nil, `{"action":"opened","pull_request":{"number":"2"}}`, "pull_request.number must be a whole number, not a string."},
		{"merged is text", "pull_request", nil, `{"action":"closed","pull_request":{"merged":"yes"}}`, "pull_request.merged must be true or false, not a string."},
		{"completed check_run event without a check run", "check_run", nil, `{"action":"completed"}`, "check_run is required in a check_run event."},
		{"push without a ref", "push", nil, `{"commits":[]}`, "ref is required in a push event."},
		{"push commits is an object", "push", nil, `{"ref":"refs/heads/main","commits":{}}`, "commits must be an array, not an object."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h[k] = v
			}
			if tt.kind != "" {
				h.Set("X-GitHub-Event", tt.kind)
			}
			res, err := GitHub(h, []byte(tt.body))
			checkBadRequest(t, err, tt.message)
			if len(res.Events) != 0 || res.Ignored != "" {
				t.Errorf("result = %#v, want none", res)
			}
		})
	}
}
