package store

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/perch-dev/perch"
)

// errUnstorable answers a value that PostgreSQL cannot hold in text.
var errUnstorable = perch.Errorf(perch.EBADREQUEST, "The request holds characters that cannot be stored, such as a NUL.")

// pgError maps, by SQLSTATE, the PostgreSQL errors that a value itself
// causes, and that SQLite never raises, to errors of the request:
// character_not_in_repertoire (22021: a NUL, or invalid UTF-8) and
// untranslatable_character (22P05). Validation refuses such text first;
// this is the last line, for whatever it misses (an id in a URL path, say),
// so that the answer is a 400 and not a 500. An outage (see outageCause)
// becomes a perch.EUNAVAILABLE error. Any other error is returned as it is.
func pgError(err error) error {
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch e.Code {
		case "22021", "22P05":
			return errUnstorable
		}
	}
	return unavailable(err)
}

// openPostgres returns the connector of the database at dsn, with pgError
// applied to every statement's error, and to connecting, beginning and
// committing: the store's many queries need not each remember it.
func openPostgres(dsn string) (driver.Connector, error) {
	c, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return pgConnector{c}, nil
}

// pgDriverConn is what database/sql uses of a pgx connection.
type pgDriverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.NamedValueChecker
	driver.SessionResetter
}

var _ pgDriverConn = (*stdlib.Conn)(nil)

// pgStmt is what database/sql uses of a pgx prepared statement.
type pgStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

var _ pgStmt = (*stdlib.Stmt)(nil)

type pgConnector struct{ driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, pgError(err)
	}
	return &pgConn{conn.(pgDriverConn)}, nil
}

// pgConn passes everything to pgx, mapping the errors of statements. A
// query's parameters are sent, and refused, before QueryContext returns
// (pgx reads the first row there), so rows need no wrapping.
type pgConn struct{ pgDriverConn }

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.pgDriverConn.ExecContext(ctx, query, args)
	return res, pgError(err)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.pgDriverConn.QueryContext(ctx, query, args)
	return rows, pgError(err)
}

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.pgDriverConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, pgError(err)
	}
	return outageTx{tx}, nil
}

func (c *pgConn) Ping(ctx context.Context) error {
	return pgError(c.pgDriverConn.Ping(ctx))
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.pgDriverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, pgError(err)
	}
	return &pgStmtErrors{st.(pgStmt)}, nil
}

type pgStmtErrors struct{ pgStmt }

func (s *pgStmtErrors) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.pgStmt.ExecContext(ctx, args)
	return res, pgError(err)
}

func (s *pgStmtErrors) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.pgStmt.QueryContext(ctx, args)
	return rows, pgError(err)
}
