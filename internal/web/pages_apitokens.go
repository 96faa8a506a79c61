package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// apiTokensData is what the API tokens page shows.
type apiTokensData struct {
	Tokens  []apiTokenRow
	Created string // the raw token just made, shown once
	Label   string
	// What the token just made may do and until when, said with its value.
	CreatedMay string
	// The form's choices, and which scopes were ticked when it comes back
	// with a problem.
	Expiries []expiryChoice
	Scopes   []perch.TokenScope
	Ticked   map[perch.TokenScope]bool
	Today    string // the date input's least value
}

// expiryChoice is one of the form's expiry options: "never", a number of
// days from now, or "date" for the date field's.
type expiryChoice struct {
	Value, Label string
}

var expiryChoices = []expiryChoice{
	{"never", "Never"}, {"7", "In 7 days"}, {"30", "In 30 days"}, {"90", "In 90 days"}, {"date", "On a date…"},
}

// apiTokenRow is a token as the list shows it: what it may do and when it
// ends, said in words against the server's clock.
type apiTokenRow struct {
	*perch.APIToken
	May       string // "read and send", "everything"
	Expiry    string // "never", "in 29 days", "expired"
	ExpiresOn string // when, to the minute in UTC, for the title; "" for never
	Expired   bool
}

func (d *Dashboard) tokenRows(tokens []*perch.APIToken) []apiTokenRow {
	now := d.now()
	rows := make([]apiTokenRow, len(tokens))
	for i, k := range tokens {
		rows[i] = apiTokenRow{APIToken: k, May: "everything", Expiry: "never", Expired: k.Expired(now)}
		if k.Scopes != nil {
			rows[i].May = perch.DescribeTokenScopes(k.Scopes)
		}
		if k.ExpiresAt != nil {
			rows[i].Expiry = expiresIn(k.ExpiresAt.Sub(now))
			rows[i].ExpiresOn = k.ExpiresAt.UTC().Format("2 Jan 2006, 15:04 UTC")
		}
	}
	return rows
}

// expiresIn says when something d away ends: "in 29 days", "in 5 hours",
// "in 12 minutes", or "expired".
func expiresIn(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d >= 48*time.Hour:
		return "in " + strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= 2*time.Hour:
		return "in " + strconv.Itoa(int(d/time.Hour)) + " hours"
	}
	return "in " + plural(max(1, int(d/time.Minute)), "minute", "minutes")
}

// apiTokensPage is the page's data around the user's tokens.
func (c *call) apiTokensPage(r *http.Request) (*apiTokensData, error) {
	tokens, err := c.api.APITokens(r.Context())
	if err != nil {
		return nil, err
	}
	return &apiTokensData{Tokens: c.d.tokenRows(tokens), Expiries: expiryChoices, Scopes: perch.TokenScopes,
		Ticked: map[perch.TokenScope]bool{}, Today: c.d.now().UTC().Format(time.DateOnly)}, nil
}

// APITokens lists the user's API tokens, with the form for a new one.
func (d *Dashboard) APITokens(w http.ResponseWriter, r *http.Request, c *call) error {
	data, err := c.apiTokensPage(r)
	if err != nil {
		return err
	}
	return c.page("apitokens", view{Title: "API tokens", Nav: "api-tokens", Data: data, Form: url.Values{"expiry": {"never"}}})
}

// CreateAPIToken makes a token and shows its value this once. The expiry
// is a number of days from now, or a date (the token ends at its start,
// UTC); no scope ticked is a token that may do everything.
func (d *Dashboard) CreateAPIToken(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := client.APITokenInput{Label: f.Get("label")}
	for _, s := range f["scopes"] {
		in.Scopes = append(in.Scopes, perch.TokenScope(s))
	}
	expiryErr := error(nil)
	switch e := f.Get("expiry"); e {
	case "", "never":
	case "date":
		at, err := time.Parse(time.DateOnly, f.Get("expires_on"))
		if err != nil {
			expiryErr = &perch.Error{Code: perch.EVALIDATION, Message: "Pick the date the token should expire on.",
				Fields: map[string]string{"expires_at": "pick a date"}}
		}
		in.ExpiresAt = &at
	default:
		days, err := strconv.Atoi(e)
		if err != nil || days <= 0 {
			expiryErr = &perch.Error{Code: perch.EVALIDATION, Message: "Pick when the token should expire.",
				Fields: map[string]string{"expires_at": "pick one of the choices"}}
		}
		at := d.now().Add(time.Duration(days) * 24 * time.Hour)
		in.ExpiresAt = &at
	}
	createErr := expiryErr
	var t *perch.APIToken
	var raw string
	if createErr == nil {
		t, raw, createErr = c.api.CreateLimitedAPIToken(r.Context(), in)
	}
	data, err := c.apiTokensPage(r)
	if err != nil {
		return err
	}
	v := view{Title: "API tokens", Nav: "api-tokens", Data: data, Form: url.Values{"expiry": {"never"}}}
	if createErr != nil {
		for _, s := range in.Scopes {
			data.Ticked[s] = true
		}
		return c.formError("apitokens", v, createErr)
	}
	row := d.tokenRows([]*perch.APIToken{t})[0]
	may, until := "It may "+row.May, "it expires "+row.Expiry
	if t.Scopes == nil {
		may = "It may do everything you may"
	}
	if t.ExpiresAt == nil {
		until = "it never expires"
	}
	data.Created, data.Label, data.CreatedMay = raw, t.Label, may+"; "+until+"."
	return c.page("apitokens", v)
}

// UpdateAPIToken renames a token, or turns it off or on again.
func (d *Dashboard) UpdateAPIToken(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	in := map[string]any{}
	msg := "The token is renamed."
	switch r.PostForm.Get("action") {
	case "deactivate":
		in["is_active"], msg = false, "The token is deactivated: requests with it are refused until you turn it on again."
	case "activate":
		in["is_active"], msg = true, "The token is active again."
	default:
		in["label"] = r.PostForm.Get("label")
	}
	if err := c.do(http.MethodPatch, "/api/v1/tokens/"+url.PathEscape(r.PathValue("id")), in, nil); err != nil {
		if perch.ErrorCode(err) == perch.EVALIDATION || perch.ErrorCode(err) == perch.EBADREQUEST {
			return c.redirect("/api-tokens", "Not renamed: "+perch.ErrorMessage(err)+" "+fieldsText(err))
		}
		return err
	}
	return c.redirect("/api-tokens", msg)
}

// DeleteAPIToken deletes a token for good.
func (d *Dashboard) DeleteAPIToken(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.api.DeleteAPIToken(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return c.redirect("/api-tokens", "The token is deleted.")
}
