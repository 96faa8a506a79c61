package senders

import (
	"cmp"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/perch-dev/perch"
)

type ghUser struct {
	Login string `json:"login"`
	Name  string `json:"name"` // apps and teams have a name, not a login
}

type ghRepo struct {
	FullName string `json:"full_name"`
	HTMLURL  string `json:"html_url"`
}

type ghPullRequest struct {
	Number   int64   `json:"number"`
	Title    string  `json:"title"`
	HTMLURL  string  `json:"html_url"`
	Merged   bool    `json:"merged"`
	User     *ghUser `json:"user"`
	MergedBy *ghUser `json:"merged_by"`
	Head     struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

type ghCheckRun struct {
	Name       string  `json:"name"`
	Conclusion string  `json:"conclusion"`
	HTMLURL    string  `json:"html_url"`
	DetailsURL string  `json:"details_url"`
	HeadSHA    string  `json:"head_sha"`
	App        *ghUser `json:"app"`
	Output     struct {
		Title string `json:"title"`
	} `json:"output"`
	CheckSuite struct {
		HeadBranch string `json:"head_branch"`
	} `json:"check_suite"`
}

// ghPayload holds the fields Perch reads from the event kinds it subscribes
// to; each kind fills its own part.
type ghPayload struct {
	Action       string  `json:"action"`
	Repository   *ghRepo `json:"repository"`
	Organization *ghUser `json:"organization"`
	Sender       *ghUser `json:"sender"`

	// pull_request
	Number            int64          `json:"number"`
	PullRequest       *ghPullRequest `json:"pull_request"`
	RequestedReviewer *ghUser        `json:"requested_reviewer"`
	RequestedTeam     *ghUser        `json:"requested_team"`

	// check_run
	CheckRun *ghCheckRun `json:"check_run"`

	// push
	Ref        string     `json:"ref"`
	Compare    string     `json:"compare"`
	Created    bool       `json:"created"`
	Deleted    bool       `json:"deleted"`
	Forced     bool       `json:"forced"`
	Commits    []struct{} `json:"commits"`
	Pusher     *ghUser    `json:"pusher"`
	HeadCommit *struct {
		Message string `json:"message"`
	} `json:"head_commit"`

	// ping. Its zen (a motto GitHub picks at random) is not shown: read
	// beside the message, it passed for part of it.
	HookID int64 `json:"hook_id"`
	Hook   *struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
	} `json:"hook"`
}

// GitHub parses a GitHub webhook delivery. The event kind comes from the
// X-GitHub-Event header and the delivery id from X-GitHub-Delivery; the body
// is JSON, or a form with the JSON in its payload field when the webhook is
// configured with Content-Type application/x-www-form-urlencoded.
//
// pull_request (opened, reopened, ready_for_review, review_requested, closed),
// check_run completed, push and ping become notifications in the Code tab;
// other kinds and actions are Ignored. It returns a perch.EBADREQUEST error
// when the header is missing or the body cannot be read.
func GitHub(h http.Header, body []byte) (Result, error) {
	kind := strings.TrimSpace(h.Get("X-GitHub-Event"))
	if kind == "" {
		return Result{}, badRequest("X-GitHub-Event header is required.")
	}
	body, err := githubJSON(h, body)
	if err != nil {
		return Result{}, err
	}
	parse, subscribed := githubKinds[kind]
	if !subscribed {
		// Another kind's fields are not ours to type-check; the body only
		// has to be a JSON object.
		var obj map[string]json.RawMessage
		if err := perch.DecodeObject(body, &obj); err != nil {
			return Result{}, err
		}
		return ignored("github event %q is not subscribed", perch.Clip(perch.OneLine(kind), 60)), nil
	}
	var p ghPayload
	if err := perch.DecodeObject(body, &p); err != nil {
		return Result{}, err
	}
	e, err := parse(&p)
	if err != nil {
		return Result{}, err
	}
	if e == nil {
		return ignored("github %s action %q is not subscribed", kind, perch.Clip(perch.OneLine(p.Action), 60)), nil
	}
	e.Tab, e.Source = perch.TabCode, perch.SourceCodeHost
	e.DeliveryID = deliveryID(h.Get("X-GitHub-Delivery"))
	return Result{Events: []perch.Event{*e}, Payload: body}, nil
}

// githubKinds are the event kinds Perch subscribes to. A parser returns nil
// for an action of its kind that Perch does not show.
var githubKinds = map[string]func(*ghPayload) (*perch.Event, error){
	"pull_request": githubPullRequest,
	"check_run":    githubCheckRun,
	"push":         githubPush,
	"ping":         githubPing,
}

