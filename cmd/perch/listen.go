package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
	trayui "github.com/perch-dev/perch/internal/tray"
)

// resumeConsumer names an unfiltered listen's resume point in the
// credentials store; the tray keeps one of its own, and each filter or
// --name one more (see consumerName).
const resumeConsumer = "listen"

var listenName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// consumerName is where a listen keeps its resume point. A filtered listen
// passes over what its filter hides, so it must not move the resume point of
// an unfiltered one (which would then never show those): each filter has a
// point of its own, and --name gives one to any listen that wants it.
func consumerName(name, tab string, floor int) string {
	switch {
	case name != "":
		return resumeConsumer + "-" + name
	case tab == "" && floor == 0:
		return resumeConsumer
	}
	h := sha256.Sum256([]byte(strings.ToLower(tab) + "\x00" + strconv.Itoa(floor)))
	return resumeConsumer + "-filter-" + hex.EncodeToString(h[:6])
}

// severityRank orders the severities for --min-severity.
var severityRank = map[string]int{perch.SeverityInfo: 0, perch.SeverityWarning: 1, perch.SeverityError: 2}

// listen prints the signed-in user's notifications as they arrive, or runs
// a command for each, until interrupted. It resumes after the last
// notification it handled, so that a restart, even after a crash, misses
// none.
func (c *cli) listen(ctx context.Context, args []string) error {
	fs := c.flags("listen", "perch listen [--server URL] [--json | --exec CMD [--exec-silent]] [--tab T] [--min-severity S] [--since ID] [--name N]")
	serverFlag := fs.String("server", "", "server to listen to (default: PERCH_SERVER, then the default sign-in)")
	asJSON := fs.Bool("json", false, "print each notification as one JSON object per line")
	command := fs.String("exec", "", "run CMD with the shell for each notification, with PERCH_ID, PERCH_TITLE, … in its environment; not for silent ones (your preferences say they should not pop up)")
	execSilent := fs.Bool("exec-silent", false, "run --exec's command for silent notifications too, with PERCH_SILENT=1")
	tab := fs.String("tab", "", "only notifications of this tab (any case)")
	minSeverity := fs.String("min-severity", perch.SeverityInfo, "only notifications at least this severe: info, warning or error")
	since := fs.String("since", "", "resume after this notification id instead of where the last run stopped (0: everything kept)")
	name := fs.String("name", "", "keep this listener's resume point under a name of its own (each filter has one anyway)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name != "" && !listenName.MatchString(*name) {
		return fmt.Errorf("--name %q: want up to 40 letters, digits, - and _", *name)
	}
	floor, ok := severityRank[strings.ToLower(*minSeverity)]
	if !ok {
		return fmt.Errorf("--min-severity %q: want info, warning or error", *minSeverity)
	}
	if *asJSON && *command != "" {
		return fmt.Errorf("--json and --exec do not go together: --exec's command gets each notification instead of the output")
	}
	if *execSilent && *command == "" {
		return fmt.Errorf("--exec-silent goes with --exec")
	}
	st, err := c.store()
	if err != nil {
		return err
	}
	si, err := c.signIn(st, *serverFlag)
	if err != nil {
		return err
	}
	consumer := consumerName(*name, *tab, floor)
	resume := *since
	if resume == "" {
		resume = st.LastID(si.Server, consumer)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := &lockedWriter{w: c.stderr} // the disconnection timer writes too
	l := &listener{
		cli: c, ctx: ctx, store: st, server: si.Server, consumer: consumer, stderr: stderr,
		asJSON: *asJSON, command: *command, execSilent: *execSilent, tab: *tab, floor: floor,
		watch: &connWatch{out: stderr, server: si.Server, quietFor: c.quietFor},
	}
	err = st.Client(si, c.clientOpts...).Listen(ctx, resume, l.handle)
	l.watch.stop()
	if err != nil {
		if perch.ErrorCode(err) == perch.EUNAUTHORIZED {
			return fmt.Errorf("not signed in to %s any more (%s); run perch login --server %s", si.Server, strings.TrimSuffix(message(err), "."), si.Server)
		}
		return fmt.Errorf("listening to %s: %s", si.Server, message(err))
	}
	return nil
}

// listener handles the events of one perch listen.
type listener struct {
	cli      *cli
	ctx      context.Context
	store    *creds.Store
	server   string
	consumer string // whose resume point this listen keeps
	stderr   io.Writer

	asJSON     bool
	command    string
	execSilent bool // run command for silent notifications too
	tab        string
	floor      int // the least severity rank shown

	watch     *connWatch
	ready     bool // the first ready frame has come
	saveError bool // a failure to record the resume point was reported
}

// handle is Listen's callback: events arrive one at a time, in order.
func (l *listener) handle(e client.Event) {
	switch e.Type {
	case client.EventReady:
		if !l.ready {
			l.ready = true
			fmt.Fprintf(l.stderr, "listening for notifications from %s (Ctrl-C to stop)\n", l.server)
		}
		l.watch.up()
		if e.Gap {
			fmt.Fprintln(l.stderr, "some notifications older than the retention period were missed")
		}
		// Without a notification yet, the resume point is still worth
		// keeping: a run killed now resumes from here rather than from
		// whenever it is started again. "0" stands for "before the first".
		resume := e.LastID
		if resume == "" {
			resume = "0"
		}
		l.record(resume)
	case client.EventNotification:
		n := e.Notification
		if l.wanted(n) && !l.show(n, e.Silent) {
			return // its command was cut short: the next run shows it again
		}
		// Only once it has been shown: a process killed in between shows it
		// again on restart rather than never.
		l.record(n.ID)
	case client.EventDisconnected:
		l.watch.down(e.Err)
	}
}

// wanted applies --tab and --min-severity.
func (l *listener) wanted(n *perch.Notification) bool {
	if l.tab != "" && !strings.EqualFold(n.Tab, l.tab) {
		return false
	}
	return severityRank[n.Severity] >= l.floor
}

// show prints n, or runs --exec's command for it, and reports whether n
// was handled. A silent notification (the user's preferences say it should
// not pop up) is printed with its mark, and runs no command unless
// --exec-silent says so.
func (l *listener) show(n *perch.Notification, silent bool) bool {
	switch {
	case l.command != "":
		if silent && !l.execSilent {
			return true
		}
		return l.run(n, silent)
	case l.asJSON:
		b, _ := json.Marshal(struct {
			*perch.Notification
			Silent bool `json:"silent,omitempty"`
		}{n, silent})
		fmt.Fprintf(l.cli.stdout, "%s\n", b)
	default:
		line := formatLine(n, time.Local)
		if silent {
			line = markSilent(line)
		}
		fmt.Fprintln(l.cli.stdout, line)
	}
	return true
}

// silentMark is how a printed line says its notification is silent.
const silentMark = "(silent) "

// markSilent puts the silent mark after the line's time.
func markSilent(line string) string {
	if i := strings.Index(line, "  "); i >= 0 {
		return line[:i+2] + silentMark + line[i+2:]
	}
	return silentMark + line
}

// run runs --exec's command for n. A failing command is reported and
// listening goes on: one bad notification must not stop the rest. It
// reports false only when the command was stopped by the end of listen.
func (l *listener) run(n *perch.Notification, silent bool) bool {
	cmd := shellCommand(l.ctx, l.command)
	cmd.Env = append(cmd.Environ(),
		"PERCH_ID="+n.ID,
		"PERCH_TITLE="+n.Title,
		"PERCH_MESSAGE="+n.Message,
		"PERCH_SEVERITY="+n.Severity,
		"PERCH_TAB="+n.Tab,
		"PERCH_SOURCE="+n.Source,
		"PERCH_URL="+n.URL,
		"PERCH_PRIORITY="+priorityName(n.Priority),
		"PERCH_TAGS="+strings.Join(n.Tags, ","),
		"PERCH_CREATED_AT="+n.CreatedAt.UTC().Format(time.RFC3339Nano),
	)
	if silent {
		cmd.Env = append(cmd.Env, "PERCH_SILENT=1")
	}
	cmd.Stdout, cmd.Stderr = l.cli.stdout, l.cli.stderr
	err := cmd.Run()
	if l.ctx.Err() != nil {
		return false
	}
	if err != nil {
		fmt.Fprintf(l.stderr, "--exec failed for notification %s: %v\n", n.ID, err)
	}
	return true
}

// priorityName is a notification's priority by name; one stored before
// priorities (0) has the default.
func priorityName(p int) string {
	if p == 0 {
		p = perch.PriorityDefault
	}
	return perch.PriorityName(p)
}

// shellCommand runs line with the system's shell.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.CommandContext(ctx, "cmd", "/C", line)
	}
	return exec.CommandContext(ctx, "sh", "-c", line)
}

