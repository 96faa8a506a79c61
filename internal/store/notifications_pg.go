package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// insertPipelined stores a batch of notifications without jobs on
// PostgreSQL in one round trip: the order lock and the batch's insert (one
// statement, insertUnnest) go to the server at once, in one implicit
// transaction (pgx's batch: the
// statements before the pipeline's one Sync), which commits, and so
// releases pg_advisory_xact_lock, when the last of them has run. It was
// five round trips a batch (take the session lock, begin, insert, commit,
// release); with the group commit's transactions a couple of
// milliseconds apart, those round trips were most of Perch's cost on
// PostgreSQL. A row whose key was stored before is read back afterwards,
// once the batch committed (seldom: redeliveries).
func (s *Store) insertPipelined(ctx context.Context, batch []NewNotification, out []Stored, now time.Time) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var r returned
	err = conn.Raw(func(dc any) error {
		c, err := pgxConn(dc)
		if err != nil {
			return err
		}
		cols := unnestColumns(batch, now)
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, int64(notificationsLock))
		b.Queue(insertUnnest, cols.scopeType, cols.scopeID, cols.tab, cols.title, cols.message, cols.severity, cols.source,
			cols.url, cols.created, cols.key)
		br := c.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		for rows.Next() {
			var id int64
			var key sql.NullString
			if err := rows.Scan(&id, &key); err != nil {
				rows.Close()
				br.Close()
				return err
			}
			r.add(id, key)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			br.Close()
			return err
		}
		return br.Close() // the commit's answer
	})
	if err != nil {
		return pgError(err)
	}
	return s.pairReturned(ctx, s.r, r, now, batch, out)
}

// insertUnnest inserts a whole batch as one statement, its columns as
// arrays: one prepared statement serves every batch size. A row whose
// dedupe key is stored already is skipped. unnest keeps the arrays' order,
// so ids are given in the batch's order, which pairReturned relies on (as
// for the multi-row VALUES of insertNotifications).
const insertUnnest = `INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[])
	ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
	RETURNING id, dedupe_key`

// columns are a batch's values, column by column, for insertUnnest.
type columns struct {
	scopeType, scopeID, tab, title, message, severity, source, url []string
	created                                                        []int64
	key                                                            []*string // nil: no key (NULL)
}

func unnestColumns(batch []NewNotification, now time.Time) columns {
	n := len(batch)
	c := columns{scopeType: make([]string, n), scopeID: make([]string, n), tab: make([]string, n), title: make([]string, n),
		message: make([]string, n), severity: make([]string, n), source: make([]string, n), url: make([]string, n),
		created: make([]int64, n), key: make([]*string, n)}
	created := ms(now)
	for i := range batch {
		nn := &batch[i]
		no := &nn.Notification
		c.scopeType[i], c.scopeID[i], c.tab[i], c.title[i] = no.Scope.Type, no.Scope.ID, no.Tab, no.Title
		c.message[i], c.severity[i], c.source[i], c.url[i], c.created[i] = no.Message, no.Severity, no.Source, no.URL, created
		if nn.DedupeKey != "" {
			c.key[i] = &nn.DedupeKey
		}
	}
	return c
}

// pgxConn is the pgx connection under one of the store's PostgreSQL
// connections.
func pgxConn(dc any) (*pgx.Conn, error) {
	pc, ok := dc.(*pgConn)
	if !ok {
		return nil, errors.New("store: not a PostgreSQL connection of the store's")
	}
	sc, ok := pc.pgDriverConn.(*stdlib.Conn)
	if !ok {
		return nil, errors.New("store: not a pgx connection")
	}
	return sc.Conn(), nil
}
