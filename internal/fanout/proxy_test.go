package fanout

import (
	"net"
	"sync"
	"testing"
)

// blackholeProxy forwards TCP connections to a server until Blackhole is
// called, after which the connections open at that time go silent without
// closing: the peer of a failed-over host, or behind a NAT that forgot us.
// Later connections are forwarded again.
type blackholeProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []*proxied
}

type proxied struct {
	mu     sync.Mutex
	silent bool
	pair   [2]net.Conn
}

func newBlackholeProxy(t *testing.T, target string) *blackholeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.pair[0].Close()
			c.pair[1].Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Addr is the address to dial instead of the server's.
func (p *blackholeProxy) Addr() string { return p.ln.Addr().String() }

// Blackhole silences every connection open now.
func (p *blackholeProxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.mu.Lock()
		c.silent = true
		c.mu.Unlock()
	}
}

func (p *blackholeProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxied{pair: [2]net.Conn{client, server}}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Go(func() { c.copy(server, client) })
		p.wg.Go(func() { c.copy(client, server) })
	}
}

// copy forwards from src to dst, dropping what it reads once silent, until
// either side closes.
func (c *proxied) copy(dst, src net.Conn) {
	defer c.pair[0].Close()
	defer c.pair[1].Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		c.mu.Lock()
		silent := c.silent
		c.mu.Unlock()
		if n > 0 && !silent {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
