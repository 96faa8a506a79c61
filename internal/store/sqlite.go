package store

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"modernc.org/sqlite"
)

// openSQLite returns the pool of SQLite connections of dsn, with an outage
// (a full disk, a read-only or locked file: see outageCause) turned into a
// perch.EUNAVAILABLE error by every statement, as postgres.go does for
// PostgreSQL: the store's many queries need not each remember it.
func openSQLite(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(sqliteConnector{c}), nil
}

// sqliteDriverConn is what database/sql uses of a SQLite connection.
type sqliteDriverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// sqliteDriverStmt is what database/sql uses of a SQLite statement.
type sqliteDriverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type sqliteConnector struct{ driver.Connector }

func (c sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return &sqliteConn{conn.(sqliteDriverConn)}, nil
}

// sqliteConn passes everything to the driver, mapping outages. A query's
// rows need no wrapping: SQLite meets a full disk or a read-only file only
// when it writes, which a statement does before its first row, and what a
// transaction's rows fail with reaches tx, which maps it too.
type sqliteConn struct{ sqliteDriverConn }

func (c *sqliteConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *sqliteConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.sqliteDriverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, unavailable(err)
	}
	return &sqliteStmt{st.(sqliteDriverStmt)}, nil
}

func (c *sqliteConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *sqliteConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.sqliteDriverConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, unavailable(err)
	}
	return outageTx{tx}, nil
}

func (c *sqliteConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.sqliteDriverConn.ExecContext(ctx, query, args)
	return res, unavailable(err)
}

func (c *sqliteConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.sqliteDriverConn.QueryContext(ctx, query, args)
	return rows, unavailable(err)
}

func (c *sqliteConn) Ping(ctx context.Context) error {
	return unavailable(c.sqliteDriverConn.Ping(ctx))
}

type sqliteStmt struct{ sqliteDriverStmt }

func (s *sqliteStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.sqliteDriverStmt.ExecContext(ctx, args)
	return res, unavailable(err)
}

func (s *sqliteStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.sqliteDriverStmt.QueryContext(ctx, args)
	return rows, unavailable(err)
}

// outageTx maps an outage at commit, where a write-ahead log meets a full
// disk, or a lost connection ends a transaction, on either database.
type outageTx struct{ driver.Tx }

func (t outageTx) Commit() error { return unavailable(t.Tx.Commit()) }
