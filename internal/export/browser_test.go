package export

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"spbridge/internal/archive"
)

var screenshot = flag.String("screenshot", "", "write a screenshot of the Recorded page (desktop, light) to `FILE`, for the README")

// chromium finds a Chromium to drive: $SPBRIDGE_CHROMIUM, else chromium
// (Debian's package) or chromium-browser on the PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("SPBRIDGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium to open the page in: install the distribution's package (apt-get install chromium) or name one in $SPBRIDGE_CHROMIUM; the page's markup is still checked by TestGolden and TestHostile")
	return ""
}

// browsed is what a browser did and said while it showed a page.
type browsed struct {
	mu       sync.Mutex
	requests []string // every request's URL
	console  []string // console messages and log entries of level warning or error
	dialogs  []string // alert(), confirm(), prompt(): a script ran
}

func (b *browsed) add(list *[]string, s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*list = append(*list, s)
}

// TestBrowser opens exported pages in a real headless Chromium, at a
// phone's width (375 px) and a desktop's (1280 px), and checks what it
// shows (the items, the diffs, the embedded image decoded, the usage; the
// text is read from the document, since a turn out of view is not laid
// out), that nothing scrolls the page sideways, that it requested nothing
// but the page and its embedded images, logged no error or warning, and
// that no script of the conversation ran (the hostile conversation calls
// alert() every way it can).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	pages := map[string]string{}
	for name, src := range map[string]string{"Recorded": packages["Recorded"], "Hostile": "testdata/Hostile.silverpoint"} {
		p := filepath.Join(dir, name+".html")
		if err := os.WriteFile(p, exportPackage(t, src, HTML, Options{TurnUsage: func(id string) (TurnUsage, bool) {
			return TurnUsage{Usage: usageOf("1500", "40"), Cost: "0.0123"}, id == "00000001-0000-4000-8000-000000000005"
		}}), 0o600); err != nil {
			t.Fatal(err)
		}
		pages[name] = "file://" + p
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true))
	// A bound for a browser that hangs: the checks wait for its events.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx); err != nil {
		t.Skipf("Chromium at %s does not start: %v", exe, err)
	}

	for _, name := range []string{"Recorded", "Hostile"} {
		for _, width := range []int64{375, 1280} {
			t.Run(name+"/"+itoaw(width), func(t *testing.T) {
				tctx, cancelT := chromedp.NewContext(bctx)
				defer cancelT()
				var b browsed
				// Open the tab first, so that no event of its page is missed.
				if err := chromedp.Do(tctx); err != nil {
					t.Fatal(err)
				}
				dialogs := make(chan struct{}, 16)
				err := chromedp.Listen(tctx, func(ev any) {
					switch ev := ev.(type) {
					case *network.EventRequestWillBeSent:
						b.add(&b.requests, ev.Request.URL)
					case *runtime.EventConsoleAPICalled:
						b.add(&b.console, string(ev.Type)+": console")
					case *runtime.EventExceptionThrown:
						b.add(&b.console, "exception: "+ev.ExceptionDetails.Text)
					case *log.EventEntryAdded:
						if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
							b.add(&b.console, string(ev.Entry.Level)+": "+ev.Entry.Text)
						}
					case *page.EventJavascriptDialogOpening:
						b.add(&b.dialogs, ev.Message)
						select {
						case dialogs <- struct{}{}:
						default:
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				// A dialog would hold the page: dismiss each (the test fails
				// on it anyway).
				go func() {
					for range dialogs {
						chromedp.Call(tctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
					}
				}()
				defer close(dialogs)
				if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
					t.Fatal(err)
				}
				for _, enable := range []cdp.Command[cdp.Empty, cdp.Empty]{log.Enable, runtime.Enable} {
					if _, err := chromedp.Call(tctx, enable, cdp.Empty{}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := chromedp.Call(tctx, page.Enable, page.EnableParams{}); err != nil {
					t.Fatal(err)
				}
				if _, err := chromedp.Call(tctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
					Width: width, Height: 900, DeviceScaleFactor: 1, Mobile: width < 600}); err != nil {
					t.Fatal(err)
				}
				if err := chromedp.Do(tctx, chromedp.Navigate(pages[name]), chromedp.WaitReady(chromedp.CSS("footer.totals"))); err != nil {
					t.Fatal(err)
				}
				facts, err := chromedp.Run(tctx, chromedp.Evaluate[pageFacts](`(() => {
						const all = [...document.querySelectorAll('*')];
						return {
							ScrollWidth: document.documentElement.scrollWidth,
							InnerWidth: window.innerWidth,
							Text: document.body.textContent,
							Scripts: document.scripts.length,
							Handlers: all.filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
							Frames: document.querySelectorAll('iframe,object,embed,frame,base,form,link,meta[http-equiv=refresh]').length,
							Styles: document.querySelectorAll('style').length,
							StyledElems: document.querySelectorAll('[style]').length,
							BadLinks: [...document.querySelectorAll('a')].map(a => a.getAttribute('href')).filter(h => !/^(#turn-[0-9]+|https?:|mailto:)/.test(h || '')),
							BadImages: [...document.images].map(i => i.src).filter(s => !s.startsWith('data:image/')),
							Diffs: document.querySelectorAll('pre.diff').length,
							Adds: document.querySelectorAll('pre.diff .a').length,
							Dels: document.querySelectorAll('pre.diff .d').length,
							Images: document.images.length,
							ImagesDecoded: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
							Turns: document.querySelectorAll('section.turn').length,
						};
					})()`))
				if err != nil {
					t.Fatal(err)
				}
				// The page's own URL and its embedded images are its only
				// requests.
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, u := range b.requests {
					if u != pages[name] && !strings.HasPrefix(u, "data:image/") {
						t.Errorf("a request for %q", u)
					}
				}
				if len(b.console) > 0 {
					t.Errorf("the console said: %q", b.console)
				}
				if len(b.dialogs) > 0 {
					t.Errorf("a script of the conversation ran: %q", b.dialogs)
				}
				if facts.ScrollWidth > facts.InnerWidth {
					t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", facts.ScrollWidth, facts.InnerWidth)
				}
				if facts.Scripts+facts.Handlers+facts.Frames+facts.StyledElems > 0 || facts.Styles != 1 {
					t.Errorf("the page has %d scripts, %d elements with handlers, %d frames or links, %d style attributes, %d style elements",
						facts.Scripts, facts.Handlers, facts.Frames, facts.StyledElems, facts.Styles)
				}
				if len(facts.BadLinks)+len(facts.BadImages) > 0 {
					t.Errorf("links to %q, images from %q", facts.BadLinks, facts.BadImages)
				}
				switch name {
				case "Recorded":
					for _, want := range []string{"change beta to BETA in notes.txt", "Allowed always", "Denied", "Answer: Blue",
						"Codex compacted the conversation.", "The Codex CLI is not logged in", "Go release notes", "1,500 in · 40 out · $0.0123",
						"41,200 in · 2,310 out"} {
						if !strings.Contains(facts.Text, want) {
							t.Errorf("the page does not show %q", want)
						}
					}
					if facts.Turns != 14 || facts.Diffs < 4 || facts.Adds < 6 || facts.Dels < 4 {
						t.Errorf("%d turns, %d diffs (%d lines added, %d removed): want 14 turns and the recorded edits", facts.Turns, facts.Diffs, facts.Adds, facts.Dels)
					}
					if facts.Images != 2 || facts.ImagesDecoded != 2 {
						t.Errorf("%d images, %d decoded: want the user's one and the one Read returned, shown", facts.Images, facts.ImagesDecoded)
					}
					if *screenshot != "" && width == 1280 {
						shoot(t, tctx, *screenshot)
					}
				case "Hostile":
					for _, want := range []string{"<script>alert(1)</script>", "javascript:alert(3)", "[image: remote]", "more not shown on this page"} {
						if !strings.Contains(facts.Text, want) {
							t.Errorf("the page does not show %q as text", want)
						}
					}
					if facts.Images != 0 {
						t.Errorf("%d images: the one whose bytes are not a PNG, or a URL's, was shown", facts.Images)
					}
				}
			})
		}
	}
}

// pageFacts is what the test reads of a page in the browser.
type pageFacts struct {
	ScrollWidth, InnerWidth      int
	Text                         string
	Scripts, Handlers, Frames    int
	Styles, StyledElems          int
	BadLinks, BadImages          []string
	Diffs, Adds, Dels            int
	Images, ImagesDecoded, Turns int
}

// shoot writes a PNG of the page's top, 900 by 1100 px, for the README.
func shoot(t *testing.T, ctx context.Context, file string) {
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 900, Height: 1100, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	// Two frames, so that the turns in view are laid out.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(0))))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoaw(n int64) string {
	if n == 375 {
		return "phone"
	}
	return "desktop"
}

func usageOf(in, out string) archive.Usage {
	return archive.Usage{Input: json.Number(in), Output: json.Number(out)}
}
