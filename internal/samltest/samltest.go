// Package samltest is what the SAML tests share: a real identity provider
// (crewjam's samlidp) served over HTTP on loopback, a browser that signs in
// through it with an http.Client and a cookie jar, and a forger that signs
// hand-made responses with test keys, to be tampered with. Only tests
// import it.
package samltest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/xml"
	"html"
	"html/template"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewjam/saml"
	"github.com/crewjam/saml/samlidp"
	"golang.org/x/crypto/bcrypt"
)

// KeyPair is a test key and its self-signed certificate, valid from a day
// ago for a year, so that tests may move their clocks.
type KeyPair struct {
	Key  *rsa.PrivateKey
	Cert *x509.Certificate
}

// NewKeyPair makes a key pair named name: a certificate of its own over a
// key that no other key pair of tb's has (see Key).
func NewKeyPair(tb testing.TB, name string) KeyPair {
	tb.Helper()
	kp, err := certify(Key(tb), name, time.Now().Add(365*24*time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	return kp
}

// GenerateKeyPair makes a key pair named name over a new key.
func GenerateKeyPair(name string) (KeyPair, error) {
	return GenerateKeyPairUntil(name, time.Now().Add(365*24*time.Hour))
}

// GenerateKeyPairUntil makes a key pair over a new key whose certificate
// expires at notAfter.
func GenerateKeyPairUntil(name string, notAfter time.Time) (KeyPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return KeyPair{}, err
	}
	return certify(key, name, notAfter)
}

// Generating a 2048-bit RSA key costs a tenth of a second of processor
// time, and the SAML tests of a package want hundreds of them (an identity
// provider's, a service provider's per organisation): 17% of
// internal/server's test time when each was new. What a test checks of a
// key is only that it differs from the others it meets, so a process keeps
// a few and hands them out again.
var keys struct {
	mu   sync.Mutex
	pool []*rsa.PrivateKey
	used map[testing.TB][]int // the pool's keys each running test has had
	next int
}

// keyPool is how many keys a process makes at most; no test holds that
// many at once.
const keyPool = 8

// Key is a 2048-bit RSA key that no other Key of tb's is: the keys of one
// test always differ, while tests share a process's few keys between
// them.
func Key(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	keys.mu.Lock()
	defer keys.mu.Unlock()
	if keys.used == nil {
		keys.used = map[testing.TB][]int{}
	}
	if _, ok := keys.used[tb]; !ok {
		tb.Cleanup(func() {
			keys.mu.Lock()
			delete(keys.used, tb)
			keys.mu.Unlock()
		})
	}
	mine := keys.used[tb]
	if len(mine) == keyPool {
		tb.Fatalf("a test asked for more than %d distinct keys", keyPool)
	}
	for slices.Contains(mine, keys.next%keyPool) {
		keys.next++
	}
	i := keys.next % keyPool
	keys.next++
	for len(keys.pool) <= i {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			tb.Fatal(err)
		}
		keys.pool = append(keys.pool, k)
	}
	keys.used[tb] = append(mine, i)
	return keys.pool[i]
}

// certify makes a self-signed certificate named name for key, valid from a
// day ago until notAfter.
func certify(key *rsa.PrivateKey, name string, notAfter time.Time) (KeyPair, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return KeyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return KeyPair{Key: key, Cert: cert}, err
}

// Metadata is the metadata of an identity provider at base (an https URL)
// that signs with kp, as crewjam's identity provider writes it.
func Metadata(kp KeyPair, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	idp := saml.IdentityProvider{Key: kp.Key, Signer: kp.Key, Certificate: kp.Cert,
		MetadataURL: *u.JoinPath("metadata"), SSOURL: *u.JoinPath("sso")}
	b, err := xml.Marshal(idp.Metadata())
	return string(b), err
}

// IdP is a samlidp identity provider on a loopback listener.
type IdP struct {
	tb     testing.TB
	Server *samlidp.Server
	HTTP   *httptest.Server
	Keys   KeyPair
}

// NewIdP starts an identity provider. Its login form posts the
// credentials with the SAML request back to the SSO endpoint, as a real
// identity provider's sign-in page does.
func NewIdP(tb testing.TB) *IdP {
	tb.Helper()
	idp := &IdP{tb: tb, Keys: NewKeyPair(tb, "samlidp test")}
	var handler http.Handler = http.NotFoundHandler()
	idp.HTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	tb.Cleanup(idp.HTTP.Close)
	u, err := url.Parse(idp.HTTP.URL)
	if err != nil {
		tb.Fatal(err)
	}
	form := template.Must(template.New("login").Parse(`<html><p>{{.Toast}}</p>` +
		`<form method="post" action="` + idp.HTTP.URL + `/sso">` +
		`<input type="text" name="user" value="" /><input type="password" name="password" value="" />` +
		`<input type="hidden" name="SAMLRequest" value="{{.SAMLRequest}}" />` +
		`<input type="hidden" name="RelayState" value="{{.RelayState}}" />` +
		`<input type="submit" value="Log In" /></form></html>`))
	idp.Server, err = samlidp.New(samlidp.Options{URL: *u, Key: idp.Keys.Key, Signer: idp.Keys.Key, Certificate: idp.Keys.Cert,
		Store: &samlidp.MemoryStore{}, LoginFormTemplate: form, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		tb.Fatal(err)
	}
	handler = idp.Server
	return idp
}

// EntityID is the identity provider's entity ID (its metadata URL).
func (idp *IdP) EntityID() string { return idp.HTTP.URL + "/metadata" }

// Metadata is the identity provider's metadata, as it serves it.
func (idp *IdP) Metadata() string {
	idp.tb.Helper()
	res, err := http.Get(idp.EntityID())
	if err != nil {
		idp.tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		idp.tb.Fatalf("IdP metadata: %d %v", res.StatusCode, err)
	}
	return string(b)
}

// AddUser creates a user who signs in with the login name user. The
// password goes to the identity provider hashed already, at bcrypt's
// lowest cost: given in the clear, samlidp hashes it at the default cost,
// and so does every sign-in's check, a twentieth of a second of processor
// time each (11% of internal/server's test time). The sign-in checks it
// all the same.
func (idp *IdP) AddUser(user, password, email, commonName string) {
	idp.tb.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		idp.tb.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"name": user, "hashed_password": hash, "email": email, "common_name": commonName})
	idp.put("/users/"+user, "application/json", body)
}

