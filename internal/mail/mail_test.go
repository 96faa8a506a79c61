package mail

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Credentials the test server accepts.
const (
	testUser = "perch"
	testPass = "s3cret/p@ss" // needs percent-encoding in a URL
)

// received is one message as the test server saw it.
type received struct {
	From string   // envelope sender
	To   []string // envelope recipients
	Data []byte   // raw message
	User string   // authenticated user; "" when the client did not AUTH
	TLS  bool     // whether the session was encrypted
}

// testServer is an in-process go-smtp server that records what it receives.
type testServer struct {
	Addr *net.TCPAddr

	mu   sync.Mutex
	msgs []received
}

type serverOptions struct {
	startTLS    *tls.Config // offer STARTTLS with this configuration
	implicitTLS *tls.Config // speak TLS from the first byte
}

// startServer listens on 127.0.0.1:0 and serves until the test ends. The
// server is ready once Listen returns: the kernel queues connections until
// Serve accepts them.
func startServer(t *testing.T, opts serverOptions) *testServer {
	t.Helper()
	ts := &testServer{}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{srv: ts, conn: c}, nil
	}))
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	s.TLSConfig = opts.startTLS
	s.ErrorLog = testLogger{t}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Addr = ln.Addr().(*net.TCPAddr)
	if opts.implicitTLS != nil {
		ln = tls.NewListener(ln, opts.implicitTLS)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
			s.Close()
		}
		ln.Close() // in case Serve had not registered it yet
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ts
}

// URL returns scheme://user:pass@127.0.0.1:port, without credentials when
// user is empty.
func (ts *testServer) URL(scheme, user, pass string) string {
	if user == "" {
		return fmt.Sprintf("%s://%s", scheme, ts.Addr)
	}
	return fmt.Sprintf("%s://%s@%s", scheme, url.UserPassword(user, pass), ts.Addr)
}

func (ts *testServer) Received() []received {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]received(nil), ts.msgs...)
}

type session struct {
	srv  *testServer
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != testUser || pass != testPass {
			return smtp.ErrAuthFailed
		}
		s.user = user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.from = from; return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error   { s.to = append(s.to, to); return nil }
func (s *session) Reset()                                      { s.from, s.to = "", nil }
func (s *session) Logout() error                               { return nil }

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	s.srv.msgs = append(s.srv.msgs, received{From: s.from, To: s.to, Data: data, User: s.user, TLS: isTLS})
	return nil
}

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }

// newCert returns a self-signed certificate for 127.0.0.1 and a pool that
// trusts it.
func newCert(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "perch test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return cfg, pool
}

// parsed is a received message taken apart.
type parsed struct {
	Header netmail.Header
	Parts  map[string]string // decoded body by media type
}

func parse(t *testing.T, raw []byte) parsed {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read message: %v\n%s", err, raw)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q (%v), want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	p := parsed{Header: msg.Header, Parts: map[string]string{}}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart() // raw: decode the transfer encoding here
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		var body io.Reader = part
		switch strings.ToLower(part.Header.Get("Content-Transfer-Encoding")) {
		case "quoted-printable":
			body = quotedprintable.NewReader(part)
		case "base64":
			body = base64.NewDecoder(base64.StdEncoding, part)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("read part: %v", err)
		}
		pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		p.Parts[pt] = string(b)
	}
	return p
}
