package netguard

import (
	"net/netip"
	"testing"
)

func TestHostAddrReadsEverySpellingOfAnAddress(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ host, want string }{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"127.000.000.001", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"010.0.0.1", "8.0.0.1"}, // octal, as inet_aton and browsers read it
		{"169.254.43518", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"4294967295", "255.255.255.255"},
		{"::1", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"2606:4700::1111", "2606:4700::1111"},
	} {
		a, isAddr, err := hostAddr(tt.host)
		if err != nil || !isAddr || a != netip.MustParseAddr(tt.want) {
			t.Errorf("hostAddr(%q) = %v, %v, %v; want %s", tt.host, a, isAddr, err, tt.want)
		}
	}
}

func TestHostAddrLeavesNamesToTheResolver(t *testing.T) {
	t.Parallel()
	for _, host := range []string{
		"localhost",
		"example.com",
		"example.com.",
		"hooks.example.com",
		"1.2.3.example", // a name: its last label is not a number
		"0x7g.example",
		"_service.example.com",
		"xn--bcher-kva.example",
	} {
		if _, isAddr, err := hostAddr(host); err != nil || isAddr {
			t.Errorf("hostAddr(%q) = isAddr %v, %v; want a name", host, isAddr, err)
		}
	}
}

func TestHostAddrRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, host := range []string{
		"",
		".",
		"1.2.3.4.5",
		"256.0.0.1",
		"1.256.0.1",
		"1.2.65536",
		"4294967296",
		"99999999999999999999999",
		"09.0.0.1",   // 09 is no octal number
		"0x1g.0.0.1", // nor is a hex part with a g in it; the last label is a number
		"1..1",
		"example.123",
		"::ffff:0x7f.1",
		"[::1]",
		"::1::2",
		"exa mple.com",
		"example..com",
		"bücher.example",
		"example.com/path",
		"a%2e.example",
	} {
		if a, isAddr, err := hostAddr(host); err == nil {
			t.Errorf("hostAddr(%q) = %v, %v, nil; want an error", host, a, isAddr)
		}
	}
}

func FuzzHostAddr(f *testing.F) {
	for _, s := range []string{"127.1", "0x7f.1", "2130706433", "::ffff:127.0.0.1", "example.com", "1.2.3.4.5", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, isAddr, err := hostAddr(host)
		if err == nil && isAddr != a.IsValid() {
			t.Fatalf("hostAddr(%q) = %v, %v: an address exactly when it says so", host, a, isAddr)
		}
		if strict, perr := netip.ParseAddr(host); perr == nil && (err != nil || a != strict) {
			t.Fatalf("hostAddr(%q) = %v, %v; net/netip reads %v", host, a, err, strict)
		}
		var g Guard
		_ = g.Check(a) // must not panic, valid or not
	})
}
