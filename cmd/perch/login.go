package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
	"github.com/perch-dev/perch/internal/creds"
)

// login signs in to a server and stores the sign-in, which becomes the
// default: with --token, an API token the server vouches for; otherwise
// the desktop sign-in through the browser (docs/DESIGN.md, "Desktop sign-in").
func (c *cli) login(ctx context.Context, args []string) error {
	fs := c.flags("login", "perch login [--server URL] [--region NAME] [--token pat_…] [--no-browser]")
	serverFlag := fs.String("server", "", "server URL, e.g. https://perch.example.com (default: PERCH_SERVER, then the server of the default sign-in)")
	region := fs.String("region", "", "sign in to this region's server, from the regions the server lists (e.g. eu)")
	token := fs.String("token", "", "sign in with an API token (pat_…) instead of the browser")
	noBrowser := fs.Bool("no-browser", false, "print the sign-in page's address without opening a browser")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := c.store()
	if err != nil {
		return err
	}
	server, err := c.serverURL(st, *serverFlag)
	if err != nil {
		return err
	}
	if *region != "" {
		if server, err = c.regionServer(ctx, server, *region); err != nil {
			return err
		}
	}
	var si *creds.SignIn
	var may string // what the API token may do, when signing in with one
	if *token != "" {
		si, may, err = c.tokenLogin(ctx, server, *token)
	} else {
		si, err = c.browserLogin(ctx, server, cliClientName, !*noBrowser, nil)
	}
	if err != nil {
		return err
	}
	previous, _ := st.Get(server)
	if err := st.Put(si); err != nil {
		return fmt.Errorf("storing the sign-in in %s: %w", st.Dir(), err)
	}
	// The session this one replaces would otherwise stay live on the server
	// for its 30 days, its refresh token forgotten here. Another process
	// holding it adopts the new pair from the store at its next renewal.
	if previous != nil && previous.RefreshToken != "" && previous.RefreshToken != si.RefreshToken {
		st.Client(previous, c.clientOpts...).Logout(ctx)
	}
	fmt.Fprintf(c.stdout, "Signed in to %s as %s.\n", server, si.Email)
	if may != "" {
		fmt.Fprintln(c.stdout, may)
	}
	return nil
}

// regionServer is the address of region's server, from the regions that
// server lists.
func (c *cli) regionServer(ctx context.Context, server, region string) (string, error) {
	regions, err := client.New(server, c.clientOpts...).Regions(ctx)
	if err != nil {
		return "", fmt.Errorf("asking %s for its regions: %s", server, message(err))
	}
	names := make([]string, len(regions))
	for i, r := range regions {
		if r.Name == region {
			return r.URL, nil
		}
		names[i] = r.Name
	}
	return "", fmt.Errorf("%s knows no region %q; its regions: %s", server, region, strings.Join(names, ", "))
}

// tokenLogin checks an API token by asking the server whose it is, and
// says what the token may do: its scopes and expiry, from the user's list
// of tokens, found by the raw token's prefix (which every scope may read).
func (c *cli) tokenLogin(ctx context.Context, server, token string) (*creds.SignIn, string, error) {
	if !strings.HasPrefix(token, perch.APITokenPrefix) {
		return nil, "", fmt.Errorf("--token takes an API token (%s…), made on the dashboard's API tokens page", perch.APITokenPrefix)
	}
	api := client.New(server, append(slices.Clip(c.clientOpts), client.WithAPIToken(token))...)
	me, err := api.Me(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("checking the token with %s: %s", server, message(err))
	}
	tokens, err := api.APITokens(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("reading the token's scopes from %s: %s", server, message(err))
	}
	var may string
	for _, k := range tokens {
		if strings.HasPrefix(token, k.TokenPrefix) {
			may = tokenMay(k)
			break
		}
	}
	return &creds.SignIn{Server: server, Email: me.Email, APIToken: token}, may, nil
}

// tokenMay says what k may do and until when: "This token may read and
// send; it expires on 2027-01-01."
func tokenMay(k *perch.APIToken) string {
	what := "do everything your account may do"
	if k.Scopes != nil {
		what = perch.DescribeTokenScopes(k.Scopes)
	}
	until := "it does not expire"
	if k.ExpiresAt != nil {
		at := k.ExpiresAt.UTC()
		until = "it expires on " + at.Format(time.DateOnly)
		if !at.Equal(at.Truncate(24 * time.Hour)) {
			until += " at " + at.Format("15:04") + " UTC"
		}
	}
	return "This token may " + what + "; " + until + "."
}

var (
	errDenied  = errors.New("sign-in was denied")
	errExpired = errors.New("the sign-in request expired before it was approved; run perch login again")
)

// What the approval page calls the app that asks to sign in.
const (
	cliClientName  = "perch CLI"
	trayClientName = "Perch menu bar"
)