// record stores id as where the next run resumes.
func (l *listener) record(id string) {
	if err := l.store.SetLastID(l.server, l.consumer, id); err != nil && !l.saveError {
		l.saveError = true
		fmt.Fprintf(l.stderr, "could not record where to resume (%v): a restart may show notifications again\n", err)
	}
}

// formatLine is the readable form of n, on one line: its time, severity
// and priority (unless default), tab, tags' emoji, title, message (a
// Markdown one as plain text), link, other tags, and actions, which
// perch act runs by the id or the label shown:
//
//	2026-11-22 09:00:00  [error, urgent] Checkout: 🚨 Error rate 7.2% — See the runbook.  https://…  #prod  (actions of 42: a1 Roll back, a2 Dashboard https://…)
func formatLine(n *perch.Notification, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(n.CreatedAt.In(loc).Format(time.DateTime))
	b.WriteString("  [" + n.Severity)
	if n.Priority != 0 && n.Priority != perch.PriorityDefault {
		b.WriteString(", " + perch.PriorityName(n.Priority))
	}
	b.WriteString("] ")
	if n.Tab != "" {
		b.WriteString(n.Tab + ": ")
	}
	b.WriteString(trayui.EmojiPrefix(n.Tags) + n.Title)
	msg := n.Message
	if n.Markdown {
		msg = trayui.PlainText(msg)
	}
	if msg := strings.Join(strings.Fields(msg), " "); msg != "" {
		b.WriteString(" — " + msg)
	}
	if n.URL != "" {
		b.WriteString("  " + n.URL)
	}
	if words := trayui.TextTags(n.Tags); len(words) > 0 {
		b.WriteString("  #" + strings.Join(words, " #"))
	}
	if len(n.Actions) > 0 {
		acts := make([]string, len(n.Actions))
		for i, a := range n.Actions {
			acts[i] = a.ID + " " + perch.OneLine(a.Label)
			if a.Type == perch.ActionView && a.URL != "" {
				acts[i] += " " + a.URL
			}
		}
		b.WriteString("  (actions of " + n.ID + ": " + strings.Join(acts, ", ") + ")")
	}
	return b.String()
}

// connWatch reports a disconnection once it has lasted quietFor, and the
// reconnection after it; shorter blips, which Listen heals on its own, are
// not worth a line.
type connWatch struct {
	out      io.Writer // safe for concurrent use
	server   string
	quietFor time.Duration

	mu        sync.Mutex
	timer     *time.Timer // running while down and not yet reported
	err       error       // the latest reason
	announced bool
}

func (w *connWatch) down(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	if w.timer == nil && !w.announced {
		w.timer = time.AfterFunc(w.quietFor, w.announce)
	}
}

func (w *connWatch) announce() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil {
		return // back up, or stopped, meanwhile
	}
	w.timer, w.announced = nil, true
	fmt.Fprintf(w.out, "disconnected from %s: %s; reconnecting…\n", w.server, message(w.err))
}

func (w *connWatch) up() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.announced {
		w.announced = false
		fmt.Fprintf(w.out, "reconnected to %s\n", w.server)
	}
}

func (w *connWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}
