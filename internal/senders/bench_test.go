package senders

import "testing"

// BenchmarkInbound is the generic receiver's parsing per delivery.
func BenchmarkInbound(b *testing.B) {
	body := []byte(`{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Inbound(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInboundRich is BenchmarkInbound for a delivery with priority,
// tags, Markdown and a view action.
func BenchmarkInboundRich(b *testing.B) {
	body := []byte(`{"title":"Deploy finished","message":"api **v1.2.3** is live","severity":"info","tab":"Deploys","priority":"high",` +
		`"tags":["rocket","api"],"markdown":true,"actions":[{"type":"view","label":"Open","url":"https://ci.example.com/runs/7"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Inbound(body); err != nil {
			b.Fatal(err)
		}
	}
}
