package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFileName is the key file a SQLite server keeps beside its database
// when PERCH_SECRET_KEY is not set.
const KeyFileName = "perch.key"

// LoadOrCreateKeyFile returns the key in the file at path, making the file
// first when there is none: a new random key in base64, readable by its
// owner alone (0600). The file appears whole or not at all (it is written
// under a temporary name and linked into place), and when two processes make
// it at once both end up with the one that was linked first. created says
// whether this call made it.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	key, err = ReadKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*") // mode 0600
	if err != nil {
		return nil, false, fmt.Errorf("create the key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(EncodeKey(NewKey()) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("write the key file %s: %w", path, err)
	}
	// A link, unlike a rename, never replaces a file another process made.
	switch err := os.Link(tmp.Name(), path); {
	case errors.Is(err, fs.ErrExist):
	case err != nil:
		return nil, false, fmt.Errorf("create the key file %s: %w", path, err)
	default:
		created = true
		syncDir(dir)
	}
	key, err = ReadKeyFile(path)
	return key, created, err
}

// ReadKeyFile returns the key in the file at path, which it never makes:
// an error matching fs.ErrNotExist when there is none. It is for the
// operator's commands, which read what the server sealed.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read the key file %s: %w", path, err)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("the key file %s holds no key: %w", path, err)
	}
	return key, nil
}

// syncDir makes a new name in dir durable. Not every system can sync a
// directory; the file itself is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
