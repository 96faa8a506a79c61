package web

import (
	"strings"
	"testing"
)

func TestMarkdownHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string // in the HTML
		not       []string // never in it
	}{
		{"emphasis", "Deploy **failed** on _api-1_", []string{"<strong>failed</strong>", "<em>api-1</em>"}, nil},
		{"link", "[runbook](https://runbooks.example.com/db)", []string{`<a href="https://runbooks.example.com/db" rel="nofollow noreferrer noopener" target="_blank">runbook</a>`}, nil},
		{"bare link", "see https://status.example.com now", []string{`<a href="https://status.example.com"`}, nil},
		{"mailto", "[ops](mailto:ops@example.com)", []string{`href="mailto:ops@example.com"`}, nil},
		{"javascript link is text", "[click](javascript:alert(1))", []string{"click"}, []string{"<a", "javascript"}},
		{"data link is text", "[x](data:text/html;base64,PHNjcmlwdD4=)", []string{"x"}, []string{"<a", "data:"}},
		{"relative link is text", "[home](/admin)", []string{"home"}, []string{"<a"}},
		{"raw script block is text", "<script>alert(1)</script>", []string{"&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script"}},
		{"raw inline html is text", "a <b onclick=x>b</b>", []string{"&lt;b onclick=x&gt;b&lt;/b&gt;"}, []string{"<b "}},
		{"image is a link", "![graph](https://grafana.example.com/p.png)", []string{`<a href="https://grafana.example.com/p.png"`, "graph</a>"}, []string{"<img"}},
		{"code", "run `perch act 12 a1`\n\n```sh\nperch listen\n```", []string{"<code>perch act 12 a1</code>", `<code class="language-sh">perch listen`}, nil},
		{"list and table", "- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |", []string{"<li>one</li>", "<td>1</td>"}, nil},
		{"line breaks kept", "first\nsecond", []string{"first<br>"}, nil},
		{"no styles", "<span style=\"color:red\">x</span>", nil, []string{"<span"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(markdownHTML(tt.src))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q → %s\nwant it to hold %s", tt.src, got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q → %s\nholds %s", tt.src, got, n)
				}
			}
		})
	}
}
