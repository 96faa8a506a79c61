package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// stubResolver answers names from a map, never from DNS or /etc/hosts, and
// counts its lookups.
type stubResolver struct {
	names   map[string][]string
	lookups atomic.Int64
}

func (r *stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.lookups.Add(1)
	addrs, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

func newResolver(names map[string][]string) *stubResolver {
	return &stubResolver{names: names}
}

// dialRecorder is a dialer under the guard that records what it is asked
// to dial, and dials only what the test allows (loopback listeners).
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
	real  bool // dial for real; otherwise fail
}

var errStubDial = errors.New("stub dialer: not dialling")

func (d *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	if !d.real {
		return nil, errStubDial
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %s is not loopback", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialRecorder) dialled() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// countingServer is a loopback HTTP server that counts the connections it
// accepts and the requests it answers.
type countingServer struct {
	*httptest.Server
	conns, requests atomic.Int64
	port            string
}

func mustServer(t testing.TB, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.port = u.Port()
	return s
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "reached") }

func mustClient(t testing.TB, g *Guard) *http.Client {
	t.Helper()
	c := g.Client(5 * time.Second)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func get(c *http.Client, rawURL string) (string, error) {
	res, err := c.Get(rawURL)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return string(body), err
}

func TestClientRefusesEverySpellingOfLoopback(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, ok)
	g := &Guard{Resolver: newResolver(map[string][]string{"localhost": {"127.0.0.1"}})}
	c := mustClient(t, g)
	for _, host := range []string{
		"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "0.0.0.0", "127.1", "[::1]",
		"2130706433", "0x7f000001", "0x7f.1", "017700000001", "127.000.000.001", "127.0.0.1.",
		"[::127.0.0.1]", "[64:ff9b::7f00:1]", "[0:0:0:0:0:ffff:7f00:1]", "0",
	} {
		rawURL := "http://" + host + ":" + srv.port + "/"
		if _, err := get(c, rawURL); !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s: %v, want a refusal", rawURL, err)
		}
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("the loopback server accepted %d connections, want 0", n)
	}
}

func TestDialRefusesNamesThatResolveToRefusedAddresses(t *testing.T) {
	t.Parallel()
	r := newResolver(map[string][]string{
		"metadata.test": {"169.254.169.254"},
		"intranet.test": {"10.0.0.5"},
		"mixed.test":    {"93.184.216.34", "10.0.0.5"},
		"v6.test":       {"fd00::1"},
		"mapped.test":   {"::ffff:192.168.0.1"},
	})
	d := &dialRecorder{}
	g := &Guard{Resolver: r, dial: d.dial}
	c := mustClient(t, g)
	for _, tt := range []struct{ host, why string }{
		{"metadata.test", "resolves to 169.254.169.254, which is a cloud metadata address"},
		{"intranet.test", "resolves to 10.0.0.5, which is private"},
		{"mixed.test", "resolves to 10.0.0.5, which is private"},
		{"v6.test", "resolves to fd00::1, which is private"},
		{"mapped.test", "resolves to 192.168.0.1, which is private"},
	} {
		_, err := g.DialContext(t.Context(), "tcp", tt.host+":443")
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), tt.host) {
			t.Errorf("DialContext(%s) = %v, want a refusal saying %q", tt.host, err, tt.why)
		}
		if _, err := get(c, "http://"+tt.host+"/"); !errors.Is(err, ErrRefused) {
			t.Errorf("GET http://%s/: %v, want a refusal", tt.host, err)
		}
	}
	if got := d.dialled(); len(got) != 0 {
		t.Errorf("dialled %v, want nothing", got)
	}
}

func TestDialDialsTheCheckedAddressNotTheNameAgain(t *testing.T) {
	t.Parallel()
	r := newResolver(map[string][]string{"public.test": {"93.184.216.34"}})
	d := &dialRecorder{}
	g := &Guard{Resolver: r, dial: d.dial}
	if _, err := g.DialContext(t.Context(), "tcp", "public.test:8443"); !errors.Is(err, errStubDial) {
		t.Fatalf("DialContext: %v, want the stub dialer's error", err)
	}
	if got := d.dialled(); len(got) != 1 || got[0] != "93.184.216.34:8443" {
		t.Errorf("dialled %v, want [93.184.216.34:8443]", got)
	}
	if n := r.lookups.Load(); n != 1 {
		t.Errorf("resolved %d times, want once", n)
	}
}

