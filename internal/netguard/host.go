package netguard

import (
	"errors"
	"net/netip"
	"strings"
)

// maxHostLen is the longest DNS name.
const maxHostLen = 253

// hostAddr reads host, as it comes out of net.SplitHostPort, as an address
// literal in any spelling a resolver or a browser would take for one: IPv6
// (with an embedded IPv4 part or a zone), and IPv4 as inet_aton reads it
// (127.1, 0x7f.1, 2130706433, 017700000001). isAddr is false when host is
// a name to resolve. A host that looks like an address but cannot be read
// as one, or that is no valid name, is an error: it is refused rather than
// handed to a resolver to guess at.
func hostAddr(host string) (a netip.Addr, isAddr bool, err error) {
	if host == "" {
		return netip.Addr{}, false, errors.New("the host is empty")
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false, errors.New("the host cannot be read as an IPv6 address")
		}
		return a, true, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, nil
	}
	// As the WHATWG URL standard does: a host whose last label is a number
	// is an IPv4 address, in inet_aton's spellings, or nothing.
	name := strings.TrimSuffix(host, ".")
	if numeric(name[strings.LastIndexByte(name, '.')+1:]) {
		a, ok := parseIPv4(name)
		if !ok {
			return netip.Addr{}, false, errors.New("the host cannot be read as an IPv4 address")
		}
		return a, true, nil
	}
	if !validName(name) {
		return netip.Addr{}, false, errors.New("the host is not a valid name")
	}
	return netip.Addr{}, false, nil
}

// numeric reports whether label is a decimal number or a 0x-prefixed hex
// one, which makes a host an IPv4 address.
func numeric(label string) bool {
	if label == "" {
		return false
	}
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		for _, c := range label[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range label {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseIPv4 reads s as inet_aton does: one to four parts, each decimal,
// octal (a leading 0) or hex (0x); the last part fills the bytes the others
// leave.
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		limit := uint64(0xff)
		if i == len(parts)-1 {
			limit = 1<<(8*(5-len(parts))) - 1
		}
		if n > limit {
			return netip.Addr{}, false
		}
		if i == len(parts)-1 {
			v = v<<(8*(5-len(parts))) | n
		} else {
			v = v<<8 | n
		}
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Part reads one part of an inet_aton address, at most 2³²-1.
func parseIPv4Part(p string) (uint64, bool) {
	base, digits := uint64(10), p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:] // "0x" alone is 0, as in inet_aton and browsers
	case len(p) >= 2 && p[0] == '0':
		base, digits = 8, p[1:]
	case p == "":
		return 0, false
	}
	var n uint64
	for _, c := range digits {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		n = n*base + d
		if n > 0xffffffff {
			return 0, false
		}
	}
	return n, true
}

func isHex(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validName reports whether name (without its trailing dot) is a DNS name
// of letters, digits, hyphens and underscores in non-empty labels of at
// most 63 bytes. net/http has turned international names into ASCII before
// it dials.
func validName(name string) bool {
	if name == "" || len(name) > maxHostLen {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
