package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

const usage = `perch: self-hostable notifications for your menu bar.

Usage:
  perch serve [flags]          run the server (flags: perch serve -h)
  perch migrate [flags]        apply database migrations and exit
  perch admin grant EMAIL      make an account a platform admin
  perch version                print the version

Every server flag has a PERCH_* variable of the same name: --database-url is
PERCH_DATABASE_URL. A flag wins over its variable.
`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// errUsage means the command line was wrong; usage has been printed.
var errUsage = errors.New("see usage above")

// run is the whole program, with its environment passed in so that tests can
// run it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout, stderr)
	case "admin":
		return admin(ctx, rest, getenv, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "perch", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "perch: unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}
