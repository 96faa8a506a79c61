package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net"
	netmail "net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// stepTimeout bounds each step of an SMTP exchange (connect, each command, the
// data transfer) when the context allows longer.
const stepTimeout = 30 * time.Second

// SMTP sends messages through an SMTP server, one connection per message:
// transactional mail is rare enough that a pool is not worth its failure
// modes.
type SMTP struct {
	cfg Config
}

// NewSMTP returns an SMTP sender for cfg, or an error when cfg is incomplete.
func NewSMTP(cfg Config) (*SMTP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &SMTP{cfg: cfg}, nil
}

// Send delivers m as a multipart/alternative message with a text and an HTML
// part. It gives up when ctx is done: cancelling ctx closes the connection.
// Errors name the server but never the password.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	_, err := s.Deliver(ctx, m)
	return err
}

// Deliver is Send that also returns the server's reply to the message
// (such as "2.0.0 Ok: queued as 4F2A"), for the admin's test send.
func (s *SMTP) Deliver(ctx context.Context, m Message) (reply string, err error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("mail: send %s to %s: %w", m.Kind, m.To, err)
	}
	msg, err := s.message(m)
	if err != nil {
		return "", err
	}

	// go-mail dials through d, which also remembers the socket so that it is
	// closed whatever happens: go-mail leaves it open when the handshake,
	// STARTTLS or AUTH fails.
	d := &dialer{ctx: ctx, cfg: &s.cfg}
	defer d.close()

	client, err := gomail.NewClient(s.cfg.Host, s.options(d)...)
	if err != nil {
		return "", fmt.Errorf("mail: SMTP client for %s: %w", s.cfg.addr(), err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		// A socket closed by cancellation surfaces as a network error;
		// report the reason the caller can act on.
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return "", fmt.Errorf("mail: send %s to %s via %s: %w", m.Kind, m.To, s.cfg.addr(), err)
	}
	return msg.ServerResponse(), nil
}

func (s *SMTP) options(d *dialer) []gomail.Option {
	opts := []gomail.Option{
		gomail.WithPort(s.cfg.Port),
		gomail.WithTimeout(stepTimeout),
		gomail.WithDialContextFunc(d.dial),
		gomail.WithTLSConfig(s.cfg.tlsConfig()),
	}
	switch s.cfg.TLS {
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit:
		// The dialer already wrapped the connection in TLS; STARTTLS on top
		// of it would be an error.
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.cfg.Username != "" {
		// PLAIN and LOGIN are what every relay offers; go-mail refuses both
		// over an unencrypted connection to anything but localhost, so a
		// password never crosses the network in the clear. Servers offering
		// neither fall back to go-mail's discovery (SCRAM, CRAM-MD5).
		opts = append(opts,
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(s.cfg.Username),
			gomail.WithPassword(s.cfg.Password),
		)
	}
	return opts
}

// message builds the go-mail message for m.
func (s *SMTP) message(m Message) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.cfg.From); err != nil {
		return nil, fmt.Errorf("mail: From address %q: %w", s.cfg.From, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("mail: recipient %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageIDWithValue(messageID(s.cfg.From))
	// RFC 3834: tells autoresponders not to answer.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	if m.Unsubscribe != "" {
		// RFC 8058: a mail client offers its own unsubscribe button, which
		// POSTs List-Unsubscribe=One-Click to the URL.
		msg.SetListUnsubscribe(m.Unsubscribe)
		msg.SetListUnsubscribePost()
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}

// messageID returns a random Message-ID in the From address's domain rather
// than the host name go-mail would use, which inside a container is
// meaningless and makes spam filters suspicious.
func messageID(from string) string {
	domain := "perch.invalid"
	if a, err := netmail.ParseAddress(from); err == nil {
		if i := strings.LastIndexByte(a.Address, '@'); i >= 0 && i < len(a.Address)-1 {
			domain = a.Address[i+1:]
		}
	}
	return rand.Text() + "@" + domain
}

func (c Config) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: c.Host, RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
}

// dialer connects to the server for go-mail. It ties the socket to the
// caller's context, which go-mail only consults while connecting, and does
// implicit TLS itself so that it can hold on to the raw socket.
type dialer struct {
	ctx  context.Context
	cfg  *Config
	conn net.Conn    // the raw socket, once dialled
	stop func() bool // unregisters the close-on-cancel hook
}

// dial is go-mail's DialContextFunc. go-mail calls it synchronously from
// Send's goroutine, so the fields it sets need no lock. The address go-mail
// passes is ignored: it does not bracket IPv6 literals.
func (d *dialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, d.cfg.addr())
	if err != nil {
		return nil, err
	}
	d.conn = conn
	d.stop = context.AfterFunc(d.ctx, func() { conn.Close() })
	if d.cfg.TLS != TLSImplicit {
		return conn, nil
	}
	tc := tls.Client(conn, d.cfg.tlsConfig())
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// close releases the socket. After a clean QUIT it is already closed and the
// second Close is harmless.
func (d *dialer) close() {
	if d.stop != nil {
		d.stop()
	}
	if d.conn != nil {
		d.conn.Close()
	}
}
