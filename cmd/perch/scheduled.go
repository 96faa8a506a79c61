package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// scheduled lists the signed-in user's pending scheduled notifications
// (what their webhook tokens sent with --delay, --at, deliver_at or
// delay), or with "cancel ID" cancels one.
func (c *cli) scheduled(ctx context.Context, args []string) error {
	fs := c.flags("scheduled", "perch scheduled [--server URL]            list the notifications your webhook tokens scheduled\n       perch scheduled cancel ID [--server URL]  cancel one: it is never delivered")
	serverFlag := fs.String("server", "", "server (default: PERCH_SERVER, then the default sign-in)")
	var cancelID string
	if len(args) > 0 && args[0] == "cancel" {
		if len(args) < 2 || strings.HasPrefix(args[1], "-") {
			fmt.Fprintln(c.stderr, "perch scheduled cancel needs the id to cancel (perch scheduled lists them)")
			fs.Usage()
			return errUsage
		}
		cancelID, args = args[1], args[2:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := c.store()
	if err != nil {
		return err
	}
	si, err := c.signIn(st, *serverFlag)
	if err != nil {
		return err
	}
	api := st.Client(si, c.clientOpts...)
	if cancelID != "" {
		if err := api.CancelScheduled(ctx, cancelID); err != nil {
			if perch.ErrorCode(err) == perch.ENOTFOUND {
				return fmt.Errorf("no scheduled notification %s of yours is waiting: it was delivered or cancelled already, or is not yours", cancelID)
			}
			return plain(err)
		}
		fmt.Fprintf(c.stdout, "cancelled %s\n", cancelID)
		return nil
	}
	list, err := api.ScheduledNotifications(ctx)
	if err != nil {
		return plain(err)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stderr, "nothing scheduled")
		return nil
	}
	for _, sc := range list {
		fmt.Fprintf(c.stdout, "%s  %s  [%s] %s\n", sc.ID, sc.DeliverAt.UTC().Format(time.RFC3339), sc.Tab, sc.Title)
	}
	return nil
}
