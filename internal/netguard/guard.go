// Package netguard keeps every outbound call to a URL someone else chose (a
// workflow's forward step, an identity provider's metadata URL) from
// reaching into the network Perch runs in: the host itself, private
// networks and the clouds' metadata services (docs/DESIGN.md, Workflows and
// the marketplace, and SAML). It also
// signs what is forwarded, so that receivers can tell Perch's requests from
// anyone else's.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal of the guard, so that callers can
// tell a forbidden address (errors.Is) from a network failure.
var ErrRefused = errors.New("netguard: address refused")

// Refusal is the error of an address or host the guard refuses; it wraps
// ErrRefused. Why says what the address is (or what is wrong with the
// host) without naming it, for answers that must not repeat a URL that
// was kept secret: "loopback (127.0.0.0/8)", "the host is not a valid
// name".
type Refusal struct {
	said string // the whole reason, with the host or address
	Why  string
}

// unnamed is why without the address an embedding form carries ("an
// IPv4-mapped address for 127.0.0.1, which is loopback …" → "loopback …").
func unnamed(why string) string {
	if i := strings.LastIndex(why, ", which is "); i >= 0 {
		return why[i+len(", which is "):]
	}
	return why
}

func (r *Refusal) Error() string { return ErrRefused.Error() + ": " + r.said }
func (r *Refusal) Unwrap() error { return ErrRefused }

// Resolver looks up a name's addresses; *net.Resolver is one. Tests stub it
// so that names resolve to the addresses they need without DNS.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Guard refuses outbound connections to addresses such a call must not
// reach: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
// link-local (169.254/16, fe80::/10), cloud metadata (169.254.169.254,
// fd00:ec2::254, 100.100.100.200), shared (100.64/10), unspecified (0.0.0.0,
// ::) and "this network" (0/8), multicast, broadcast and reserved (240/4),
// the documentation, benchmarking and other special-purpose ranges, IPv6
// outside 2000::/3, and the IPv4-mapped, IPv4-compatible, IPv4-translated,
// NAT64 (64:ff9b::/96) and 6to4 forms of any refused IPv4 address.
// AllowPrivate (PERCH_WORKFLOW_ALLOW_PRIVATE=true) allows all addresses, for
// installations whose receivers live on their own network. AllowLoopback
// allows the host's own loopback addresses and nothing else refused.
//
// The zero Guard refuses and resolves with net.DefaultResolver. A Guard is
// safe for concurrent use.
type Guard struct {
	AllowPrivate bool
	// AllowLoopback lets 127.0.0.0/8 and ::1 through (in any spelling that
	// is one of them, ::ffff:127.0.0.1 included), for tests and development
	// servers whose counterpart listens on the same host. Forms that only
	// carry a loopback address to another host, NAT64 (64:ff9b::7f00:1) or
	// 6to4, stay refused, as does every private, link-local and metadata
	// address.
	AllowLoopback bool
	Resolver      Resolver // nil: net.DefaultResolver

	// Tests only: the dialer under the guard (nil: a net.Dialer), and
	// addresses let through whatever the rules say.
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	allow func(netip.Addr) bool
}

// Check reports why ip may not be reached, as an error wrapping
// ErrRefused, or nil when it may. A zone is ignored: the guard dials
// without it.
func (g *Guard) Check(ip netip.Addr) error {
	if why := g.refusal(ip); why != "" {
		return &Refusal{said: fmt.Sprintf("%s is %s", ip, why), Why: unnamed(why)}
	}
	return nil
}

// refusal says why ip may not be reached, or "" when it may.
func (g *Guard) refusal(ip netip.Addr) string {
	if !ip.IsValid() {
		return "no address"
	}
	if g != nil && (g.AllowPrivate || g.AllowLoopback && ip.Unmap().IsLoopback() || g.allow != nil && g.allow(ip)) {
		return ""
	}
	return refusal(ip.WithZone(""))
}

// DialContext connects to addr ("host:port") over network ("tcp", "tcp4"
// or "tcp6"), for http.Transport. A host that is an address, in any
// spelling (127.1, 0x7f.1, 2130706433, [::ffff:127.0.0.1]), is read here
// and never given to the resolver; one that looks like an address but
// cannot be read as one is refused. A name is resolved with the Resolver,
// and refused if any of its addresses is refused, so that a name with one
// public and one private address cannot reach the private one by chance.
// The guard then dials the checked addresses themselves, never the name
// again: DNS rebinding cannot swap an address between the check and the
// dial. Refusals wrap ErrRefused; failures to resolve or connect do not.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if g == nil {
		g = &Guard{}
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("netguard: network %q is not supported", network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not host:port", ErrRefused, addr)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("%w: %q is not a port", ErrRefused, portStr)
	}
	ips, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, ip := range ips {
		if network == "tcp4" && !ip.Is4() || network == "tcp6" && !ip.Is6() {
			continue
		}
		conn, err := g.baseDial(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		return nil, fmt.Errorf("netguard: %s has no address for %s", host, network)
	}
	return nil, lastErr
}

// resolve is the addresses host stands for, each checked, unmapped and
// without a zone, ready to dial.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	ip, isAddr, err := hostAddr(host)
	if err != nil {
		return nil, &Refusal{said: fmt.Sprintf("%q: %v", host, err), Why: err.Error()}
	}
	if isAddr {
		if err := g.Check(ip); err != nil {
			return nil, err
		}
		return []netip.Addr{ip.WithZone("").Unmap()}, nil
	}
	var r Resolver = net.DefaultResolver
	if g.Resolver != nil {
		r = g.Resolver
	}
	found, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("netguard: resolving %s: %w", host, err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("netguard: %s resolves to no address", host)
	}
	ips := make([]netip.Addr, 0, len(found))
	for _, f := range found {
		ip, ok := netip.AddrFromSlice(f.IP)
		ip = ip.Unmap() // resolvers give IPv4 addresses in 16 bytes
		if !ok {
			return nil, fmt.Errorf("%w: %s resolves to an address that cannot be read", ErrRefused, host)
		}
		if why := g.refusal(ip); why != "" {
			return nil, &Refusal{said: fmt.Sprintf("%s resolves to %s, which is %s", host, ip, why), Why: unnamed(why)}
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// baseDial connects to an address literal. The real dialer checks the
// address once more as the socket connects, in case anything between here
// and the kernel changed it.
func (g *Guard) baseDial(ctx context.Context, network, addr string) (net.Conn, error) {
	if g.dial != nil {
		return g.dial(ctx, network, addr)
	}
	d := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %q cannot be read", ErrRefused, address)
		}
		return g.Check(ap.Addr())
	}}
	return d.DialContext(ctx, network, addr)
}

// Limits of the guard's HTTP client.
const (
	maxRedirects      = 3
	maxResponseHeader = 64 << 10
	signatureHeader   = "X-Perch-Signature"
)

// Client is an http.Client whose every connection is dialled through the
// guard, redirects included; it takes no proxy from the environment, which
// would dial for it. timeout bounds each request, redirects and reading the
// body included (0: none). It follows at most 3 redirects, only to http
// and https URLs, and drops the X-Perch-Signature header on a redirect to
// another host, which should not get a signature it could replay.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	handshake := timeout
	if handshake <= 0 {
		handshake = 10 * time.Second
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            g.DialContext,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    handshake,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: maxResponseHeader,
			IdleConnTimeout:        90 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("netguard: stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: a redirect to a %q URL", ErrRefused, req.URL.Scheme)
			}
			if req.URL.Host != via[0].URL.Host {
				req.Header.Del(signatureHeader)
			}
			return nil
		},
	}
}
