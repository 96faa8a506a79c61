// Package creds keeps the perch client's sign-ins on disk: one per server,
// in os.UserConfigDir()/perch/credentials.json (mode 0600), and, per server
// and per consumer (`perch listen`, the tray), the id of the last
// notification it handled, so that a restart neither misses nor repeats one.
//
// Several processes may share a sign-in. Refresh tokens rotate and a spent
// one must not be used again, so renewals happen under a lock file, and a
// process adopts a pair that another one stored meanwhile.
package creds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/perch-dev/perch/client"
)

// SignIn is what the client holds for one server: a session's token pair,
// or an API token.
type SignIn struct {
	Server       string `json:"-"`
	Email        string `json:"email,omitempty"`
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	APIToken     string `json:"api_token,omitempty"`
}

// file is credentials.json.
type file struct {
	Default string             `json:"default"`
	Servers map[string]*SignIn `json:"servers"`
}

// ErrNotSignedIn is returned for a server the client has no sign-in for.
var ErrNotSignedIn = errors.New("not signed in")

// Store is the client's configuration directory.
type Store struct {
	dir string
}

// Open returns the store in dir, or in os.UserConfigDir()/perch when dir is
// "" (PERCH_CONFIG_DIR overrides it, for tests and for several profiles).
func Open(dir string) (*Store, error) {
	if dir == "" {
		dir = os.Getenv("PERCH_CONFIG_DIR")
	}
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("finding the configuration directory: %w", err)
		}
		dir = filepath.Join(base, "perch")
	}
	return &Store{dir: dir}, nil
}

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// NormalizeServer checks a server URL and returns it without a trailing
// slash: "https://perch.example.com".
func NormalizeServer(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not a server URL such as https://perch.example.com", raw)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

func (s *Store) path() string { return filepath.Join(s.dir, "credentials.json") }

// Version tells one state of the credentials file from another without
// reading it. Every change replaces the file with a new one (writeFile), so
// a process that compares versions learns at once, and cheaply, that
// another one signed in or out.
type Version struct {
	fi os.FileInfo // nil: no file
}

// Version is the credentials file's version now.
func (s *Store) Version() Version {
	fi, err := os.Stat(s.path())
	if err != nil {
		return Version{}
	}
	return Version{fi: fi}
}

// Same reports whether v and w are the same version of the file: the same
// file (not one that replaced it), of the same size and time.
func (v Version) Same(w Version) bool {
	if v.fi == nil || w.fi == nil {
		return v.fi == nil && w.fi == nil
	}
	return os.SameFile(v.fi, w.fi) && v.fi.Size() == w.fi.Size() && v.fi.ModTime().Equal(w.fi.ModTime())
}

func (s *Store) read() (*file, error) {
	f := &file{Servers: map[string]*SignIn{}}
	b, err := os.ReadFile(s.path())
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.path(), err)
	}
	if f.Servers == nil {
		f.Servers = map[string]*SignIn{}
	}
	for server, si := range f.Servers {
		si.Server = server
	}
	return f, nil
}

func (s *Store) write(f *file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(s.path(), append(b, '\n'))
}

// writeFile replaces path atomically with data, readable by its owner only.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Get returns the sign-in for server, or for the default server when server
// is "".
func (s *Store) Get(server string) (*SignIn, error) {
	var si *SignIn
	err := s.locked(func(f *file) (bool, error) {
		if server == "" {
			server = f.Default
		}
		si = f.Servers[server]
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if si == nil {
		if server == "" {
			return nil, fmt.Errorf("%w: run perch login", ErrNotSignedIn)
		}
		return nil, fmt.Errorf("%w to %s: run perch login --server %s", ErrNotSignedIn, server, server)
	}
	return si, nil
}

// Put stores a sign-in and makes its server the default.
func (s *Store) Put(si *SignIn) error {
	return s.locked(func(f *file) (bool, error) {
		f.Servers[si.Server] = si
		f.Default = si.Server
		return true, nil
	})
}

// Remove forgets the sign-in for server ("" for the default one) and returns
// it. Another server, if any, becomes the default.
func (s *Store) Remove(server string) (*SignIn, error) {
	var gone *SignIn
	err := s.locked(func(f *file) (bool, error) {
		if server == "" {
			server = f.Default
		}
		gone = f.Servers[server]
		if gone == nil {
			return false, nil
		}
		delete(f.Servers, server)
		if f.Default == server {
			f.Default = ""
			for other := range f.Servers {
				f.Default = other
				break
			}
		}
		return true, nil
	})
	if err == nil && gone == nil {
		err = fmt.Errorf("%w to %s", ErrNotSignedIn, server)
	}
	return gone, err
}

// Client returns an API client of the sign-in's server, signed in with it.
// Renewed tokens are stored, under the lock shared by every process.
func (s *Store) Client(si *SignIn, opts ...client.Option) *client.Client {
	if si.APIToken != "" {
		opts = append(opts, client.WithAPIToken(si.APIToken))
	} else {
		opts = append(opts, client.WithAccessToken(si.AccessToken, si.RefreshToken), client.WithRenewer(s.renewer(si.Server)))
	}
	return client.New(si.Server, opts...)
}

// renewer renews a server's session once across processes: under the lock,
// a pair stored since this process read its own is adopted as it is.
func (s *Store) renewer(server string) client.Renewer {
	return func(ctx context.Context, used string, refresh func(context.Context, string) (string, string, error)) (access, rotated string, err error) {
		err = s.locked(func(f *file) (bool, error) {
			si := f.Servers[server]
			if si != nil && si.RefreshToken != "" && si.RefreshToken != used {
				access, rotated = si.AccessToken, si.RefreshToken // another process renewed it
				return false, nil
			}
			var rerr error
			if access, rotated, rerr = refresh(ctx, used); rerr != nil {
				return false, rerr
			}
			if si == nil { // signed out meanwhile: keep going, but store nothing
				return false, nil
			}
			si.AccessToken, si.RefreshToken = access, rotated
			return true, nil
		})
		return access, rotated, err
	}
}

// locked runs fn on the file under the lock, and writes the file when fn
// says it changed it.
func (s *Store) locked(fn func(*file) (bool, error)) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(s.dir, "credentials.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	changed, err := fn(f)
	if err != nil || !changed {
		return err
	}
	return s.write(f)
}

// LastID returns the id of the last notification consumer handled from
// server, or "".
func (s *Store) LastID(server, consumer string) string {
	b, err := os.ReadFile(s.resumePath(server, consumer))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SetLastID records the id of the last notification consumer handled.
func (s *Store) SetLastID(server, consumer, id string) error {
	return writeFile(s.resumePath(server, consumer), []byte(id+"\n"))
}

func (s *Store) resumePath(server, consumer string) string {
	h := sha256.Sum256([]byte(server))
	return filepath.Join(s.dir, "resume", consumer+"-"+hex.EncodeToString(h[:6]))
}
