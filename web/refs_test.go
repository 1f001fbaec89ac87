package web_test

// The admin UI's references (ref and refs fields) and a record's history.
// The reference tests run over every reference of every compiled resource;
// the shipped resources have none, so they skip here, and
// cmd/resourcegen's end-to-end test runs them against the README's
// employee and a hierarchical resource that refers to others and to
// itself.

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"personnel/config"
	"personnel/server"
)

// refField is a reference under test: the resource that has it, the
// field, and the resource it refers to.
type refField struct {
	r, to res
	e     config.ExtraField
}

// compiledRefs lists the references of type typ of the compiled
// resources; a test with none skips, saying where they run.
func compiledRefs(t *testing.T, typ string) []refField {
	t.Helper()
	var out []refField
	for _, d := range server.CompiledResources() {
		for _, e := range d.Extra {
			if e.Type == typ {
				out = append(out, refField{r: res{d}, to: resNamed(t, e.To), e: e})
			}
		}
	}
	if len(out) == 0 {
		t.Skipf("no compiled resource has a %s field; cmd/resourcegen's end-to-end test runs this with the README's employee", typ)
	}
	return out
}

// errorBeside is the CSS selector of the message beside a field.
func errorBeside(key string) string {
	return fmt.Sprintf(`.detail-pane [data-field=%q] .field-error`, key)
}

// code returns the code prefix+i, cut to fit r's codes.
func (r res) code(prefix string, i int) string {
	c := prefix + strconv.Itoa(i)
	if len(c) > r.Limits.Code {
		c = c[len(c)-r.Limits.Code:]
	}
	return c
}

// ids decodes a refs field's value as read through the API.
func ids(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func TestAdmin_ARefIsChosenWithThePickerSavedAsItsIdAndListedByName(t *testing.T) {
	fields := compiledRefs(t, config.TypeRef)
	forEachBackend(t, func(t *testing.T, s *site) {
		page := s.open(t)
		page.signIn(editorName)
		viewerPage := s.open(t)
		viewerPage.signIn(viewerName)
		for i, c := range fields {
			t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
				tb := page.on(t)
				gone := s.add(c.to, c.to.code("GONE", i), fmt.Sprintf("Gone %d", i), nil)
				pickedCode, pickedName := c.to.code("PICK", i), fmt.Sprintf("Picked %d", i)
				picked := s.add(c.to, pickedCode, pickedName, nil)
				id := s.add(c.r, c.r.code("REC", i), fmt.Sprintf("Referring %d", i), nil)

				tb.goTo(fmt.Sprintf("#/%s/table/%d", c.r.Path, id))
				tb.waitText(".detail-pane h2", fmt.Sprintf("Referring %d", i))

				// Chosen, then deleted by someone else before the save:
				// the server's message shows beside the picker.
				tb.pick(c.e.Name, c.to.code("GONE", i))
				tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, c.e.Name), fmt.Sprintf("Gone %d", i))
				s.mustJSON(s.call(http.MethodDelete, fmt.Sprintf("%s/%s/%d/", server.APIRoot, c.to.Path, gone), nil), http.StatusNoContent, nil)
				tb.click(button("Save"))
				tb.waitText(errorBeside(c.e.Name), fmt.Sprintf(`Invalid pk "%d" - object does not exist.`, gone))
				if invalid := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute("aria-invalid")`,
					js(fmt.Sprintf(`.detail-pane [data-field=%q] input[role=combobox]`, c.e.Name)))); invalid != "true" {
					t.Errorf("the picker's aria-invalid is %q", invalid)
				}

				tb.pick(c.e.Name, pickedCode)
				tb.click(button("Save"))
				tb.waitText(".detail-pane [role=status]", "Saved.")
				if got := s.record(c.r.Path, id)[c.e.Name]; got != float64(picked) {
					t.Fatalf("stored %s %v, want the id %d", c.e.Name, got, picked)
				}
				label := fmt.Sprintf("%s (%s)", pickedName, pickedCode)
				tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, c.e.Name), label)

				// The table shows the record referred to by name, asked
				// for with the page (?expand=), linked to it.
				tb.goTo("#/" + c.r.Path + "/table")
				tb.waitText(fmt.Sprintf(`.list-pane tr[data-id="%d"] td.ref a`, id), label)
				if !page.requestedWith(fmt.Sprintf("%s/%s/?", server.APIRoot, c.r.Path), "expand=") {
					t.Errorf("the table's list did not ask for ?expand=")
				}
				// A viewer reads it as text, by name.
				viewer := viewerPage.on(t)
				viewer.goTo(fmt.Sprintf("#/%s/table/%d", c.r.Path, id))
				viewer.waitText(".detail-pane dl dd", label)

				href := eval[string](tb, fmt.Sprintf(`[...document.querySelectorAll('.list-pane tr[data-id="%d"] td.ref a')].find((a) => a.textContent === %s).getAttribute("href")`, id, js(label)))
				if want := fmt.Sprintf("#/%s/table/%d", c.to.Path, picked); href != want {
					t.Errorf("the name links to %q, want %q", href, want)
				}

				if c.e.Required {
					if n := tb.count(fmt.Sprintf(`.detail-pane [data-field=%q] button`, c.e.Name)); n != 0 {
						t.Errorf("a required reference offers %d buttons to clear it", n)
					}
					return
				}
				tb.goTo(fmt.Sprintf("#/%s/table/%d", c.r.Path, id))
				tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, c.e.Name), label)
				tb.click(button("No " + strings.ToLower(humanize(c.e.Name))))
				tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] .picker-now`, c.e.Name), "none")
				tb.click(button("Save"))
				tb.waitText(".detail-pane [role=status]", "Saved.")
				if got := s.record(c.r.Path, id)[c.e.Name]; got != nil {
					t.Errorf("stored %s %v after clearing it, want null", c.e.Name, got)
				}
			})
		}
	})
}

