// Command uishot opens a page of OpenClaw's Control UI in headless Chromium
// and saves what a user would see: a full-page screenshot and the page's
// text, shadow roots included (the Control UI is made of web components, so
// the DOM alone hides it). The real-host check (run.sh) uses it for the
// Memory settings page and checks the text.
//
//	uishot -url http://127.0.0.1:18789/settings/memory#token=… -png out.png -text out.txt -wait clawmem
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// deepText is the page's visible text, descending into shadow roots.
const deepText = `(() => {
  const out = [];
  const walk = (n) => {
    if (n.shadowRoot) walk(n.shadowRoot);
    for (const c of n.childNodes) {
      if (c.nodeType === Node.TEXT_NODE) out.push(c.textContent);
      else if (c.nodeType === Node.ELEMENT_NODE && !["SCRIPT", "STYLE"].includes(c.tagName)) walk(c);
    }
  };
  walk(document.body);
  return out.join(" ").replace(/\s+/g, " ").trim();
})()`

func main() {
	url := flag.String("url", "", "page to open")
	png := flag.String("png", "", "where the screenshot goes")
	txt := flag.String("text", "", "where the page's text goes")
	wait := flag.String("wait", "", "wait (up to -timeout) until the page's text contains any of these, comma-separated")
	timeout := flag.Duration("timeout", 60*time.Second, "longest wait for the page")
	flag.Parse()
	if err := run(*url, *png, *txt, *wait, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "uishot:", err)
		os.Exit(1)
	}
}

func run(url, png, txt, wait string, timeout time.Duration) error {
	if url == "" || png == "" || txt == "" {
		return errors.New("-url, -png and -text are required")
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancelTime()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return err
	}
	var text string
	deadline := time.Now().Add(timeout)
	for {
		if text, err = chromedp.Run(ctx, chromedp.Evaluate[string](deepText)); err != nil {
			return err
		}
		if wait == "" || containsAny(text, strings.Split(wait, ",")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last data to render
	if text, err = chromedp.Run(ctx, chromedp.Evaluate[string](deepText)); err != nil {
		return err
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		return err
	}
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		return err
	}
	return os.WriteFile(txt, []byte(text+"\n"), 0o644)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