// browserLogin runs the desktop sign-in: a one-time verifier, a loopback
// port for the browser's answer, the verification page in the browser with
// the user code beside it, and then whichever comes first of the browser's
// callback and an approval seen by polling (a browser on another machine,
// or one that cannot reach the port, still completes the sign-in, when the
// person typed the code). clientName is what the approval page calls this
// app; started, when not nil, is told the page and the code once known.
func (c *cli) browserLogin(ctx context.Context, server, clientName string, open bool, started func(*client.DeviceStart)) (*creds.SignIn, error) {
	verifier := newCodeVerifier()
	// Loopback only, and 127.0.0.1 rather than localhost (RFC 8252 §8.3):
	// the code must not be offered to the network.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on a loopback port for the browser's answer: %w", err)
	}
	api := client.New(server, c.clientOpts...)
	start, err := api.StartDeviceSignIn(ctx, ln.Addr().(*net.TCPAddr).Port, codeChallenge(verifier), clientName)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("starting the sign-in with %s: %s", server, message(err))
	}

	flow := &deviceFlow{api: api, sessionID: start.SessionID, verifier: verifier, done: make(chan struct{}), called: make(chan struct{})}
	hs := &http.Server{Handler: flow, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { hs.Serve(ln); close(served) }()
	defer func() {
		// A poll may hear the answer just before the browser, sent on at
		// the same moment, reaches the port: give it a moment to, so that
		// it shows a page rather than a connection error.
		select {
		case <-flow.done:
			t := time.NewTimer(c.callbackGrace)
			select {
			case <-flow.called:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		default: // expired or interrupted: nobody is coming
		}
		// Shutdown lets a callback being answered finish its page.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		hs.Close()
		<-served
	}()

	fmt.Fprintf(c.stderr, "Open this page to sign in: %s\n", start.VerificationURL)
	fmt.Fprintf(c.stderr, "Your code: %s — type it on that page when you approve. Never type a code someone else gave you.\n", start.UserCode)
	if started != nil {
		started(start)
	}
	if open {
		if err := c.openBrowser(start.VerificationURL); err != nil {
			fmt.Fprintf(c.stderr, "(Could not open a browser: %v. Open the page yourself.)\n", err)
		}
	}

	ttl := time.Duration(start.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = perch.DeviceSessionTTL
	}
	expiry := time.NewTimer(ttl)
	defer expiry.Stop()
	poll := time.NewTicker(c.pollEvery)
	defer poll.Stop()
	var callbackOnly <-chan time.Time // runs once a poll hears of an approval without the code
	for {
		select {
		case <-flow.done:
			if flow.err != nil {
				return nil, flow.err
			}
			s := flow.session
			si := &creds.SignIn{Server: server, AccessToken: s.AccessToken, RefreshToken: s.RefreshToken}
			if s.User != nil {
				si.Email = s.User.Email
			}
			return si, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-expiry.C:
			return nil, errExpired
		case <-callbackOnly:
			// Under the flow's lock: a callback that arrives meanwhile
			// either completes the sign-in first or finds it over.
			flow.end(fmt.Errorf("the sign-in was approved without the code %s, so only this computer's browser could complete it, and it did not; run perch login again and type the code on the page", start.UserCode))
		case <-poll.C:
			if flow.poll(ctx) && callbackOnly == nil {
				// The browser was sent to this port with the answer the
				// moment it approved; give it time to arrive.
				fmt.Fprintln(c.stderr, "Approved without the code: waiting for the browser to bring the answer here…")
				t := time.NewTimer(c.callbackWait)
				defer t.Stop()
				callbackOnly = t.C
			}
		}
	}
}

// deviceFlow is one desktop sign-in waiting for its answer, from the
// browser's callback (it serves the loopback port) or from polling.
type deviceFlow struct {
	api       *client.Client
	sessionID string
	verifier  string

	// One exchange or poll at a time: the server hands the tokens out once,
	// so the callback and a poll racing would leave one of them with an
	// error to explain away.
	mu       sync.Mutex
	finished bool
	done     chan struct{}   // closed when finished
	session  *client.Session // set before done is closed
	err      error

	called     chan struct{} // closed when the browser's callback arrives
	calledOnce sync.Once
}

// finish ends the flow; the caller holds mu.
func (f *deviceFlow) finish(s *client.Session, err error) {
	if f.finished {
		return
	}
	f.finished, f.session, f.err = true, s, err
	close(f.done)
}

// end ends the flow with err, unless it has ended already.
func (f *deviceFlow) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finish(nil, err)
}

// ServeHTTP takes the browser's callback, exchanges its code, and tells the
// person in the browser how it went.
func (f *deviceFlow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("session_id") != f.sessionID {
		callbackPage(w, http.StatusBadRequest, "This sign-in link is not for the perch login waiting here. Run perch login again.")
		return
	}
	f.calledOnce.Do(func() { close(f.called) })
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.finished {
		switch {
		case q.Get("error") == "access_denied":
			f.finish(nil, errDenied)
		case q.Get("error") != "":
			f.finish(nil, fmt.Errorf("sign-in failed: %s", q.Get("error")))
		default:
			// The browser may go away; the tokens must still be collected.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
			s, err := f.exchange(ctx, q.Get("code"))
			cancel()
			if e, ok := errors.AsType[*perch.Error](err); ok && e.Fields["code"] != "" {
				// Someone who saw the session id is not the browser with the
				// code: keep waiting for the real answer.
				callbackPage(w, http.StatusBadRequest, "This sign-in link has a wrong code. Use the page perch login opened.")
				return
			}
			if err != nil {
				err = fmt.Errorf("sign-in failed: %s", message(err))
			}
			f.finish(s, err)
		}
	}
	switch {
	case f.err == nil:
		callbackPage(w, http.StatusOK, "Signed in to Perch. You can close this tab.")
	case errors.Is(f.err, errDenied):
		callbackPage(w, http.StatusOK, "Sign-in was denied. You can close this tab.")
	default:
		callbackPage(w, http.StatusBadRequest, failedSignIn(f.err))
	}
}

