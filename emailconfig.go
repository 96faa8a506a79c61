package perch

import (
	"net/mail"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// TLS modes of the e-mail settings (docs/DESIGN.md, Mail: sending, the outbox
// and the settings).
const (
	MailTLSNone     = "none"     // plain SMTP, never upgraded
	MailTLSStartTLS = "starttls" // STARTTLS, required
	MailTLSImplicit = "tls"      // TLS from the first byte (port 465)
)

// Where the e-mail settings in force come from: an admin's, stored in the
// database, win over the environment's (PERCH_SMTP_URL), and without either
// mail waits in the outbox.
const (
	MailSourceDatabase    = "database"
	MailSourceEnvironment = "environment"
	MailSourceNone        = "none"
)

// EmailConfig is the SMTP settings in force as an admin reads them. The
// password is never answered, only whether there is one.
type EmailConfig struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Username    string `json:"username"`
	From        string `json:"from"`
	TLS         string `json:"tls"`
	PasswordSet bool   `json:"password_set"`
	Source      string `json:"source"`
}

// EmailSettings are the SMTP settings an admin stores. A nil Password keeps
// the stored one; "" removes it.
type EmailSettings struct {
	Host     string  `json:"host"`
	Port     int     `json:"port"`
	Username string  `json:"username"`
	Password *string `json:"password"`
	From     string  `json:"from"`
	TLS      string  `json:"tls"`
}

// Limits of the e-mail settings.
const (
	MaxSMTPUsernameLen = 254
	MaxSMTPPasswordLen = 1000
	maxHostLen         = 253
)

// Validate reports every problem with the settings at once: a host that is
// a plain host name or IP address (no scheme, port or path), a port from 1
// to 65535, a From address (a display name may go with it), one of the
// three TLS modes, and no sign-in without TLS to anything but localhost,
// since that would send the password in the clear.
func (e *EmailSettings) Validate() error {
	p := Problems{}
	e.Host, e.Username, e.From = strings.TrimSpace(e.Host), strings.TrimSpace(e.Username), strings.TrimSpace(e.From)
	switch {
	case e.Host == "":
		p.Add("host", "is required")
	case !validHost(e.Host):
		p.Add("host", "must be a host name or an IP address, without a scheme or port")
	}
	if e.Port < 1 || e.Port > 65535 {
		p.Add("port", "must be a number from 1 to 65535")
	}
	if e.Username != "" {
		validateText(p, "username", e.Username, MaxSMTPUsernameLen, SingleLine)
	}
	if e.Password != nil && *e.Password != "" {
		if utf8.RuneCountInString(*e.Password) > MaxSMTPPasswordLen {
			p.Add("password", "must be at most 1000 characters")
		}
		CheckText(p, "password", *e.Password, SingleLine)
	}
	if e.From == "" {
		p.Add("from", "is required")
	} else if !validFrom(e.From) {
		p.Add("from", "must be an e-mail address, such as Perch <perch@example.com>")
	}
	switch e.TLS {
	case MailTLSNone:
		if e.Username != "" && e.Host != "" && !isLocalhost(e.Host) {
			p.Add("tls", "must be starttls or tls to sign in to a server other than localhost: the password would cross the network in the clear")
		}
	case MailTLSStartTLS, MailTLSImplicit:
	case "":
		p.Add("tls", "is required: none, starttls or tls")
	default:
		p.Add("tls", "must be none, starttls or tls")
	}
	return p.Err()
}

// validFrom reports whether s is one address, with or without a display
// name, whose domain has a dot or is localhost (PERCH_MAIL_FROM's default).
func validFrom(s string) bool {
	if TextProblem(s, SingleLine) != "" || len(s) > 2*MaxEmailLen {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return false
	}
	domain := a.Address[strings.LastIndexByte(a.Address, '@')+1:]
	return strings.Contains(domain, ".") || domain == "localhost"
}

// isLocalhost is where an SMTP password may go without TLS: the names the
// mail library itself allows.
func isLocalhost(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// validHost reports whether h is an IP address (without a zone) or a host
// name of letters, digits and hyphens.
func validHost(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	if len(h) > maxHostLen {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
