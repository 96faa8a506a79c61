package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

// A receiver's answer is the same bytes whether writeReceipt appends it
// itself or hands it to encoding/json.
func TestReceiptEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rc    receipt
		plain bool // written without encoding/json
	}{
		{"stored", receipt{Received: true, IDs: []string{"k2j4m5n6p7q8r9s0t1u2"}}, true},
		{"several, all redelivered", receipt{Received: true, IDs: []string{"a1", "B-2", "c_3"}, Duplicate: true}, true},
		{"withheld by workflows", receipt{Received: true, IDs: []string{"a1"}, Withheld: 3}, true},
		{"all withheld", receipt{Received: true, IDs: []string{}, Withheld: 2}, true},
		{"nothing stored", receipt{Received: true}, true},
		{"ignored", receipt{Received: true, Ignored: "ping is not an event Perch acts on."}, false},
		{"an id that needs escaping", receipt{Received: true, IDs: []string{`a"b`}}, false},
		{"an id that encoding/json escapes for HTML", receipt{Received: true, IDs: []string{"a<b&c>"}}, false},
		{"a non-ASCII id", receipt{Received: true, IDs: []string{"é"}}, false},
		{"scheduled for later", receipt{Received: true, IDs: []string{"a1"}, Scheduled: []scheduledReceipt{{ID: "s1", DeliverAt: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(tc.rc); err != nil {
				t.Fatal(err)
			}
			if _, plain := tc.rc.appendPlain(nil); plain != tc.plain {
				t.Errorf("appended by hand: %v, want %v", plain, tc.plain)
			}
			rec := httptest.NewRecorder()
			writeReceipt(rec, tc.rc)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
				t.Errorf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			if got := rec.Body.String(); got != want.String() {
				t.Errorf("body %q\nwant %q", got, want.String())
			}
		})
	}
}
