package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

const usage = `perch: self-hostable notifications for your menu bar.

Usage:
  perch login [--server URL]   sign in to a server, in the browser (or --token pat_…)
  perch logout [--server URL]  sign out and forget the sign-in
  perch listen [flags]         print notifications as they arrive (--json, --exec CMD)
  perch send [flags]           send a notification with a webhook token (--title T; later: --delay 30m, --at TIME)
  perch act ID ACTION          run an action (a button) of notification ID as the signed-in user
  perch scheduled [cancel ID]  list the notifications your webhook tokens scheduled, or cancel one
  perch tray [--server URL]    run the menu-bar app
  perch serve [flags]          run the server (flags: perch serve -h)
  perch migrate [flags]        apply database migrations and exit
  perch admin grant EMAIL      make an account a platform admin
  perch admin outbox           print the mail waiting for an operator (no SMTP server)
  perch version                print the version, commit, Go version, platform and tray

Each command's flags: perch COMMAND -h.

Every server flag has a PERCH_* variable of the same name: --database-url is
PERCH_DATABASE_URL. A flag wins over its variable.

The client commands read PERCH_SERVER (the server when --server is not
given), PERCH_WEBHOOK_TOKEN (send's token) and PERCH_CONFIG_DIR (where the
sign-ins are kept; default: the user's configuration directory/perch).
`

// errUsage means the command line was wrong; usage has been printed.
var errUsage = errors.New("see usage above")

// run is the whole program, with its environment passed in so that tests can
// run it in-process. stdin may be nil: nothing to read.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	err := dispatch(ctx, args[0], args[1:], newCLI(getenv, stdin, stdout, stderr))
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// dispatch runs the command cmd with the arguments rest.
func dispatch(ctx context.Context, cmd string, rest []string, c *cli) error {
	getenv, stdout, stderr := c.getenv, c.stdout, c.stderr
	switch cmd {
	case "login":
		return c.login(ctx, rest)
	case "logout":
		return c.logout(ctx, rest)
	case "listen":
		return c.listen(ctx, rest)
	case "send":
		return c.send(ctx, rest)
	case "act":
		return c.act(ctx, rest)
	case "scheduled":
		return c.scheduled(ctx, rest)
	case "tray":
		return tray(ctx, rest, getenv, stdout, stderr)
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout, stderr)
	case "admin":
		return admin(ctx, rest, getenv, stdout, stderr)
	case "version", "--version":
		thisBuild().write(stdout)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "perch: unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}
