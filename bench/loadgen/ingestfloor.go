package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	perchfanout "github.com/perch-dev/perch/internal/fanout"
	"github.com/perch-dev/perch/internal/ingest"
	"github.com/perch-dev/perch/internal/store"
)

// The ingest floor: the least a server can do for what Perch's receiver
// promises (the delivery is parsed and stored durably in the same SQLite,
// in the same table, before the 200 that carries its id), with none of the
// rest (no token, no limits, no workflows, no subscribed client, no
// metrics, no middleware). It stores through Perch's own store and
// group-commit writer, so it batches as Perch does and follows it when
// either changes; its fan-out has no subscriber. wrk against it shows how
// near the embedded database lets ingest come to the trivial handler on
// this machine.

type floorEvent struct {
	Title, Message, Severity, Tab string
}

// ingestFloor serves the floor on addr with its database in path: a
// SQLite file, or a postgres:// URL (ingestFloorPostgres, unless
// perchWriter asks for Perch's store and writer there too).
func ingestFloor(addr, path string, perchWriter bool) error {
	if !perchWriter && (strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")) {
		return ingestFloorPostgres(addr, path)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	if err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		return fmt.Errorf("ingest floor schema: %w", err)
	}
	writer := ingest.New(st, perchfanout.NewLocal(), slog.New(slog.DiscardHandler))
	go writer.Run(ctx)
	return serveFloor(addr, func(ctx context.Context, e floorEvent) (string, error) {
		stored, err := writer.Write(ctx, store.NewNotification{Notification: perch.Notification{
			Title: e.Title, Message: e.Message, Severity: e.Severity, Tab: e.Tab, Source: "inbound",
			Scope: perch.Scope{Type: perch.ScopeOrg, ID: "floor"}}})
		if err != nil {
			return "", err
		}
		return stored[0].Notification.ID, nil
	})
}

// serveFloor serves a floor on addr: each POST is parsed and handed to
// store, and answered with the id it was stored under.
func serveFloor(addr string, store func(context.Context, floorEvent) (string, error)) error {
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var e floorEvent
		if err == nil {
			err = json.Unmarshal(body, &e)
		}
		if err != nil || e.Title == "" {
			http.Error(w, `{"error":"bad delivery"}`, http.StatusBadRequest)
			return
		}
		if e.Severity == "" {
			e.Severity = "info"
		}
		id, err := store(r.Context(), e)
		if err != nil {
			http.Error(w, `{"error":"not stored"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"received":true,"ids":["`+id+`"]}`)
	}))
}
