package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
)

// cli is what the client commands (login, logout, listen, send) run in: the
// process's surroundings, passed in by run, and the few things that tests
// replace.
type cli struct {
	getenv         func(string) string
	stdin          io.Reader // nil: none
	stdout, stderr io.Writer

	openBrowser   func(url string) error // shows the sign-in page
	pollEvery     time.Duration          // between status polls of a desktop sign-in
	callbackGrace time.Duration          // how long the browser may trail a poll that heard the answer
	callbackWait  time.Duration          // how long to wait for the browser after an approval without the code
	quietFor      time.Duration          // how long a disconnection lasts before listen reports it
	clientOpts    []client.Option        // added to every API client (tests shorten the backoff)
}

func newCLI(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) *cli {
	return &cli{
		getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr,
		openBrowser:   openBrowser,
		pollEvery:     2 * time.Second,
		callbackGrace: time.Second,
		callbackWait:  15 * time.Second,
		quietFor:      5 * time.Second,
	}
}

// errHelp means -h was asked for and the command's usage printed: run ends
// with success, as flag's own ExitOnError would.
var errHelp = errors.New("help shown")

// flags returns a flag set for a client command whose usage begins with
// synopsis.
func (c *cli) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("perch "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, which take no positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return errHelp
	case err != nil:
		return errUsage // flag has printed the problem and the usage
	case fs.NArg() > 0:
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return errUsage
	}
	return nil
}

// store opens the credentials store; PERCH_CONFIG_DIR moves it.
func (c *cli) store() (*creds.Store, error) {
	return creds.Open(c.getenv("PERCH_CONFIG_DIR"))
}

// chosenServer is the server named by --server or PERCH_SERVER, normalized,
// or "" when neither is set.
func (c *cli) chosenServer(flagValue string) (string, error) {
	raw := flagValue
	if raw == "" {
		raw = c.getenv("PERCH_SERVER")
	}
	if raw == "" {
		return "", nil
	}
	return creds.NormalizeServer(raw)
}

// serverURL is the server a command talks to: --server, else PERCH_SERVER,
// else the default sign-in's server.
func (c *cli) serverURL(st *creds.Store, flagValue string) (string, error) {
	server, err := c.chosenServer(flagValue)
	if err != nil || server != "" {
		return server, err
	}
	if si, err := st.Get(""); err == nil {
		return si.Server, nil
	}
	return "", errors.New("which server? Pass --server https://perch.example.com (or set PERCH_SERVER)")
}

// signIn is the stored sign-in for --server / PERCH_SERVER, or the default
// one.
func (c *cli) signIn(st *creds.Store, flagValue string) (*creds.SignIn, error) {
	server, err := c.chosenServer(flagValue)
	if err != nil {
		return nil, err
	}
	return st.Get(server)
}

// plain is err as the person at the terminal should read it: the server's
// message without its code, and without the "perch:" that main adds anyway.
func plain(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(message(err))
}

// message is the text of plain(err).
func message(err error) string {
	if e, ok := errors.AsType[*perch.Error](err); ok {
		msg := e.Message
		for _, field := range slices.Sorted(maps.Keys(e.Fields)) {
			if strings.Contains(e.Message, field+" "+e.Fields[field]) {
				continue // the message says it already, as the inbound receiver's do
			}
			msg += fmt.Sprintf(" (%s: %s)", field, e.Fields[field])
		}
		return msg
	}
	return strings.TrimPrefix(err.Error(), "perch: ")
}

// lockedWriter serializes writes to w from several goroutines (listen
// reports a disconnection from a timer).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// isTerminal reports whether r is an interactive terminal (or /dev/null,
// also a character device): stdin that nobody piped anything into.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
