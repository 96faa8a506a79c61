package store

import "io/fs"

// Migrations returns the embedded migration files of dialect, for tests that
// must know whether a database they made earlier still matches them (the
// storetest package names its PostgreSQL template by their hash).
func Migrations(d Dialect) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+string(d))
}