func TestDialTriesEachCheckedAddressOfTheNetwork(t *testing.T) {
	t.Parallel()
	r := newResolver(map[string][]string{"two.test": {"2606:4700::1111", "93.184.216.34"}})
	for _, tt := range []struct {
		network string
		want    []string
	}{
		{"tcp", []string{"[2606:4700::1111]:443", "93.184.216.34:443"}},
		{"tcp4", []string{"93.184.216.34:443"}},
		{"tcp6", []string{"[2606:4700::1111]:443"}},
	} {
		d := &dialRecorder{}
		g := &Guard{Resolver: r, dial: d.dial}
		if _, err := g.DialContext(t.Context(), tt.network, "two.test:443"); !errors.Is(err, errStubDial) {
			t.Errorf("DialContext(%s): %v, want the stub dialer's error", tt.network, err)
		}
		if got := d.dialled(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("DialContext(%s) dialled %v, want %v", tt.network, got, tt.want)
		}
	}
}

func TestDialErrors(t *testing.T) {
	t.Parallel()
	d := &dialRecorder{}
	g := &Guard{Resolver: newResolver(nil), dial: d.dial}
	for _, tt := range []struct {
		network, addr string
		refused       bool
		says          string
	}{
		{"tcp", "unknown.test:80", false, "no such host"},
		{"udp", "93.184.216.34:53", false, "not supported"},
		{"tcp", "93.184.216.34", true, "not host:port"},
		{"tcp", "93.184.216.34:http", true, "not a port"},
		{"tcp", "93.184.216.34:0", true, "not a port"},
		{"tcp", "93.184.216.34:65536", true, "not a port"},
		{"tcp", ":80", true, "empty"},
		{"tcp", "1.2.3.4.5:80", true, "cannot be read"},
		{"tcp6", "93.184.216.34:80", false, "no address for tcp6"},
	} {
		_, err := g.DialContext(t.Context(), tt.network, tt.addr)
		if err == nil || errors.Is(err, ErrRefused) != tt.refused || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("DialContext(%s, %s) = %v, want an error saying %q (refused: %v)", tt.network, tt.addr, err, tt.says, tt.refused)
		}
	}
	if got := d.dialled(); len(got) != 0 {
		t.Errorf("dialled %v, want nothing", got)
	}
}

// loopbackAllowed is a guard that lets 127.0.0.1 through, so that a
// loopback server can stand in for a public one, and resolves names from
// the map.
func loopbackAllowed(names map[string][]string) (*Guard, *dialRecorder) {
	d := &dialRecorder{real: true}
	return &Guard{
		Resolver: newResolver(names),
		dial:     d.dial,
		allow:    func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.1") },
	}, d
}

func TestClientChecksEveryRedirect(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"http://intranet.test/",
		"http://10.0.0.5/",
		"http://[::ffff:10.0.0.5]/",
		"http://169.254.169.254/latest/meta-data/",
		"http://0xa9fea9fe/",
		"http://localhost/",
		"https://intranet.test/",
	} {
		t.Run(target, func(t *testing.T) {
			srv := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			})
			g, d := loopbackAllowed(map[string][]string{"intranet.test": {"10.0.0.5"}, "localhost": {"::1"}})
			_, err := get(mustClient(t, g), srv.URL)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("GET: %v, want a refusal", err)
			}
			if got := d.dialled(); len(got) != 1 || got[0] != "127.0.0.1:"+srv.port {
				t.Errorf("dialled %v, want the first server only", got)
			}
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("the first server answered %d requests, want 1", n)
			}
		})
	}
}

func TestClientRedirects(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/hops/%d", &n); err == nil && n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
			return
		}
		switch r.URL.Path {
		case "/ftp":
			http.Redirect(w, r, "ftp://example.com/", http.StatusFound)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		default:
			io.WriteString(w, "reached")
		}
	})
	g, _ := loopbackAllowed(nil)
	c := mustClient(t, g)
	for _, tt := range []struct {
		path    string
		refused bool
		says    string
	}{
		{"/hops/3", false, ""},
		{"/hops/4", false, "stopped after 3 redirects"},
		{"/ftp", true, `a redirect to a "ftp" URL`},
		{"/file", true, `a redirect to a "file" URL`},
	} {
		body, err := get(c, srv.URL+tt.path)
		switch {
		case tt.says == "" && (err != nil || body != "reached"):
			t.Errorf("GET %s = %q, %v; want it reached", tt.path, body, err)
		case tt.says != "" && (err == nil || errors.Is(err, ErrRefused) != tt.refused || !strings.Contains(err.Error(), tt.says)):
			t.Errorf("GET %s = %v, want an error saying %q (refused: %v)", tt.path, err, tt.says, tt.refused)
		}
	}
}

