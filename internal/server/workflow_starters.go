package server

import (
	"context"
	"time"

	"github.com/perch-dev/perch"
)

// The starter workflows: what the marketplace lists on a fresh install,
// authored by "Perch". They are seeded at every start (SeedStarters); a
// starter changed here reaches the marketplace as a new version, and copies
// installed from it see update_available.
//
// Their conditions read the payloads the receivers take:
// PagerDuty's V3 {"event": {"data": {...}}} and V2 {"messages": [...]},
// GitHub's push body, Datadog's default or custom payload. Every member is
// guarded with has(), since a sender's payload may lack any of them, and a
// payload of an unexpected shape only fails the run, which delivers the
// notification unchanged.

// starterAuthor is the organisation name the marketplace shows as the
// starters' author.
const starterAuthor = "Perch"

// Ids of the starter workflows: fixed for good, since installed copies link
// to them. Lower-case letters only, like every id of the store.
const (
	starterPagerDutyHigh   = "starterpagerdutyhighurgency"
	starterGitHubPushes    = "startergithubpushdigest"
	starterDatadogEscalate = "starterdatadogstilltriggered"
	starterForwardErrors   = "starterforwarderrors"
	starterQuietHours      = "starterquiethours"
)

// starterWorkflows answers the starter workflows, fresh values each time.
// The forward step of "Forward errors to a chat webhook" has no URL: the
// marketplace never carries one, and the installer fills it in before
// enabling the copy. Every other starter compiles as it is.
func starterWorkflows() []*perch.Workflow {
	return []*perch.Workflow{
		{
			ID:   starterPagerDutyHigh,
			Name: "Only page me for high-urgency PagerDuty incidents",
			Description: "Drops every PagerDuty notification about a low-urgency incident (triggered, acknowledged, resolved...), " +
				"so only high-urgency incidents reach you. Notifications that do not say the incident's urgency are kept.",
			Condition: `event.source == "incidents" && (
  (has(payload.event) && has(payload.event.data) && has(payload.event.data.urgency)
    && payload.event.data.urgency != "high")
  || (has(payload.messages) && size(payload.messages) > 0 && payload.messages.all(m,
    has(m.incident) && has(m.incident.urgency) && m.incident.urgency != "high"))
)`,
			Steps: []perch.Step{{Drop: &perch.DropStep{}}},
		},
		{
			ID:   starterGitHubPushes,
			Name: "Digest GitHub pushes every 15 minutes",
			Description: "Holds the notifications of pushes to GitHub and delivers one summary per repository every 15 minutes, " +
				"instead of one notification per push. Pull requests and checks still come through at once.",
			Condition: `event.source == "code-host" && has(payload.pusher) && has(payload.ref)`,
			Steps: []perch.Step{{Digest: &perch.DigestStep{
				Key:    `has(payload.repository) && has(payload.repository.full_name) ? string(payload.repository.full_name) : "pushes"`,
				Window: perch.Duration(15 * time.Minute),
			}}},
		},
		{
			ID:   starterDatadogEscalate,
			Name: "Escalate Datadog alerts that stay triggered",
			Description: "When Datadog re-notifies about a monitor that is still triggered (Re-Triggered), the notification becomes " +
				"an error titled \"Still triggered: ...\". At most one per monitor every 10 minutes; further reminders are held back.",
			Condition: `event.source == "monitoring" && (
  (has(payload.alert_transition)
    && string(payload.alert_transition).lowerAscii() in ["re-triggered", "renotify"])
  || (has(payload.title) && string(payload.title).contains("[Re-Triggered"))
)`,
			Steps: []perch.Step{
				{Throttle: &perch.ThrottleStep{
					Key: `has(payload.alert_id) ? string(payload.alert_id) : event.title`,
					Max: 1, Per: perch.Duration(10 * time.Minute),
				}},
				{Set: map[string]string{
					"severity": `"error"`,
					"title":    `"Still triggered: " + event.title`,
				}},
			},
		},
		{
			ID:   starterForwardErrors,
			Name: "Forward errors to a chat webhook",
			Description: "Posts every error notification, as signed JSON, to a webhook of yours: a chat bot, an incident tool " +
				"or a script. After installing, edit the forward step to enter its URL (and a secret to sign with), then enable the workflow.",
			Condition: `event.severity == "error"`,
			Steps:     []perch.Step{{Forward: &perch.ForwardStep{}}},
		},
		{
			ID:   starterQuietHours,
			Name: "Quiet hours: digest info notifications at night",
			Description: "Between 22:00 and 07:00 UTC, informational notifications are held and delivered as one summary per tab " +
				"each hour; warnings and errors still come through at once. To use your own time zone, change \"UTC\" " +
				"in the condition, for example to \"Europe/Berlin\".",
			Condition: `event.severity == "info" && (now.getHours("UTC") >= 22 || now.getHours("UTC") < 7)`,
			Steps: []perch.Step{{Digest: &perch.DigestStep{
				Key:    `event.tab`,
				Window: perch.Duration(time.Hour),
			}}},
		},
	}
}

// SeedStarters makes the starter workflows the marketplace's listings by
// Perch: created on a fresh install, republished when this release changed
// them, left alone otherwise. It is called at every start, on every
// instance, and is safe to call concurrently.
func (s *Server) SeedStarters(ctx context.Context) error {
	return s.seedStarters(ctx, starterWorkflows())
}

func (s *Server) seedStarters(ctx context.Context, ws []*perch.Workflow) error {
	return s.workflowDB.SeedStarterWorkflows(ctx, starterAuthor, ws)
}
