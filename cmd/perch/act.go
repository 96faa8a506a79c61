package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/perch-dev/perch"
)

// act runs one of a notification's actions as the signed-in user: the
// server makes an http action's request (or calls PagerDuty for a native
// one) and answers what the target answered, which act prints; an answer
// that is not 2xx also makes act fail. A view action is the client's to
// open: the server's refusal (409) says so.
func (c *cli) act(ctx context.Context, args []string) error {
	fs := c.flags("act", "perch act [--server URL] NOTIFICATION_ID ACTION_ID")
	serverFlag := fs.String("server", "", "server of the notification (default: PERCH_SERVER, then the default sign-in)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return errUsage
	}
	if fs.NArg() != 2 || strings.TrimSpace(fs.Arg(0)) == "" || strings.TrimSpace(fs.Arg(1)) == "" {
		fmt.Fprintln(fs.Output(), "want a notification id and an action id (perch listen --json shows both)")
		fs.Usage()
		return errUsage
	}
	id, actionID := fs.Arg(0), fs.Arg(1)
	st, err := c.store()
	if err != nil {
		return err
	}
	si, err := c.signIn(st, *serverFlag)
	if err != nil {
		return err
	}
	res, err := st.Client(si, c.clientOpts...).RunAction(ctx, id, actionID)
	switch perch.ErrorCode(err) {
	case "":
	case perch.EUNAUTHORIZED:
		return fmt.Errorf("not signed in to %s any more (%s); run perch login --server %s", si.Server, strings.TrimSuffix(message(err), "."), si.Server)
	default:
		return plain(err)
	}
	verdict := "failed"
	if res.OK {
		verdict = "done"
	}
	fmt.Fprintf(c.stdout, "%s: the target answered %d\n", verdict, res.Status)
	if !res.OK {
		return fmt.Errorf("the action's target answered %d", res.Status)
	}
	return nil
}
