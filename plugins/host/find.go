package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BinaryPrefix starts the file name of every plugin binary found by search:
// the plugin "mqtt" is hload-plugin-mqtt.
const BinaryPrefix = "hload-plugin-"

// PathEnv is the environment variable that lists folders to search for
// plugin binaries, separated as PATH is.
const PathEnv = "HLOAD_PLUGIN_PATH"

// localDir is searched after PathEnv's folders, relative to the working
// directory, as Terraform and Packer look beside the user.
const localDir = "plugins"

// Find returns the path of the plugin binary called name. A source, as
// written in the plugin block, is taken relative to configDir. Without
// one, Find searches the folders of HLOAD_PLUGIN_PATH, then ./plugins/,
// for an executable named hload-plugin-<name>; its error lists where it
// looked. lookupEnv may be nil for an empty environment.
func Find(name, source, configDir string, lookupEnv func(string) (string, bool)) (string, error) {
	if source != "" {
		path := source
		if !filepath.IsAbs(path) {
			path = filepath.Join(configDir, path)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("plugin %q: source %q (%s): %w", name, source, path, err)
		}
		return path, nil
	}
	file := BinaryPrefix + name
	var looked []string
	for _, dir := range searchDirs(lookupEnv) {
		path := filepath.Join(dir, file)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		looked = append(looked, path)
		if checkExecutable(path) == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("plugin %q: no executable %s found; looked in %s. Set source in the plugin block, or put the binary in a folder of %s or in ./%s/",
		name, file, strings.Join(looked, ", "), PathEnv, localDir)
}

// searchDirs lists the folders searched for plugin binaries, in order.
func searchDirs(lookupEnv func(string) (string, bool)) []string {
	var dirs []string
	if lookupEnv != nil {
		if v, ok := lookupEnv(PathEnv); ok {
			for _, d := range filepath.SplitList(v) {
				if d != "" {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return append(dirs, localDir)
}

// Found is a plugin binary found by List.
type Found struct {
	Name string // the plugin's name: the file name without BinaryPrefix
	Path string
	// Shadowed is set when an earlier folder holds a plugin of the same
	// name, which Find returns instead.
	Shadowed bool
}

// List returns the plugin binaries in the folders Find searches, in search
// order and by name within a folder. Missing folders are skipped.
func List(lookupEnv func(string) (string, bool)) ([]Found, error) {
	var (
		found []Found
		seen  = map[string]bool{}
		errs  []error
	)
	for _, dir := range searchDirs(lookupEnv) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), BinaryPrefix)
			if !ok || name == "" {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			if checkExecutable(path) != nil {
				continue
			}
			found = append(found, Found{Name: name, Path: path, Shadowed: seen[name]})
			seen[name] = true
		}
	}
	return found, errors.Join(errs...)
}