// githubJSON returns the JSON document of a delivery, unwrapping the payload
// field of a form-encoded one.
func githubJSON(h http.Header, body []byte) ([]byte, error) {
	mediaType, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mediaType != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, badRequest("The body is not a valid form.")
	}
	if !form.Has("payload") {
		return nil, badRequest("The form has no payload field.")
	}
	return []byte(form.Get("payload")), nil
}

func githubPullRequest(p *ghPayload) (*perch.Event, error) {
	pr := p.PullRequest
	if pr == nil {
		return nil, badRequest("pull_request is required in a pull_request event.")
	}
	prName := repoName(p)
	if number := cmp.Or(pr.Number, p.Number); number > 0 {
		prName += fmt.Sprintf(" #%d", number)
	}

	var verb, severity, what string
	actor := login(p.Sender, pr.User)
	switch p.Action {
	case "opened", "reopened":
		verb, severity = p.Action, perch.SeverityInfo
		what = fmt.Sprintf("%s %s this pull request", actor, p.Action)
	case "ready_for_review":
		verb, severity = "ready for review", perch.SeverityInfo
		what = actor + " marked this pull request ready for review"
	case "review_requested":
		verb, severity = "review requested", perch.SeverityWarning
		what = fmt.Sprintf("%s requested a review from %s", actor, login(p.RequestedReviewer, p.RequestedTeam))
	case "closed":
		// GitHub says "closed" for both; only merged tells them apart.
		verb, severity = "closed", perch.SeverityInfo
		what = actor + " closed this pull request without merging"
		if pr.Merged {
			verb = "merged"
			what = login(pr.MergedBy, p.Sender) + " merged this pull request"
		}
	default:
		return nil, nil
	}
	// The second line says what is merged where, and whose work it is.
	var branches, author string
	if head, base := perch.OneLine(pr.Head.Ref), perch.OneLine(pr.Base.Ref); head != "" && base != "" {
		branches = head + " → " + base
	}
	if pr.User != nil {
		author = "by " + login(pr.User)
	}
	return &perch.Event{
		Severity: severity,
		Title:    title(fmt.Sprintf("%s %s: %s", prName, verb, perch.OneLine(pr.Title))),
		Message:  message(what, strings.Join(nonEmpty(branches, author), " · ")),
		URL:      webURL(pr.HTMLURL),
	}, nil
}

func githubCheckRun(p *ghPayload) (*perch.Event, error) {
	if p.Action != "completed" {
		return nil, nil
	}
	cr := p.CheckRun
	if cr == nil {
		return nil, badRequest("check_run is required in a check_run event.")
	}
	severity := perch.SeverityInfo
	switch cr.Conclusion {
	case "failure", "timed_out", "action_required":
		severity = perch.SeverityError
	}
	conclusion := perch.FirstNonEmpty(strings.ReplaceAll(perch.OneLine(cr.Conclusion), "_", " "), "completed")
	name := perch.FirstNonEmpty(perch.OneLine(cr.Name), "check")

	where := ""
	if branch := perch.OneLine(cr.CheckSuite.HeadBranch); branch != "" {
		where = " on " + branch
	}
	if sha := perch.OneLine(cr.HeadSHA); sha != "" {
		where += " at " + perch.Truncate(sha, 7)
	}
	reporter := "GitHub"
	if cr.App != nil {
		reporter = perch.FirstNonEmpty(perch.OneLine(cr.App.Name), reporter)
	}
	return &perch.Event{
		Severity: severity,
		Title:    title(fmt.Sprintf("%s: %s %s", repoName(p), name, conclusion)),
		Message:  message(fmt.Sprintf("%s reported %s%s", reporter, conclusion, where), perch.OneLine(cr.Output.Title)),
		URL:      webURL(perch.FirstNonEmpty(cr.HTMLURL, cr.DetailsURL)),
	}, nil
}

