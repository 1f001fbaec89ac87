package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"personnel/resource"
	"personnel/seed"
	"personnel/server"
)

// firstDrawn records, in each page the tab loads, when the first element
// matching a selector appeared (performance.now(): milliseconds from the
// start of the navigation), for each selector the benchmark waits for.
const firstDrawn = `(() => {
	window.firstDrawn = {};
	const watch = {tree: "[role=treeitem]", table: ".list-pane tbody tr"};
	new MutationObserver(() => {
		for (const [k, sel] of Object.entries(watch)) {
			if (!(k in window.firstDrawn) && document.querySelector(sel)) window.firstDrawn[k] = performance.now();
		}
	}).observe(document, {childList: true, subtree: true});
})()`

// BenchmarkAdmin_FirstLevelAndFirstPageOf10000 loads the admin UI in
// Chromium over 10,000 records of the first hierarchical resource, and
// reports how long from the start of the navigation (a full page load:
// the UI's files revalidated, the OpenAPI document, who the user is, then
// the list) until the tree's first level (ms/tree) and the table's first
// page (ms/table) are drawn. "forest" is the seed command's data (40
// roots, six levels); "roots" is 10,000 roots, of which the tree shows
// the first 100 by name. Nothing here is asserted: BENCHMARKS.md keeps
// the figures.
func BenchmarkAdmin_FirstLevelAndFirstPageOf10000(b *testing.B) {
	r := treeRes(b)
	for _, shape := range []string{"forest", "roots"} {
		for _, backend := range backends(b) {
			b.Run(shape+"/"+backend.Name, func(b *testing.B) {
				needBrowser(b)
				s := newSite(b, backend)
				load := server.Loaders(s.db)[r.Name]
				ctx := context.Background()
				if shape == "forest" {
					if err := seed.Fill(ctx, load, seed.Options{Count: 10000}); err != nil {
						b.Fatal(err)
					}
				} else {
					recs := make([]resource.NewRecord, 10000)
					for i := range recs {
						recs[i] = resource.NewRecord{Code: fmt.Sprintf("R%05d", i), Name: fmt.Sprintf("Root %05d", (i*7919)%10000)}
					}
					if _, err := load.Load(ctx, recs); err != nil {
						b.Fatal(err)
					}
				}
				tb := s.open(b)
				tb.signIn(editorName)
				tb.run("watching what is drawn", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
					_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: firstDrawn})
					return err
				}))
				var tree, table float64
				b.ResetTimer()
				for range b.N {
					for view, total := range map[string]*float64{"tree": &tree, "table": &table} {
						tb.run("loading the "+view, chromedp.Navigate(fmt.Sprintf("%s/admin/?%s#/%s/%s", s.url, view, r.Path, view)))
						tb.waitFor("the "+view+" drawn", fmt.Sprintf(`window.firstDrawn && %q in window.firstDrawn`, view))
						*total += eval[float64](tb, fmt.Sprintf(`window.firstDrawn[%q]`, view))
					}
				}
				b.ReportMetric(tree/float64(b.N), "ms/tree")
				b.ReportMetric(table/float64(b.N), "ms/table")
			})
		}
	}
}
