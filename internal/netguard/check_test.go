package netguard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// refusedAddrs are addresses of every refused kind, with the word the
// refusal must give. None is ever dialled.
var refusedAddrs = []struct{ addr, why string }{
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"::1", "loopback"},
	{"10.0.0.5", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"192.168.1.1", "private"},
	{"fc00::1", "private"},
	{"fd00::1", "private"},
	{"169.254.1.1", "link-local"},
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"169.254.169.254", "metadata"},
	{"fd00:ec2::254", "metadata"},
	{"100.100.100.200", "metadata"},
	{"100.64.0.1", "shared"},
	{"100.127.255.255", "shared"},
	{"0.0.0.0", "unspecified"},
	{"::", "unspecified"},
	{"0.1.2.3", "this network"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"ff02::1", "multicast"},
	{"ff05::1:3", "multicast"},
	{"255.255.255.255", "broadcast"},
	{"240.0.0.1", "reserved"},
	{"192.0.0.170", "IETF"},
	{"192.0.2.1", "documentation"},
	{"198.51.100.1", "documentation"},
	{"203.0.113.1", "documentation"},
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"2001:2::1", "benchmarking"},
	{"192.88.99.1", "6to4 relay"},
	{"fec0::1", "site-local"},
	{"100::1", "discard"},
	{"2001::1", "Teredo"},
	{"2001:20::1", "ORCHID"},
	{"5f00::1", "SRv6"},
	{"4000::1", "global unicast space"},
	{"64:ff9b:1::a00:5", "local-use NAT64"},
	// Forms that embed a refused IPv4 address.
	{"::ffff:127.0.0.1", "IPv4-mapped address for 127.0.0.1, which is loopback (127.0.0.0/8)"},
	{"::ffff:10.0.0.5", "IPv4-mapped address for 10.0.0.5, which is private"},
	{"::ffff:169.254.169.254", "which is a cloud metadata address"},
	{"::ffff:0.0.0.0", "unspecified"},
	{"::127.0.0.1", "IPv4-compatible address for 127.0.0.1, which is loopback"},
	{"::169.254.169.254", "IPv4-compatible address for 169.254.169.254"},
	{"::8.8.8.8", "IPv4-compatible address (not routed)"},
	{"::ffff:0:127.0.0.1", "IPv4-translated address for 127.0.0.1"},
	{"64:ff9b::127.0.0.1", "NAT64 address for 127.0.0.1, which is loopback"},
	{"64:ff9b::a9fe:a9fe", "NAT64 address for 169.254.169.254"},
	{"64:ff9b::10.0.0.5", "NAT64 address for 10.0.0.5, which is private"},
	{"2002:7f00:1::1", "6to4 address for 127.0.0.1"},
	{"2002:a00:5::1", "6to4 address for 10.0.0.5"},
	// Every form of the cloud metadata address.
	{"64:ff9b::169.254.169.254", "NAT64 address for 169.254.169.254, which is a cloud metadata address"},
	{"2002:a9fe:a9fe::", "6to4 address for 169.254.169.254, which is a cloud metadata address"},
	{"2002:a9fe:a9fe:1234::1", "6to4 address for 169.254.169.254"},
	{"::ffff:0:169.254.169.254", "IPv4-translated address for 169.254.169.254"},
	{"64:ff9b::100.100.100.200", "NAT64 address for 100.100.100.200, which is a cloud metadata address"},
	{"2002:6464:64c8::", "6to4 address for 100.100.100.200"},
}

// publicAddrs are allowed; they are only parsed, never dialled.
var publicAddrs = []string{
	"8.8.8.8",
	"1.1.1.1",
	"93.184.216.34",
	"100.63.255.255",  // just below shared space
	"100.128.0.0",     // just above it
	"172.15.255.255",  // just below 172.16/12
	"172.32.0.0",      // just above it
	"192.0.1.1",       // between the IETF block and TEST-NET-1
	"223.255.255.255", // just below multicast
	"2606:4700::1111",
	"2a00:1450:4001::200e",
	"::ffff:8.8.8.8",
	"64:ff9b::808:808", // NAT64 for 8.8.8.8
	"2002:808:808::1",  // 6to4 for 8.8.8.8
}

func TestCheckRefuses(t *testing.T) {
	t.Parallel()
	var g Guard
	for _, tt := range refusedAddrs {
		t.Run(tt.addr, func(t *testing.T) {
			err := g.Check(netip.MustParseAddr(tt.addr))
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Check(%s) = %v, want a refusal", tt.addr, err)
			}
			if !strings.Contains(err.Error(), tt.why) {
				t.Errorf("Check(%s) = %q, want it to say %q", tt.addr, err, tt.why)
			}
		})
	}
}

func TestCheckRefusesIPv4MappedForms(t *testing.T) {
	t.Parallel()
	var g Guard
	for _, tt := range refusedAddrs {
		a := netip.MustParseAddr(tt.addr)
		if !a.Is4() {
			continue
		}
		mapped := netip.AddrFrom16(a.As16())
		if err := g.Check(mapped); !errors.Is(err, ErrRefused) {
			t.Errorf("Check(%s) = %v, want a refusal like %s's", mapped, err, tt.addr)
		}
	}
}

func TestCheckAllowsPublicAddresses(t *testing.T) {
	t.Parallel()
	var g Guard
	for _, addr := range publicAddrs {
		if err := g.Check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", addr, err)
		}
	}
}

func TestCheckAllowPrivateAllowsAll(t *testing.T) {
	t.Parallel()
	g := Guard{AllowPrivate: true}
	for _, tt := range refusedAddrs {
		if err := g.Check(netip.MustParseAddr(tt.addr)); err != nil {
			t.Errorf("Check(%s) with AllowPrivate = %v, want nil", tt.addr, err)
		}
	}
}

func TestCheckRefusesTheZeroAddr(t *testing.T) {
	t.Parallel()
	for _, g := range []*Guard{nil, {}, {AllowPrivate: true}} {
		if err := g.Check(netip.Addr{}); !errors.Is(err, ErrRefused) {
			t.Errorf("Check(netip.Addr{}) = %v, want a refusal", err)
		}
	}
}

// TestCheckAllowLoopbackAllowsTheHostAlone: AllowLoopback lets the host's
// own loopback addresses through, and nothing else the guard refuses: not
// the forms that carry a loopback address to another host (NAT64, 6to4,
// IPv4-compatible, IPv4-translated), nor any private or metadata address.
func TestCheckAllowLoopbackAllowsTheHostAlone(t *testing.T) {
	t.Parallel()
	g := Guard{AllowLoopback: true}
	for _, addr := range []string{"127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"} {
		if err := g.Check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("Check(%s) with AllowLoopback = %v, want nil", addr, err)
		}
	}
	for _, tt := range refusedAddrs {
		a := netip.MustParseAddr(tt.addr)
		if a.Unmap().IsLoopback() {
			continue
		}
		if err := g.Check(a); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("Check(%s) with AllowLoopback = %v, want a refusal saying %q", tt.addr, err, tt.why)
		}
	}
}