func TestClientDropsTheSignatureOnARedirectToAnotherHost(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]string{} // path → signature header received
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Host+r.URL.Path] = r.Header.Get(signatureHeader)
		mu.Unlock()
	}
	other := mustServer(t, record)
	first := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, "http://other.test:"+other.port+"/in", http.StatusTemporaryRedirect)
		case "/here":
			http.Redirect(w, r, "/in", http.StatusTemporaryRedirect)
		}
	})
	g, _ := loopbackAllowed(map[string][]string{"other.test": {"127.0.0.1"}})
	c := mustClient(t, g)
	body := []byte(`{"title":"hi"}`)
	sig := Sign("s3cret", body, time.Now())
	for _, path := range []string{"/away", "/here"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, first.URL+path, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(signatureHeader, sig)
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		res.Body.Close()
	}
	firstHost, otherHost := "127.0.0.1:"+first.port, "other.test:"+other.port
	mu.Lock()
	defer mu.Unlock()
	for key, want := range map[string]string{
		firstHost + "/away": sig, otherHost + "/in": "",
		firstHost + "/here": sig, firstHost + "/in": sig,
	} {
		if got, ok := seen[key]; !ok || got != want {
			t.Errorf("%s received signature %q (reached: %v), want %q", key, got, ok, want)
		}
	}
}

func TestAllowPrivateReachesLoopback(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, ok)
	g := &Guard{AllowPrivate: true, Resolver: newResolver(map[string][]string{"localhost": {"127.0.0.1"}})}
	c := mustClient(t, g)
	for _, host := range []string{"127.0.0.1", "localhost", "127.1", "2130706433"} {
		rawURL := "http://" + host + ":" + srv.port + "/"
		if body, err := get(c, rawURL); err != nil || body != "reached" {
			t.Errorf("GET %s = %q, %v; want it reached", rawURL, body, err)
		}
	}
	if n := srv.requests.Load(); n != 4 {
		t.Errorf("the loopback server answered %d requests, want 4", n)
	}
}

// TestAllowLoopbackReachesLoopbackAlone: a guard with AllowLoopback reaches
// a loopback server however its address is spelled, and refuses, before
// dialling, the forms that only carry a loopback address and the names
// that resolve to private or metadata addresses.
func TestAllowLoopbackReachesLoopbackAlone(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, ok)
	d := &dialRecorder{real: true} // dials loopback only, whatever the guard says
	g := &Guard{AllowLoopback: true, dial: d.dial, Resolver: newResolver(map[string][]string{
		"localhost": {"127.0.0.1"}, "metadata.test": {"169.254.169.254"}, "nat64.test": {"64:ff9b::a9fe:a9fe"},
		"6to4.test": {"2002:a9fe:a9fe::"}, "intranet.test": {"10.0.0.5"}})}
	c := mustClient(t, g)
	for _, host := range []string{"127.0.0.1", "localhost", "127.1", "2130706433", "[::ffff:127.0.0.1]"} {
		rawURL := "http://" + host + ":" + srv.port + "/"
		if body, err := get(c, rawURL); err != nil || body != "reached" {
			t.Errorf("GET %s = %q, %v; want it reached", rawURL, body, err)
		}
	}
	for _, host := range []string{"[64:ff9b::7f00:1]", "[2002:7f00:1::]", "[::127.0.0.1]", "0.0.0.0",
		"metadata.test", "nat64.test", "6to4.test", "intranet.test", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::]"} {
		rawURL := "http://" + host + ":" + srv.port + "/"
		if _, err := get(c, rawURL); !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s: %v, want a refusal", rawURL, err)
		}
	}
	for _, addr := range d.dialled() {
		if ap := netip.MustParseAddrPort(addr); !ap.Addr().IsLoopback() {
			t.Errorf("dialled %s", addr)
		}
	}
	if n := srv.requests.Load(); n != 5 {
		t.Errorf("the loopback server answered %d requests, want 5", n)
	}
}

func TestTheDialerChecksTheAddressAgainAsItConnects(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, ok)
	var g Guard // no dial hook: the real dialer and its check
	if _, err := g.baseDial(t.Context(), "tcp", "127.0.0.1:"+srv.port); !errors.Is(err, ErrRefused) {
		t.Errorf("baseDial(127.0.0.1) = %v, want a refusal", err)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("the loopback server accepted %d connections, want 0", n)
	}
}

func TestClientTakesNoProxyFromTheEnvironment(t *testing.T) {
	t.Parallel()
	var g Guard
	c := g.Client(time.Second)
	tr, isTransport := c.Transport.(*http.Transport)
	if !isTransport || tr.Proxy != nil || tr.DialContext == nil || c.Timeout != time.Second {
		t.Errorf("Client = %+v, want a transport dialling through the guard, no proxy, a 1s timeout", c)
	}
}
