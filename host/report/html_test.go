package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium runs Debian's Chromium headless on file with args, and returns
// what it printed on stdout.
func chromium(t *testing.T, file string, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	require.NoError(t, err, "the HTML report's test opens it in Chromium: run make deps")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+file)...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	require.NoError(t, cmd.Run(), "chromium: %s", errs.String())
	return out.Bytes()
}

// TestHTMLInChromium: the HTML report of an emulated run and of a
// hardware-shaped one, opened in headless Chromium: the page's DOM, as
// the browser built it, has a table per report table (with its rows), an
// SVG per plot, the emulated label only on the emulated run, and the
// screenshot is a drawn page.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	runs := []*Run{load1(t, repeatsA), load1(t, syntheticPath)}
	var reps []Report
	wantTables, wantPlots := 0, 0
	for _, r := range runs {
		rep := Build(r)
		reps = append(reps, rep)
		wantTables += len(rep.Tables)
		ps, err := Plots(r)
		require.NoError(t, err)
		wantPlots += len(ps)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(page, render(t, "html", reps...), 0o644))

	doc, err := html.Parse(bytes.NewReader(chromium(t, page, "--dump-dom")))
	require.NoError(t, err)
	count := map[string]int{}
	var emulated []string
	var runsSeen int
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			count[n.Data]++
			for _, a := range n.Attr {
				if a.Key == "class" && a.Val == "emulated" && n.FirstChild != nil {
					emulated = append(emulated, n.FirstChild.Data)
				}
				if a.Key == "class" && a.Val == "run" {
					runsSeen++
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.Equal(t, 2, runsSeen)
	assert.Equal(t, wantTables, count["table"], "a table per report table")
	assert.Equal(t, wantPlots, count["svg"], "an inline SVG per plot")
	assert.Equal(t, wantPlots, count["figure"])
	assert.Greater(t, count["tr"], wantTables*3, "the tables' rows")
	require.Len(t, emulated, 1, "the emulated run, not the hardware-shaped one, is labelled")
	assert.Contains(t, emulated[0], "EMULATED: these figures come from qemu-tcg")
	assert.Zero(t, count["script"], "no script")
	assert.Zero(t, count["link"], "nothing fetched")

	shot := filepath.Join(dir, "report.png")
	chromium(t, page, "--window-size=1280,2000", "--screenshot="+shot)
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	assert.Equal(t, 1280, b.Dx())
	assert.Equal(t, 2000, b.Dy())
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r+g+bl < 3*0x8000 {
				dark++
			}
		}
	}
	assert.Greater(t, dark, 1000, "the screenshot shows the page's text and tables, not a blank page")
	t.Logf("screenshot %s: %dx%d, %d dark samples", shot, b.Dx(), b.Dy(), dark)
}