// AddServiceProvider registers a service provider by its metadata.
func (idp *IdP) AddServiceProvider(id, metadata string) {
	idp.tb.Helper()
	idp.put("/services/"+id, "application/xml", []byte(metadata))
}

func (idp *IdP) put(path, contentType string, body []byte) {
	idp.tb.Helper()
	req, err := http.NewRequest(http.MethodPut, idp.HTTP.URL+path, bytes.NewReader(body))
	if err != nil {
		idp.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		idp.tb.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		idp.tb.Fatalf("PUT %s at the IdP: %s", path, res.Status)
	}
}

// Browser is a web browser as far as SAML needs one: cookies, forms, and
// redirects it follows only when told to.
type Browser struct {
	tb     testing.TB
	Client *http.Client
}

// NewBrowser returns a browser with an empty cookie jar.
func NewBrowser(tb testing.TB) *Browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &Browser{tb: tb, Client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Page is an answer with its body read.
type Page struct {
	Status   int
	Location string
	Body     string
	Header   http.Header
}

func (b *Browser) do(req *http.Request) Page {
	b.tb.Helper()
	res, err := b.Client.Do(req)
	if err != nil {
		b.tb.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.tb.Fatal(err)
	}
	return Page{Status: res.StatusCode, Location: res.Header.Get("Location"), Body: string(body), Header: res.Header}
}

// Get fetches rawURL without following a redirect.
func (b *Browser) Get(rawURL string) Page {
	b.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		b.tb.Fatal(err)
	}
	return b.do(req)
}

// Submit posts a form as a browser does, without following a redirect.
func (b *Browser) Submit(f Form) Page {
	b.tb.Helper()
	req, err := http.NewRequest(http.MethodPost, f.Action, strings.NewReader(f.Values.Encode()))
	if err != nil {
		b.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// Form is an HTML form: where it posts and its fields.
type Form struct {
	Action string
	Values url.Values
}

var (
	formTag  = regexp.MustCompile(`(?is)<form[^>]*\baction="([^"]*)"`)
	inputTag = regexp.MustCompile(`(?is)<input[^>]*>`)
	nameAttr = regexp.MustCompile(`(?is)\bname="([^"]*)"`)
	valAttr  = regexp.MustCompile(`(?is)\bvalue="([^"]*)"`)
)

// ParseForm reads the first form of an HTML page.
func ParseForm(tb testing.TB, page string) Form {
	tb.Helper()
	m := formTag.FindStringSubmatch(page)
	if m == nil {
		tb.Fatalf("no form in the page: %.500s", page)
	}
	f := Form{Action: html.UnescapeString(m[1]), Values: url.Values{}}
	for _, in := range inputTag.FindAllString(page, -1) {
		n := nameAttr.FindStringSubmatch(in)
		if n == nil {
			continue
		}
		v := ""
		if m := valAttr.FindStringSubmatch(in); m != nil {
			v = html.UnescapeString(m[1])
		}
		f.Values.Set(html.UnescapeString(n[1]), v)
	}
	return f
}

// SignIn follows loginURL (Perch's start of a sign-in) to the identity
// provider, signs in there as user and returns the form the identity
// provider's page would post to Perch, not yet posted.
func (idp *IdP) SignIn(b *Browser, loginURL, user, password string) Form {
	b.tb.Helper()
	start := b.Get(loginURL)
	if start.Status != http.StatusFound || !strings.HasPrefix(start.Location, idp.HTTP.URL+"/sso?") {
		b.tb.Fatalf("the sign-in did not go to the IdP: %d %q %.300s", start.Status, start.Location, start.Body)
	}
	login := b.Get(start.Location)
	if login.Status != http.StatusOK {
		b.tb.Fatalf("the IdP's SSO page: %d %.300s", login.Status, login.Body)
	}
	f := ParseForm(b.tb, login.Body)
	f.Values.Set("user", user)
	f.Values.Set("password", password)
	post := b.Submit(f)
	if post.Status != http.StatusOK || !strings.Contains(post.Body, "SAMLResponse") {
		b.tb.Fatalf("the IdP did not answer with a response: %d %.500s", post.Status, post.Body)
	}
	return ParseForm(b.tb, post.Body)
}
