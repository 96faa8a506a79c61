package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perch-dev/perch/internal/store"
)

// The PostgreSQL ingest floor: the least a receiver can do on PostgreSQL
// for what Perch's promises (each delivery parsed and stored durably, in
// the notifications table Perch's own migrations make, before the 200
// that carries its id), and by group commit, as Perch's writer stores.
// Unlike the SQLite floor it does not go through Perch's store and writer:
// one goroutine takes every delivery waiting, stores them with one
// statement that is its own transaction (an INSERT … SELECT FROM unnest
// of the batch's columns, RETURNING the ids, prepared once) on one
// connection, and answers each. No order lock, no BEGIN and COMMIT of
// their own, no jobs, no read back: what Perch's writer adds to that (the
// advisory lock that keeps ids visible in order across instances, the
// statements in chunks, the transaction) is part of what the ratio
// against this floor measures.

// floorBatch is the most deliveries one statement stores.
const floorBatch = 512

type pgDelivery struct {
	e    floorEvent
	done chan pgStored
}

type pgStored struct {
	id  int64
	err error
}

const floorInsert = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at)
SELECT 'org', 'floor', tab, title, message, severity, 'inbound', '', $5
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS d (tab, title, message, severity)
RETURNING id`

// ingestFloorPostgres serves the floor on addr, storing in the database
// at dsn, which Perch's migrations bring up to date first.
func ingestFloorPostgres(addr, dsn string) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	err = st.Migrate(ctx, slog.New(slog.DiscardHandler))
	st.Close()
	if err != nil {
		return fmt.Errorf("ingest floor schema: %w", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	queue := make(chan *pgDelivery, 4096)
	go pgGroupCommit(ctx, conn, queue)
	return serveFloor(addr, func(ctx context.Context, e floorEvent) (string, error) {
		d := &pgDelivery{e: e, done: make(chan pgStored, 1)}
		queue <- d
		s := <-d.done
		return strconv.FormatInt(s.id, 10), s.err
	})
}

// pgGroupCommit stores what waits in queue, everything waiting at once
// (up to floorBatch) in one statement, and answers each delivery.
func pgGroupCommit(ctx context.Context, conn *pgx.Conn, queue <-chan *pgDelivery) {
	batch := make([]*pgDelivery, 0, floorBatch)
	var tabs, titles, messages, severities []string
	for first := range queue {
		batch = append(batch[:0], first)
	more:
		for len(batch) < floorBatch {
			select {
			case d := <-queue:
				batch = append(batch, d)
			default:
				break more
			}
		}
		tabs, titles, messages, severities = tabs[:0], titles[:0], messages[:0], severities[:0]
		for _, d := range batch {
			tabs, titles = append(tabs, d.e.Tab), append(titles, d.e.Title)
			messages, severities = append(messages, d.e.Message), append(severities, d.e.Severity)
		}
		rows, _ := conn.Query(ctx, floorInsert, tabs, titles, messages, severities, time.Now().UnixMilli())
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err == nil && len(ids) != len(batch) {
			err = fmt.Errorf("%d ids for %d rows", len(ids), len(batch))
		}
		// Identity values are given in the order of the rows.
		slices.Sort(ids)
		for i, d := range batch {
			if err != nil {
				d.done <- pgStored{err: err}
			} else {
				d.done <- pgStored{id: ids[i]}
			}
		}
	}
}