func TestAdmin_RefsAddTwoRemoveOneAndListThemByName(t *testing.T) {
	fields := compiledRefs(t, config.TypeRefs)
	forEachBackend(t, func(t *testing.T, s *site) {
		page := s.open(t)
		page.signIn(editorName)
		for i, c := range fields {
			t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
				tb := page.on(t)
				firstCode, secondCode := c.to.code("FIRST", i), c.to.code("SECOND", i)
				first := s.add(c.to, firstCode, fmt.Sprintf("First %d", i), nil)
				second := s.add(c.to, secondCode, fmt.Sprintf("Second %d", i), nil)
				firstLabel, secondLabel := fmt.Sprintf("First %d (%s)", i, firstCode), fmt.Sprintf("Second %d (%s)", i, secondCode)
				id := s.add(c.r, c.r.code("MANY", i), fmt.Sprintf("Referring to many %d", i), nil)
				before := ids(s.record(c.r.Path, id)[c.e.Name]) // the target a required one needs
				chips := fmt.Sprintf(`.detail-pane [data-field=%q] .chip`, c.e.Name)

				tb.goTo(fmt.Sprintf("#/%s/table/%d", c.r.Path, id))
				tb.waitText(".detail-pane h2", fmt.Sprintf("Referring to many %d", i))
				tb.pick(c.e.Name, firstCode)
				tb.waitText(chips, firstLabel)
				tb.pick(c.e.Name, secondCode)
				tb.waitText(chips, secondLabel)
				if i == 0 {
					tb.checkAccessibility(t, "a record's pickers of references")
				}
				tb.click(button("Save"))
				tb.waitText(".detail-pane [role=status]", "Saved.")
				want := append(slices.Clone(before), first, second)
				slices.Sort(want)
				if got := ids(s.record(c.r.Path, id)[c.e.Name]); !slices.Equal(got, want) {
					t.Fatalf("stored %s %v, want %v", c.e.Name, got, want)
				}

				tb.waitText(chips, secondLabel)
				tb.click(fmt.Sprintf(`.detail-pane [data-field=%q] button[aria-label=%q]`, c.e.Name, "Remove "+firstLabel))
				tb.waitFor("the first chip gone", fmt.Sprintf(`![...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s))`, js(chips), js(firstLabel)))
				tb.click(button("Save"))
				tb.waitText(".detail-pane [role=status]", "Saved.")
				want = append(slices.Clone(before), second)
				slices.Sort(want)
				if got := ids(s.record(c.r.Path, id)[c.e.Name]); !slices.Equal(got, want) {
					t.Fatalf("stored %s %v after removing %d, want %v", c.e.Name, got, first, want)
				}

				tb.goTo("#/" + c.r.Path + "/table")
				cell := fmt.Sprintf(`.list-pane tr[data-id="%d"] td.ref`, id)
				tb.waitText(cell, secondLabel)
				if got := eval[bool](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s))`, js(cell), js(firstLabel))); got {
					t.Errorf("the table still shows %s", firstLabel)
				}
			})
		}
	})
}

// refsFiltered lists the references of the compiled resources that have
// the filter; a test with none skips, saying where they run.
func refsFiltered(t *testing.T, filter string) []refField {
	t.Helper()
	var out []refField
	for _, d := range server.CompiledResources() {
		for _, e := range d.Extra {
			if e.IsRef() && slices.Contains(e.Filters, filter) {
				out = append(out, refField{r: res{d}, to: resNamed(t, e.To), e: e})
			}
		}
	}
	if len(out) == 0 {
		t.Skipf("no compiled reference has a %s filter; cmd/resourcegen's end-to-end test runs this with the README's employee", filter)
	}
	return out
}

// refer adds a record of c's resource whose reference c refers to the
// record to (the list of it alone, for a refs field).
func (s *site) refer(c refField, code, name string, to int) {
	s.t.Helper()
	id := s.add(c.r, code, name, nil)
	var v any = to
	if c.e.Type == config.TypeRefs {
		v = []int{to}
	}
	s.mustJSON(s.call(http.MethodPatch, fmt.Sprintf("%s/%s/%d/", server.APIRoot, c.r.Path, id), map[string]any{c.e.Name: v}), http.StatusOK, nil)
}

func TestAdmin_AReferenceFilterIsARecordChosenByNameAndFiltersByItsId(t *testing.T) {
	fields := refsFiltered(t, config.FilterExact)
	forEachBackend(t, func(t *testing.T, s *site) {
		page := s.open(t)
		page.signIn(editorName)
		for i, c := range fields {
			t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
				tb := page.on(t)
				wantedCode, otherCode := c.to.code("WANTED", i), c.to.code("OTHER", i)
				wanted := s.add(c.to, wantedCode, fmt.Sprintf("Wanted %d", i), nil)
				other := s.add(c.to, otherCode, fmt.Sprintf("Other %d", i), nil)
				inName, outName := fmt.Sprintf("Filtered in %d", i), fmt.Sprintf("Filtered out %d", i)
				s.refer(c, c.r.code("FIN", i), inName, wanted)
				s.refer(c, c.r.code("FOUT", i), outName, other)

				// Read afresh: the table may be this one already, with an
				// earlier subtest's filter, and the page keeps its state.
				tb.goTo("#/" + c.r.Path + "/table")
				tb.run("reloading the page", chromedp.Reload())
				tb.waitText(".list-pane td", outName)
				filter := fmt.Sprintf(`.list-pane [data-field=%q]:has([data-param=%q])`, c.e.Name, c.e.Name)
				tb.do(fmt.Sprintf(`document.querySelector(%s).closest("details").open = true`, js(filter)))
				tb.typeInto(filter+" input[role=combobox]", wantedCode)
				tb.waitText(filter+" [role=option]", wantedCode)
				tb.click(fmt.Sprintf(`//*[contains(@class, 'list-pane')]//*[@data-field=%s][.//*[@data-param=%s]]//*[@role='option'][contains(., %s)]`,
					xpathString(c.e.Name), xpathString(c.e.Name), xpathString(wantedCode)))
				tb.waitText(filter+" .picker-now", fmt.Sprintf("Wanted %d (%s)", i, wantedCode))
				gone := fmt.Sprintf(`![...document.querySelectorAll(".list-pane td")].some((td) => td.textContent === %s)`, js(outName))
				tb.waitFor("the other record filtered out", gone)
				tb.waitText(".list-pane td", inName)
				if !page.requestedWith(fmt.Sprintf("%s/%s/?", server.APIRoot, c.r.Path), fmt.Sprintf("%s=%d", c.e.Name, wanted)) {
					t.Errorf("the table did not ask for %s=%d", c.e.Name, wanted)
				}
				if i == 0 {
					tb.checkAccessibility(t, "a reference's filter")
				}

				// Kept as the id while the page is open, and named again
				// when the table is drawn anew.
				away := awayFrom(c.r)
				tb.goTo("#/" + away.Path + "/table")
				tb.waitFor("the other resource's page", fmt.Sprintf(`document.querySelector("main h1").textContent === %s`, js(away.title())))
				tb.goTo("#/" + c.r.Path + "/table")
				tb.waitText(filter+" .picker-now", fmt.Sprintf("Wanted %d (%s)", i, wantedCode))
				tb.waitFor("the other record still filtered out", gone)
				tb.waitText(".list-pane td", inName)

				tb.click(button("Any " + strings.ToLower(humanize(c.e.Name))))
				tb.waitText(filter+" .picker-now", "any")
				tb.waitText(".list-pane td", outName)
			})
		}
	})
}

