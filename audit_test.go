package perch_test

import (
	"reflect"
	"testing"

	"github.com/perch-dev/perch"
)

func TestRedactChangesHidesSecretsAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	const random = "tq3x7kd2m5pz4wybv6hnrj2cgf"
	in := map[string]any{
		"label":          "laptop",
		"token_prefix":   "pat_abcdefgh",
		"password":       "hunter2hunter2",
		"new_password":   "",
		"password_set":   true,
		"raw_token":      "whatever",
		"client_secret":  "s3cret",
		"user_code":      "ABCD-EFGH",
		"confirmed":      true,
		"role":           map[string]any{"from": "member", "to": "admin"},
		"url":            "https://perch.test/webhooks/inbound?token=whk_" + random,
		"pasted":         "pat_" + random,
		"nested":         map[string]any{"refresh": "prf_" + random, "session_hash": "deadbeef", "name": "Ops"},
		"list":           []any{"inv_" + random, "plain"},
		"strings":        []string{"see scim_" + random + " here", "ok"},
		"sessions_ended": 2,
	}
	want := map[string]any{
		"label":          "laptop",
		"token_prefix":   "pat_abcdefgh",
		"password":       perch.Redacted,
		"new_password":   "",
		"password_set":   true,
		"raw_token":      perch.Redacted,
		"client_secret":  perch.Redacted,
		"user_code":      perch.Redacted,
		"confirmed":      true,
		"role":           map[string]any{"from": "member", "to": "admin"},
		"url":            "https://perch.test/webhooks/inbound?token=whk_" + perch.Redacted,
		"pasted":         "pat_" + perch.Redacted,
		"nested":         map[string]any{"refresh": "prf_" + perch.Redacted, "session_hash": perch.Redacted, "name": "Ops"},
		"list":           []any{"inv_" + perch.Redacted, "plain"},
		"strings":        []any{"see scim_" + perch.Redacted + " here", "ok"},
		"sessions_ended": 2,
	}
	if got := perch.RedactChanges(in); !reflect.DeepEqual(got, want) {
		t.Errorf("RedactChanges:\n got %v\nwant %v", got, want)
	}
	if perch.RedactChanges(nil) != nil || perch.RedactChanges(map[string]any{}) != nil {
		t.Error("no changes should stay none")
	}
}
