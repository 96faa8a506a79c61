package netguard

import (
	"fmt"
	"net/netip"
)

// refusedRange is a range of addresses the guard refuses, and why, said so
// that "<address> is <why>" reads as a sentence.
type refusedRange struct {
	prefix netip.Prefix
	why    string
}

func refuse(prefix, why string) refusedRange {
	return refusedRange{prefix: netip.MustParsePrefix(prefix), why: why}
}

// refusedV4 are the IPv4 ranges a forward may not reach: the special-purpose
// registry (RFC 6890 and its updates) less the few globally reachable
// entries. The first match names the reason, so single addresses come first.
var refusedV4 = []refusedRange{
	refuse("169.254.169.254/32", "a cloud metadata address"),
	refuse("100.100.100.200/32", "a cloud metadata address"),
	refuse("255.255.255.255/32", "the broadcast address"),
	refuse("0.0.0.0/32", "the unspecified address"),
	refuse("0.0.0.0/8", `in "this network"`), // reaches the host itself on Linux
	refuse("10.0.0.0/8", "private"),
	refuse("100.64.0.0/10", "shared address space (carrier-grade NAT)"), // some clouds keep services here
	refuse("127.0.0.0/8", "loopback"),
	refuse("169.254.0.0/16", "link-local"),
	refuse("172.16.0.0/12", "private"),
	refuse("192.0.0.0/24", "reserved for IETF protocol assignments"),
	refuse("192.0.2.0/24", "reserved for documentation"),
	refuse("192.88.99.0/24", "a deprecated 6to4 relay address"),
	refuse("192.168.0.0/16", "private"),
	refuse("198.18.0.0/15", "reserved for benchmarking"), // used inside networks (VPNs, fake-IP DNS)
	refuse("198.51.100.0/24", "reserved for documentation"),
	refuse("203.0.113.0/24", "reserved for documentation"),
	refuse("224.0.0.0/4", "multicast"),
	refuse("240.0.0.0/4", "reserved"),
}

// refusedV6 are the IPv6 ranges refused outright. Forms that embed an IPv4
// address are handled before this list, and anything outside 2000::/3 after
// it.
var refusedV6 = []refusedRange{
	refuse("::/128", "the unspecified address"),
	refuse("::1/128", "loopback"),
	refuse("fd00:ec2::254/128", "a cloud metadata address"),
	refuse("64:ff9b:1::/48", "local-use NAT64"), // translates into the site's own network
	refuse("100::/64", "discard-only"),
	refuse("2001::/32", "Teredo"), // embeds an obfuscated IPv4 address
	refuse("2001:2::/48", "reserved for benchmarking"),
	refuse("2001:10::/28", "ORCHID"),
	refuse("2001:20::/28", "ORCHIDv2"),
	refuse("2001:db8::/32", "reserved for documentation"),
	refuse("3fff::/20", "reserved for documentation"),
	refuse("5f00::/16", "an SRv6 segment identifier"),
	refuse("fc00::/7", "private (unique local)"),
	refuse("fe80::/10", "link-local"),
	refuse("fec0::/10", "site-local"),
	refuse("ff00::/8", "multicast"),
}

// IPv6 ranges that carry an IPv4 address in their low 32 bits, and the
// global unicast space outside which nothing is reached.
var (
	compatible    = netip.MustParsePrefix("::/96")           // IPv4-compatible, deprecated (RFC 4291)
	translated    = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated (RFC 2765)
	nat64         = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64 (RFC 6052)
	sixToFour     = netip.MustParsePrefix("2002::/16")       // 6to4: the IPv4 address in bits 16-47
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// refusal says why a may not be reached, or "" when it may. a carries no
// zone.
func refusal(a netip.Addr) string {
	if a.Is4In6() {
		return embedded(a.Unmap(), "an IPv4-mapped address", false)
	}
	if a.Is4() {
		for _, r := range refusedV4 {
			if r.prefix.Contains(a) {
				return describe(r)
			}
		}
		return ""
	}
	for _, r := range refusedV6[:2] { // :: and ::1 before the IPv4-compatible range that holds them
		if r.prefix.Contains(a) {
			return describe(r)
		}
	}
	switch {
	case compatible.Contains(a):
		return embedded(low32(a), "an IPv4-compatible address", true)
	case translated.Contains(a):
		return embedded(low32(a), "an IPv4-translated address", true)
	case nat64.Contains(a):
		return embedded(low32(a), "a NAT64 address", false)
	case sixToFour.Contains(a):
		b := a.As16()
		return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "a 6to4 address", false)
	}
	for _, r := range refusedV6[2:] {
		if r.prefix.Contains(a) {
			return describe(r)
		}
	}
	if !globalUnicast.Contains(a) {
		return "outside the global unicast space (2000::/3)"
	}
	return ""
}

// embedded judges an IPv6 address by the IPv4 address v4 it carries: form
// says what kind it is, and always whether the form is refused whatever it
// carries.
func embedded(v4 netip.Addr, form string, always bool) string {
	if why := refusal(v4); why != "" {
		return fmt.Sprintf("%s for %s, which is %s", form, v4, why)
	}
	if always {
		return form + " (not routed)"
	}
	return ""
}

// low32 is the IPv4 address in the last 32 bits of a.
func low32(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

// describe is why r is refused, with the range unless it is one address.
func describe(r refusedRange) string {
	if r.prefix.IsSingleIP() {
		return r.why
	}
	return fmt.Sprintf("%s (%s)", r.why, r.prefix)
}