// failedSignIn is the callback page's sentence for err, whose text may end
// in a full stop of its own (the server's messages do).
func failedSignIn(err error) string {
	return "Perch could not sign in: " + strings.TrimRight(err.Error(), ".") + ". Run perch login again."
}

// exchange trades the callback's one-time code and the verifier for the
// session.
func (f *deviceFlow) exchange(ctx context.Context, code string) (*client.Session, error) {
	return f.api.ExchangeDeviceCode(ctx, f.sessionID, code, f.verifier)
}

// poll asks how the sign-in stands; the first answer after an approval with
// the user code carries the session. It reports whether the sign-in was
// approved without the code, which only the browser's callback completes.
func (f *deviceFlow) poll(ctx context.Context) (callbackOnly bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished {
		return false
	}
	st, err := f.api.DeviceSignInStatus(ctx, f.sessionID, f.verifier)
	switch {
	case err != nil:
		switch perch.ErrorCode(err) {
		case "", perch.ERATELIMITED, perch.EINTERNAL, perch.EUNAVAILABLE:
			// The network or the server, for now: the next poll may do.
		default:
			f.finish(nil, fmt.Errorf("sign-in failed: %s", message(err)))
		}
	case st.Status == perch.DeviceApproved && st.AccessToken != "":
		f.finish(&st.Session, nil)
	case st.Status == perch.DeviceApproved && st.Exchanged:
		f.finish(nil, errors.New("the sign-in was completed by another program; run perch login again"))
	case st.Status == perch.DeviceApproved && st.CallbackOnly:
		return true
	case st.Status == perch.DeviceDenied:
		f.finish(nil, errDenied)
	case st.Status == perch.DeviceExpired:
		f.finish(nil, errExpired)
	}
	return false
}

// callbackPage answers the browser with a small page saying msg.
func callbackPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Perch</title>
<style>body{font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:90vh;margin:0;color:#1f2937}main{max-width:28rem;padding:2rem;text-align:center}</style></head>
<body><main><h1>Perch</h1><p>%s</p></main></body></html>
`, html.EscapeString(msg))
}

// unreserved is RFC 7636's alphabet for code verifiers.
const unreserved = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

// newCodeVerifier returns 64 random characters of the unreserved set (about
// 386 bits).
func newCodeVerifier() string {
	// 198 is the largest multiple of 66 that fits a byte: larger bytes are
	// dropped so that b%66 favours no character.
	const limit = 256 - 256%len(unreserved)
	out := make([]byte, 0, 64)
	buf := make([]byte, 64)
	for len(out) < cap(out) {
		rand.Read(buf)
		for _, b := range buf {
			if int(b) < limit && len(out) < cap(out) {
				out = append(out, unreserved[int(b)%len(unreserved)])
			}
		}
	}
	return string(out)
}

// codeChallenge is the S256 challenge of verifier: base64url, unpadded, of
// its SHA-256.
func codeChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// openBrowser shows u in the desktop's browser. It returns once the opener
// has started: some openers live as long as the browser window.
func openBrowser(u string) error {
	// The address comes from the server; only a web page may be opened,
	// never a file or another program's scheme: the rule of a
	// notification's link, which the server keeps to as well.
	if u == "" || !perch.ValidURL(u) {
		return fmt.Errorf("not opening %q: not an http(s) address", u)
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reaps the opener whenever it ends
	return nil
}

// logout ends the sign-in on the server, when it is a session, and forgets
// it here. A server that cannot be reached or refuses does not keep the
// sign-in on this machine: the person asked to be signed out.
func (c *cli) logout(ctx context.Context, args []string) error {
	fs := c.flags("logout", "perch logout [--server URL]")
	serverFlag := fs.String("server", "", "server to sign out of (default: PERCH_SERVER, then the default sign-in)")
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
	switch {
	case si.RefreshToken != "":
		if err := st.Client(si, c.clientOpts...).Logout(ctx); err != nil {
			fmt.Fprintf(c.stderr, "Note: %s did not end the session (%s); forgetting it here anyway.\n", si.Server, message(err))
		}
	case si.APIToken != "":
		fmt.Fprintln(c.stderr, "Note: the API token itself still works; delete it on the dashboard's API tokens page to end it.")
	}
	if _, err := st.Remove(si.Server); err != nil && !errors.Is(err, creds.ErrNotSignedIn) {
		return err
	}
	fmt.Fprintf(c.stdout, "Signed out of %s.\n", si.Server)
	return nil
}
