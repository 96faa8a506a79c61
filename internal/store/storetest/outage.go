package storetest

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/perch-dev/perch/internal/store"
)

// Outage turns a store's database off and on again, for tests of what
// happens while it cannot serve: on SQLite the store's writer refuses every
// write (a read-only database, SQLITE_READONLY); on PostgreSQL the store
// reaches the server through a TCP proxy of the test's own, which Start
// cuts (every connection closed, new ones closed as soon as they are
// accepted) and End mends. Either way the driver reports the failure as it
// would in production; nothing of the shared server is touched.
type Outage struct {
	tb    testing.TB
	store *store.Store
	proxy *cutProxy // PostgreSQL only
}

// WithOutage returns a fresh, migrated store of the given dialect and the
// Outage that turns its database off and on.
func WithOutage(tb testing.TB, dialect store.Dialect) (*store.Store, *Outage) {
	tb.Helper()
	dsn := migrated(tb, dialect)
	o := &Outage{tb: tb}
	if dialect == store.Postgres {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatal(err)
		}
		o.proxy = newCutProxy(tb, u.Host)
		u.Host = o.proxy.ln.Addr().String()
		dsn = u.String()
	}
	o.store = open(tb, dialect, dsn)
	return o.store, o
}

// Start makes the database unable to serve the store.
func (o *Outage) Start() {
	o.tb.Helper()
	if o.proxy != nil {
		o.proxy.cut(true)
		return
	}
	if err := o.store.ReadOnlyForTest(context.Background(), true); err != nil {
		o.tb.Fatal(err)
	}
}

// End lets the database serve the store again.
func (o *Outage) End() {
	o.tb.Helper()
	if o.proxy != nil {
		o.proxy.cut(false)
		return
	}
	if err := o.store.ReadOnlyForTest(context.Background(), false); err != nil {
		o.tb.Fatal(err)
	}
}

// cutProxy forwards TCP connections to a server, or, while cut, closes
// them all.
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	isCut  bool
	conns  map[net.Conn]bool
	closed bool
}

func newCutProxy(tb testing.TB, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	tb.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// cut closes every connection and refuses new ones while on is set.
func (p *cutProxy) cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = on
	if on {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}

// track remembers c to close when the proxy is cut, or closes it now when
// it is; it reports whether c may be used.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isCut || p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *cutProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(client) {
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(server) {
			client.Close()
			continue
		}
		p.wg.Go(func() { forward(server, client) })
		p.wg.Go(func() { forward(client, server) })
	}
}

// forward copies src to dst until either closes, then closes both.
func forward(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}