// awayFrom returns a compiled resource other than r.
func awayFrom(r res) res {
	for _, d := range server.CompiledResources() {
		if d.Path != r.Path {
			return res{d}
		}
	}
	return r
}

func TestAdmin_AReferencesOneOfFilterTakesSeveralRecordsAsChips(t *testing.T) {
	fields := refsFiltered(t, config.FilterIn)
	forEachBackend(t, func(t *testing.T, s *site) {
		page := s.open(t)
		page.signIn(editorName)
		for i, c := range fields {
			t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
				tb := page.on(t)
				names := map[string]string{} // target code: the name of the record referring to it
				ids := map[string]int{}
				for _, prefix := range []string{"ONE", "TWO", "NOT"} {
					code := c.to.code(prefix, i)
					ids[code] = s.add(c.to, code, fmt.Sprintf("Target %s %d", prefix, i), nil)
					names[code] = fmt.Sprintf("Refers to %s %d", prefix, i)
					s.refer(c, c.r.code("R"+prefix, i), names[code], ids[code])
				}
				one, two, not := c.to.code("ONE", i), c.to.code("TWO", i), c.to.code("NOT", i)
				shown := func(name string) string {
					return fmt.Sprintf(`[...document.querySelectorAll(".list-pane td")].some((td) => td.textContent === %s)`, js(name))
				}

				tb.goTo("#/" + c.r.Path + "/table")
				tb.run("reloading the page", chromedp.Reload())
				tb.waitFor("every record", shown(names[not]))
				param := c.e.Name + "_in"
				filter := fmt.Sprintf(`.list-pane [data-field=%q]:has([data-param=%q])`, c.e.Name, param)
				tb.do(fmt.Sprintf(`document.querySelector(%s).closest("details").open = true`, js(filter)))
				for _, code := range []string{one, two} {
					tb.typeInto(filter+" input[role=combobox]", code)
					tb.waitText(filter+" [role=option]", code)
					tb.click(fmt.Sprintf(`//*[contains(@class, 'list-pane')]//*[@data-field=%s][.//*[@data-param=%s]]//*[@role='option'][contains(., %s)]`,
						xpathString(c.e.Name), xpathString(param), xpathString(code)))
					tb.waitText(filter+" .chip", code)
				}
				tb.waitFor("only the two chosen", "!"+shown(names[not])+" && "+shown(names[one])+" && "+shown(names[two]))
				lo, hi := min(ids[one], ids[two]), max(ids[one], ids[two])
				if !page.requestedWith(fmt.Sprintf("%s/%s/?", server.APIRoot, c.r.Path), fmt.Sprintf("%s=%d%%2C%d", param, lo, hi)) {
					t.Errorf("the table did not ask for %s=%d,%d", param, lo, hi)
				}

				tb.click(fmt.Sprintf(`%s .chip[data-id="%d"] button`, filter, ids[one]))
				tb.waitFor("only the second", "!"+shown(names[one])+" && "+shown(names[two]))
			})
		}
	})
}

