package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// act runs one of a notification's actions as the signed-in user: the
// server makes an http action's request (or calls PagerDuty for a native
// one) and answers what the target answered, which act prints; an answer
// that is not 2xx also makes act fail. The action is named by its id (a1,
// acknowledge) or by its label, in any case, as perch listen shows them. A
// view action has nothing for the server to run: act prints its link.
func (c *cli) act(ctx context.Context, args []string) error {
	fs := c.flags("act", "perch act [--server URL] NOTIFICATION_ID ACTION")
	serverFlag := fs.String("server", "", "server of the notification (default: PERCH_SERVER, then the default sign-in)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return errUsage
	}
	if fs.NArg() != 2 || strings.TrimSpace(fs.Arg(0)) == "" || strings.TrimSpace(fs.Arg(1)) == "" {
		fmt.Fprintln(fs.Output(), "want a notification id and an action's id or label (perch listen shows both)")
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
	cl := st.Client(si, c.clientOpts...)
	// The action is looked up first, so that a label finds its id and a
	// view action needs no run; a run counts against the actions' rate
	// limit once. What the lookup cannot find is the server's to refuse.
	if a, ok := findAction(ctx, cl, id, actionID); ok {
		if a.Type == perch.ActionView {
			fmt.Fprintf(c.stdout, "%s opens %s\n", a.Label, a.URL)
			return nil
		}
		actionID = a.ID
	}
	res, err := cl.RunAction(ctx, id, actionID)
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

// findAction looks up notification id's action named name, by its id or,
// failing that, its label (in any case, spaces as perch listen prints
// them); ok is false when the user sees no such notification
// or it has no such action.
func findAction(ctx context.Context, cl *client.Client, id, name string) (perch.NotificationAction, bool) {
	num, err := strconv.ParseInt(id, 10, 64)
	if err != nil || num < 1 {
		return perch.NotificationAction{}, false
	}
	page, err := cl.Notifications(ctx, strconv.FormatInt(num-1, 10), 1)
	if err != nil || len(page) == 0 || page[0].ID != id {
		return perch.NotificationAction{}, false
	}
	acts := page[0].Actions
	if i := slices.IndexFunc(acts, func(a perch.NotificationAction) bool { return a.ID == name }); i >= 0 {
		return acts[i], true // an id before any label that spells it
	}
	if i := slices.IndexFunc(acts, func(a perch.NotificationAction) bool {
		return strings.EqualFold(perch.OneLine(a.Label), perch.OneLine(name))
	}); i >= 0 {
		return acts[i], true
	}
	return perch.NotificationAction{}, false
}
