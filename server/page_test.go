package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/scheduler"
)

// TestChatPageStreamsInHeadlessChromium opens the chat page in Debian's
// headless Chromium, sends a message, and sees the reply grow as the
// stream arrives (text before the reply is done) and finish; a screenshot
// goes to the test's output directory ($TEST_ARTIFACTS or a temp dir).
func TestChatPageStreamsInHeadlessChromium(t *testing.T) {
	chromium := testenv.LookPath(t, "chromium")
	ts := start(t, scheduler.Config{}, Options{})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(browserProfile(t)),
		// Chromium's start (until it prints its DevTools URL) took more than
		// chromedp's default 20 s three times on the 2-core CI machine while
		// other packages' tests ran beside it; the page checks below are
		// bound by the 90 s context.
		chromedp.WSURLReadTimeout(80 * time.Second),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	var partial, final, done string
	var shot []byte
	err := chromedp.Run(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible("#input", chromedp.ByID),
		chromedp.SetValue("#max", "200", chromedp.ByID),
		chromedp.SendKeys("#input", "Who made the light?", chromedp.ByID),
		chromedp.Click("#send", chromedp.ByID),
		// Some text is on the page while the reply is still streaming.
		chromedp.Poll(`(() => { const r = document.getElementById("reply-1"); return r && r.textContent.length > 0 ? [r.textContent, r.dataset.done || ""] : null })()`, &[]any{&partial, &done}, chromedp.WithPollingInterval(5*time.Millisecond)),
		chromedp.WaitVisible(`#reply-1[data-done]`, chromedp.ByQuery),
		chromedp.Text("#reply-1", &final, chromedp.ByID),
		chromedp.AttributeValue("#reply-1", "data-done", &done, nil, chromedp.ByID),
		chromedp.FullScreenshot(&shot, 90),
	)
	require.NoError(t, err)
	dir := os.Getenv("TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "chat-page.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s (%d bytes); first text seen %q; reply %q", path, len(shot), partial, final)
	require.Equal(t, "true", done, "the reply ended without an error")
	require.NotEmpty(t, final)
	require.Less(t, len(partial), len(final), "text was shown before the reply was complete")
}

// browserProfile is a user-data directory for Chromium, removed when the
// test ends. Not t.TempDir: Chromium's helper processes can still be
// writing into the profile for a moment after the browser exits, and
// TempDir's cleanup then fails the test ("directory not empty"), as it did
// under load in make test. The removal retries for up to 10 s and then only
// logs what is left.
func browserProfile(t *testing.T) string {
	dir, err := os.MkdirTemp("", "hipgo-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() {
		var err error
		for range 100 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("browser profile %s left behind: %v", dir, err)
	})
	return dir
}
