// Package mailtest runs a real SMTP server in-process for tests: Perch's
// mail goes over a socket to it and tests read what arrived.
package mailtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message as it arrived.
type Message struct {
	From    string // envelope sender
	To      string // envelope recipient
	Subject string
	Text    string // the text/plain part, decoded
	HTML    string // the text/html part, decoded
	Header  netmail.Header
	User    string // who signed in to send it ("" when no one did)
}

var linkPattern = regexp.MustCompile(`https?://[^\s"<>]+`)

// Link returns the first link in the text part, or "".
func (m Message) Link() string { return linkPattern.FindString(m.Text) }

// Server is an SMTP server on 127.0.0.1 that keeps every message.
type Server struct {
	addr       string
	user, pass string // the one sign-in StartWithLogin accepts

	mu      sync.Mutex
	msgs    []Message
	taken   map[int]bool
	arrived chan struct{} // closed and replaced on each arrival
}

// Start serves until tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, &Server{})
}

// StartWithLogin serves until tb ends, and takes mail only from a client
// that signs in (AUTH PLAIN, allowed without TLS) as user with pass.
func StartWithLogin(tb testing.TB, user, pass string) *Server {
	tb.Helper()
	return start(tb, &Server{user: user, pass: pass})
}

func start(tb testing.TB, s *Server) *Server {
	s.taken, s.arrived = map[int]bool{}, make(chan struct{})
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		if s.user != "" {
			return &authSession{session{srv: s}}, nil
		}
		return &session{srv: s}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = s.user != ""
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ln.Close()
		<-done
	})
	return s
}

// URL is the PERCH_SMTP_URL that reaches the server.
func (s *Server) URL() string { return "smtp://" + s.addr }

// WaitFor returns the oldest message to the recipient that no earlier call
// returned, waiting up to ten seconds for one to arrive.
func (s *Server) WaitFor(tb testing.TB, to string) Message {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		for i, m := range s.msgs {
			if !s.taken[i] && strings.EqualFold(m.To, to) {
				s.taken[i] = true
				s.mu.Unlock()
				return m
			}
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline:
			tb.Fatalf("no mail to %s arrived within 10s", to)
		}
	}
}

// Count returns how many messages to the recipient arrived.
func (s *Server) Count(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if strings.EqualFold(m.To, to) {
			n++
		}
	}
	return n
}

func (s *Server) add(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

type session struct {
	srv  *Server
	user string // signed in as
	from string
	to   []string
}

// authSession is the session of a server that wants a sign-in.
type authSession struct{ session }

func (as *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (as *authSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != as.srv.user || pass != as.srv.pass {
			return smtp.ErrAuthFailed
		}
		as.user = user
		return nil
	}), nil
}

func (as *authSession) Mail(from string, opts *smtp.MailOptions) error {
	if as.user == "" {
		return smtp.ErrAuthRequired
	}
	return as.session.Mail(from, opts)
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error { ss.from = from; return nil }
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error   { ss.to = append(ss.to, to); return nil }
func (ss *session) Reset()                                      { ss.from, ss.to = "", nil }
func (ss *session) Logout() error                               { return nil }

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := decode(raw)
	if err != nil {
		return fmt.Errorf("mailtest: %w", err)
	}
	m.From, m.User = ss.from, ss.user
	for _, to := range ss.to {
		m.To = to
		ss.srv.add(m)
	}
	return nil
}

// decode reads the subject and the text and HTML parts of a message.
func decode(raw []byte) (Message, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, err
	}
	m := Message{Header: msg.Header}
	if m.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return m, err
	}
	return m, readParts(&m, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
}

func readParts(m *Message, contentType, encoding string, body io.Reader) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return err
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := readParts(m, part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part); err != nil {
				return err
			}
		}
	}
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	switch mt {
	case "text/plain":
		m.Text = string(b)
	case "text/html":
		m.HTML = string(b)
	}
	return nil
}
