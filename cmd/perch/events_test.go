package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/perch-dev/perch/client"
)

// listenFor runs Listen until want notifications arrived, and returns their
// titles and the last id.
func listenFor(t *testing.T, c *client.Client, since string, want int, started chan<- struct{}) (titles []string, last string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := c.Listen(ctx, since, func(e client.Event) {
		switch e.Type {
		case client.EventReady:
			if started != nil {
				close(started)
				started = nil
			}
		case client.EventNotification:
			titles = append(titles, e.Notification.Title)
			last = e.Notification.ID
			if len(titles) == want {
				cancel()
			}
		}
	})
	if err != nil || len(titles) != want {
		t.Fatalf("Listen: %v after %v", err, titles)
	}
	return titles, last
}

// TestClientListensAndResumes drives the public client against perch serve:
// an event sent through a webhook token arrives live; events sent while the
// client is away arrive, exactly, when it resumes from the last id.
func TestClientListensAndResumes(t *testing.T) {
	t.Parallel()
	base := startServer(t, map[string]string{})
	ctx := context.Background()
	c := client.New(base)
	if _, err := c.Register(ctx, "Ada", "ada@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	wh, err := c.CreateWebhookToken(ctx, client.WebhookTokenInput{Label: "ci", Sender: "inbound", Scope: "user"})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan string)
	go func() {
		_, last := listenFor(t, c, "", 1, started)
		done <- last
	}()
	<-started
	if err := c.Send(ctx, wh.RawToken, client.InboundEvent{Title: "live", Severity: "warning"}); err != nil {
		t.Fatal(err)
	}
	last := <-done
	for i := range 3 {
		if err := c.Send(ctx, wh.RawToken, client.InboundEvent{Title: fmt.Sprintf("missed %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	titles, _ := listenFor(t, c, last, 3, nil)
	if fmt.Sprint(titles) != "[missed 0 missed 1 missed 2]" {
		t.Fatalf("resumed with %v", titles)
	}
}
