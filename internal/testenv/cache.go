package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// CacheFile returns the path of a file scripts/deps.sh puts under .cache/:
// the value of env when set (make test sets it), else rel under the module
// root's .cache. A missing file fails the test when env is set or host tools
// are required (CI), and skips it otherwise.
func CacheFile(t testing.TB, env, rel string) string {
	t.Helper()
	path := os.Getenv(env)
	explicit := path != ""
	if !explicit {
		root, err := moduleRoot()
		if err != nil {
			NeedHost(t, err)
			return ""
		}
		path = filepath.Join(root, ".cache", rel)
	}
	if _, err := os.Stat(path); err != nil {
		err = fmt.Errorf("%s (scripts/deps.sh fetches it; %s names another copy): %w", path, env, err)
		if explicit {
			t.Fatal(err)
		}
		NeedHost(t, err)
	}
	return path
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}
