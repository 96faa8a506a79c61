package tray

import "testing"

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct{ md, want string }{
		{"Deploy **failed** on _api-1_", "Deploy failed on api-1"},
		{"# Disk full\n\nOn `db-1`: 91%", "Disk full\nOn db-1: 91%"},
		{"See [the runbook](https://runbooks.example.com/db) now", "See the runbook now"},
		{"Graph: ![p95 latency](https://grafana.example.com/p.png)", "Graph: p95 latency"},
		{"<https://status.example.com>", "https://status.example.com"},
		{"- api-1\n- api-2\n\n1. first\n2. second", "• api-1\n• api-2\n• first\n• second"},
		{"> quoted **text**", "quoted text"},
		{"~~old~~ new", "old new"},
		{"first line\nsecond line", "first line\nsecond line"},
		{"```\nperch listen\n```", "perch listen"},
		{"a <b>raw</b> tag", "a <b>raw</b> tag"},
		{"---\nafter the rule", "after the rule"},
		{"| host | state |\n|---|---|\n| db-1 | down |", "host · state\ndb-1 · down"},
		{`not \*emphasis\*`, "not *emphasis*"},
		{"snake_case_name stays", "snake_case_name stays"},
		{"plain text", "plain text"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := PlainText(tt.md); got != tt.want {
			t.Errorf("PlainText(%q) = %q, want %q", tt.md, got, tt.want)
		}
	}
}