// requestedWith reports whether the page has asked for path with a query
// that contains part.
func (tb *tab) requestedWith(path, part string) bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, u := range tb.urls {
		if strings.HasPrefix(u, tb.site.url+path) && strings.Contains(u, part) {
			return true
		}
	}
	return false
}

// historyRows returns the rows of the record pane's history as text:
// when, who, action, changes.
func (tb *tab) historyRows() [][]string {
	tb.t.Helper()
	return eval[[][]string](tb, `[...document.querySelectorAll(".detail-pane .history tbody tr")].map((tr) => [...tr.cells].map((td) => td.textContent))`)
}

func TestAdmin_ARecordsHistoryListsWhoChangedWhatAndWhen(t *testing.T) {
	r := treeRes(t)
	forEachBackend(t, func(t *testing.T, s *site) {
		id := s.add(r, "HIST", "Before", nil)
		s.mustJSON(s.call(http.MethodPatch, fmt.Sprintf("%s/%s/%d/", server.APIRoot, r.Path, id), map[string]any{r.Fields.Name: "After"}), http.StatusOK, nil)

		tb := s.open(t)
		tb.signIn(editorName)
		tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, id))
		tb.waitText(".detail-pane h2", "After")
		if tb.requested(fmt.Sprintf("%s/%s/%d/history/", server.APIRoot, r.Path, id)) {
			t.Errorf("the history was read before it was opened")
		}
		tb.click(`//summary[normalize-space()='History']`)
		tb.waitText(".detail-pane .history [role=status]", "2 changes")
		rows := tb.historyRows()
		name := humanize(r.Fields.Name)
		if len(rows) != 2 {
			t.Fatalf("history rows %q, want 2", rows)
		}
		if rows[0][1] != editorName || rows[0][2] != "update" || rows[0][3] != name+": Before → After" {
			t.Errorf("the newest entry is %q, want %s's update of %s: Before → After", rows[0], editorName, name)
		}
		if rows[1][1] != editorName || rows[1][2] != "create" || !strings.Contains(rows[1][3], humanize(r.Fields.Code)+": HIST") {
			t.Errorf("the oldest entry is %q, want %s's create with the code", rows[1], editorName)
		}
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`).MatchString(rows[0][0]) {
			t.Errorf("the time reads %q", rows[0][0])
		}
		tb.checkAccessibility(t, "a record's history")

		// A change made here shows at once: the history stays open.
		tb.typeInto(field(r.Fields.Name), "Third")
		tb.click(button("Save"))
		tb.waitText(".detail-pane [role=status]", "Saved.")
		tb.waitText(".detail-pane .history [role=status]", "3 changes")
		if rows := tb.historyRows(); len(rows) != 3 || rows[0][3] != name+": After → Third" {
			t.Errorf("after saving, the history is %q", rows)
		}
	})
}

func TestAdmin_TheHistoryIsForEditorsUnlessViewersMayReadTheAuditTrail(t *testing.T) {
	r := treeRes(t)
	for _, allowed := range []bool{false, true} {
		t.Run("audit_viewers="+strconv.FormatBool(allowed), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s *site) {
				id := s.add(r, "SEEN", "Seen", nil)
				tb := s.open(t)
				tb.signIn(viewerName)
				tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, id))
				tb.waitText(".detail-pane h2", "Seen")
				tb.click(`//summary[normalize-space()='History']`)
				if allowed {
					tb.waitText(".detail-pane .history [role=status]", "1 change")
					return
				}
				tb.waitText(".detail-pane .history [role=alert]", "Only editors may read the audit trail")
			}, siteOption{config: func(c *config.Config) { c.AuditViewers = allowed }})
		})
	}
}
