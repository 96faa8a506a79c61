package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/perch-dev/perch/internal/store"
)

// The ingest floor: the least a server can do for what Perch's receiver
// promises (the delivery is parsed and stored durably in the same SQLite,
// in the same table, before the 200 that carries its id), with none of the
// rest (no token, no limits, no workflows, no fan-out, no metrics, no
// middleware). Deliveries are gathered into one multi-row insert by one
// writer, as Perch's are, taking whatever is waiting and never waiting for
// more. The table is Perch's (its migrations make the file). wrk against it
// shows how near the embedded database lets ingest come to the trivial
// handler on this machine.

// floorMaxBatch bounds one insert, as Perch's statements are bounded.
const floorMaxBatch = 64

type floorEvent struct {
	Title, Message, Severity, Tab string
}

type floorRequest struct {
	event floorEvent
	id    chan int64 // the row's id; -1 when the insert failed
}

// ingestFloor serves the floor on addr with its database in path.
func ingestFloor(addr, path string) error {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// The schema is Perch's own: its migrations make the file.
	st, err := store.Open(context.Background(), path)
	if err != nil {
		return err
	}
	err = st.Migrate(context.Background(), slog.New(slog.DiscardHandler))
	st.Close()
	if err != nil {
		return fmt.Errorf("ingest floor schema: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	reqs := make(chan *floorRequest, 1024)
	go floorWriter(db, reqs)
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
		req := &floorRequest{event: e, id: make(chan int64, 1)}
		reqs <- req
		id := <-req.id
		if id < 0 {
			http.Error(w, `{"error":"not stored"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"received":true,"ids":["`+strconv.FormatInt(id, 10)+`"]}`)
	}))
}

// floorWriter stores what is waiting, up to floorMaxBatch deliveries, in one
// statement (a transaction of its own), and answers each with its id.
func floorWriter(db *sql.DB, reqs <-chan *floorRequest) {
	stmts := map[int]*sql.Stmt{}
	var batch []*floorRequest
	var args []any
	for first := range reqs {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < floorMaxBatch {
			select {
			case r := <-reqs:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		st := stmts[len(batch)]
		if st == nil {
			values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, NULL),", len(batch)), ",")
			var err error
			if st, err = db.Prepare(`INSERT INTO notifications (scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key) VALUES ` + values); err != nil {
				panic(err)
			}
			stmts[len(batch)] = st
		}
		now := any(time.Now().UnixMilli())
		args = args[:0]
		for _, r := range batch {
			e := r.event
			args = append(args, "org", "floor", e.Tab, e.Title, e.Message, e.Severity, "inbound", "", now)
		}
		last := int64(-1)
		if res, err := st.ExecContext(context.Background(), args...); err == nil {
			last, _ = res.LastInsertId()
		}
		for i, r := range batch {
			if last < 0 {
				r.id <- -1
				continue
			}
			r.id <- last - int64(len(batch)-1-i)
		}
	}
}