func githubPush(p *ghPayload) (*perch.Event, error) {
	ref := perch.OneLine(p.Ref)
	if ref == "" {
		return nil, badRequest("ref is required in a push event.")
	}
	kind, short := "branch", ref
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		short = b
	} else if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		kind, short = "tag", t
	} else {
		kind = "ref"
	}
	if short == "" {
		short = ref
	}

	pusher := login(p.Pusher, p.Sender)
	n := len(p.Commits)
	var headline, what string
	switch {
	case p.Deleted:
		headline = fmt.Sprintf("%s %s deleted", kind, short)
		what = fmt.Sprintf("%s deleted %s %s", pusher, kind, short)
	case p.Created:
		headline = fmt.Sprintf("%s %s created", kind, short)
		what = fmt.Sprintf("%s created %s %s", pusher, kind, short)
		if n > 0 {
			what += " with " + plural(n, "commit")
		}
	default:
		verb := "pushed"
		if p.Forced {
			verb = "force-pushed"
		}
		headline = fmt.Sprintf("%s %s to %s", plural(n, "commit"), verb, short)
		what = fmt.Sprintf("%s %s %s to %s", pusher, verb, plural(n, "commit"), short)
	}
	latest := ""
	if p.HeadCommit != nil && !p.Deleted {
		if first, _, _ := strings.Cut(strings.TrimSpace(p.HeadCommit.Message), "\n"); perch.OneLine(first) != "" {
			latest = "Latest: " + perch.OneLine(first)
		}
	}
	repoURL := ""
	if p.Repository != nil {
		repoURL = p.Repository.HTMLURL
	}
	return &perch.Event{
		Severity: perch.SeverityInfo,
		Title:    title(fmt.Sprintf("%s: %s", repoName(p), headline)),
		Message:  message(what, latest),
		URL:      webURL(perch.FirstNonEmpty(p.Compare, repoURL)),
	}, nil
}

// githubPing is GitHub's test delivery, sent once when a webhook is made:
// the notification says that the webhook reaches Perch, whose hook it is,
// and whether it sends any event Perch shows.
func githubPing(p *ghPayload) (*perch.Event, error) {
	target, link := "", ""
	if p.Repository != nil {
		target, link = perch.OneLine(p.Repository.FullName), p.Repository.HTMLURL
	}
	var events []string
	if p.Hook != nil {
		events = p.Hook.Events
		// An organisation or app hook's ping has no repository; its hook
		// URL still says whose hook it is.
		if target == "" {
			target = hookOwner(p.Hook.URL)
		}
	}
	if target == "" && p.Organization != nil {
		target = perch.OneLine(p.Organization.Login)
	}
	hook := "A GitHub webhook"
	if target != "" {
		hook = "The GitHub webhook of " + target
	}
	if p.HookID > 0 {
		hook += fmt.Sprintf(" (hook %d)", p.HookID)
	}
	e := &perch.Event{Severity: perch.SeverityInfo, Title: "GitHub webhook connected", URL: webURL(link)}
	if target != "" {
		e.Title += ": " + target
	}
	e.Title = title(e.Title)
	if sendsShownEvents(events) {
		e.Message = message(hook + " reaches Perch: its pull requests, check runs and pushes will arrive here.")
	} else {
		e.Severity = perch.SeverityWarning
		e.Message = message(hook + " reaches Perch, but sends none of the events Perch shows: choose pull requests, check runs or pushes in its settings on GitHub.")
	}
	return e, nil
}

// sendsShownEvents reports whether a hook subscribed to any event Perch
// shows; a ping that does not list them is given the benefit of the doubt.
func sendsShownEvents(events []string) bool {
	if len(events) == 0 {
		return true
	}
	for _, ev := range events {
		switch ev {
		case "*", "pull_request", "check_run", "push": // githubKinds, but for ping
			return true
		}
	}
	return false
}

// hookOwner reads "owner/repo" or "org" from a hook's API URL, such as
// https://api.github.com/repos/owner/repo/hooks/1 or .../orgs/org/hooks/1.
func hookOwner(hookURL string) string {
	u, err := url.Parse(hookURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 4 && parts[0] == "repos" && parts[3] == "hooks":
		return perch.OneLine(parts[1] + "/" + parts[2])
	case len(parts) >= 3 && parts[0] == "orgs" && parts[2] == "hooks":
		return perch.OneLine(parts[1])
	}
	return ""
}

// repoName is the repository's full name, "owner/name".
func repoName(p *ghPayload) string {
	if p.Repository != nil {
		if n := perch.OneLine(p.Repository.FullName); n != "" {
			return n
		}
	}
	return "unknown repository"
}

// login returns the first known name among users, or "someone".
func login(users ...*ghUser) string {
	for _, u := range users {
		if u != nil {
			if n := perch.FirstNonEmpty(perch.OneLine(u.Login), perch.OneLine(u.Name)); n != "" {
				return n
			}
		}
	}
	return "someone"
}

// plural renders "1 commit" or "3 commits".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
