// Package outfile checks the files a run will write before any load is
// sent, and writes a file whole or not at all.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Check reports why path could not be written, without creating anything:
// its folder is missing or not a folder, the path is a folder, or the
// folder or an existing file is not writable (permissions, a read-only
// file system). A nil error does not promise the write will succeed (the
// disk may fill); it finds the mistakes a user can fix before the run.
func Check(path string) error {
	st, fileErr := os.Stat(path)
	if fileErr == nil {
		if st.IsDir() {
			return fmt.Errorf("%s is a folder, not a file", path)
		}
		if err := writable(path); err != nil {
			return fmt.Errorf("cannot overwrite %s: %w", path, err)
		}
	} else if errors.Is(fileErr, fs.ErrNotExist) {
		fileErr = nil
	}
	// The folder's problem, if any, says more than the file's.
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the folder %s does not exist; create it first", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	if err := writable(dir); err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, err)
	}
	return fileErr
}

// Write writes data to path whole or not at all: to a temporary file in
// the same folder, then renamed over path, so that a reader never sees a
// part of it and a failed write leaves no file behind, nor spoils the one
// that was there.
func Write(path string, data []byte) (err error) {
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// createTemp creates a new file beside path, named after it. Not
// os.CreateTemp: its files are 0600, and the result should have the mode
// os.Create gives, 0644 less the umask.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf(".%s.%d.tmp", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("the folder %s no longer exists", filepath.Dir(path))
		case !errors.Is(err, fs.ErrExist):
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the temporary name means nothing to the user
			}
			return nil, fmt.Errorf("cannot create files in %s: %w", filepath.Dir(path), err)
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}
